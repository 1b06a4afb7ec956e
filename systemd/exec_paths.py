#!/usr/bin/env python3
"""Writes each daemon unit's `exec-paths.conf` drop-in: the shared libraries its
daemon loads, the only files besides the daemon itself that its unit mounts
executable (`NoExecPaths=/` in the unit takes execution away everywhere else).

    systemd/exec_paths.py --root DESTDIR --libexec /usr/libexec/stol --unitdir /usr/lib/systemd/system

The libraries are what the dynamic loader resolves for the installed executable
(`ldd`), named by the path the loader opens: a library's soname link, so that a
library's update (a new file behind the same soname) keeps working; systemd
follows the link when it sets up the mount. A library the loader finds outside
the system's directories (a development toolchain) is named by its copy beside
the executable when there is one (the boot test stages it there, with the Swift
toolchain hidden). Run again after such copies are added.
"""
import argparse
import os
import re
import subprocess
import sys

# Daemon executable → the unit that runs it.
UNITS = {
    "stol-taxonomyd": "stol-taxonomyd.service",
    "stol-favoritesd": "stol-favoritesd.service",
    "stol-importd": "stol-importd.service",
    "stol-verifyd": "stol-verifyd@.service",
}
SYSTEM_DIRECTORIES = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")
LDD_LINE = re.compile(r"^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)$")


def libraries(executable):
    """The absolute paths the loader resolves for `executable`, in ldd's order."""
    try:
        output = subprocess.run(["ldd", executable], check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as error:
        if "not a dynamic executable" in error.stdout + error.stderr:
            return []
        raise SystemExit(f"exec_paths: ldd {executable} failed: {error.stderr.strip()}")
    found = []
    for line in output.splitlines():
        if "=> not found" in line:
            raise SystemExit(f"exec_paths: {executable} needs a library the loader cannot find: {line.strip()}")
        match = LDD_LINE.match(line)
        if match:
            found.append(match.group(1))
    return found


def installed_path(path, root, libexec):
    """Where the unit's processes find `path` once installed."""
    if root != "/" and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")):]
    if path.startswith(SYSTEM_DIRECTORIES):
        return path
    beside = os.path.join(root + libexec, os.path.basename(path))
    return os.path.join(libexec, os.path.basename(path)) if os.path.exists(beside) else path


def drop_in(daemon, paths, libexec):
    return "\n".join([
        f"# The shared libraries {daemon} loads, written by `make install` (systemd/exec_paths.py)",
        "# from the loader's view of the installed executable: with the daemon itself",
        f"# ({libexec}/{daemon}, in the unit) the only files mounted executable.",
        "[Service]",
        "ExecPaths=" + " ".join(paths),
        "",
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="/", help="the install root (DESTDIR), default /")
    parser.add_argument("--libexec", required=True, help="where the daemons are installed, e.g. /usr/libexec/stol")
    parser.add_argument("--unitdir", required=True, help="where the units are installed, e.g. /usr/lib/systemd/system")
    arguments = parser.parse_args()
    root = arguments.root or "/"
    for daemon, unit in UNITS.items():
        executable = os.path.join(root + arguments.libexec, daemon)
        if not os.path.exists(executable):
            sys.exit(f"exec_paths: {executable} is not installed")
        paths = []
        for library in libraries(executable):
            path = installed_path(library, root, arguments.libexec)
            if path not in paths:
                paths.append(path)
        directory = os.path.join(root + arguments.unitdir, unit + ".d")
        os.makedirs(directory, exist_ok=True)
        target = os.path.join(directory, "exec-paths.conf")
        with open(target, "w") as file:
            file.write(drop_in(daemon, paths, arguments.libexec))
        os.chmod(target, 0o644)


if __name__ == "__main__":
    main()
