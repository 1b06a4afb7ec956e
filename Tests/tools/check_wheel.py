#!/usr/bin/env python3
"""The wheel (``make wheel``) as a user without root uses it, on a machine where no
system service runs for them (``make test-wheel``, part of ``make test``):

1. installed with ``pip install --no-index`` into a fresh virtual environment, as
   ``nobody`` (uid 65534) when run as root, with an empty environment but ``HOME``
   and ``PATH`` and no ``XDG_RUNTIME_DIR`` (a Slurm job, a container);
2. every installed binary's libraries resolve, each either to the wheel's own
   ``lib/stol`` or to a library every Debian 12 and Ubuntu LTS system has
   (``packaging/build_wheel.py``'s ``SYSTEM_LIBRARIES``: one list for both);
3. ``stol-client serve --detach`` starts a private stack on the wheel's bundled
   database (no ``--database``), under ``/tmp/stol-UID``;
4. a lineage batch answers from the CLI, and from Python in the same environment
   (through the bundled protobuf runtime: the venv has no other);
5. ``stol-client status`` names the private stack, ``serve --stop`` stops it and
   leaves no daemon running.

Exits 1 with what failed; prints what held.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "packaging"))
from build_wheel import EXECUTABLES, SYSTEM_LIBRARIES  # noqa: E402

USER = 65534
failures = []


def check(condition: bool, what: str) -> None:
    if not condition:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", required=True)
    parser.add_argument("--database", required=True, help="the bundled database the wheel was built with")
    args = parser.parse_args()
    as_root = os.getuid() == 0
    uid = USER if as_root else os.getuid()
    root = tempfile.mkdtemp(prefix="stol-wheel-test.")
    os.chmod(root, 0o755)
    home = os.path.join(root, "home")
    os.mkdir(home, 0o700)
    wheel = os.path.join(root, os.path.basename(args.wheel))
    shutil.copy(args.wheel, wheel)
    os.chmod(wheel, 0o644)
    if as_root:
        os.chown(home, USER, USER)
    venv = os.path.join(home, "venv")
    environment = {"HOME": home, "PATH": "%s/bin:/usr/bin:/bin" % venv, "LANG": "C.UTF-8"}

    def run(*command, stdin=None, check_status=True):
        prefix = ["setpriv", "--reuid=%d" % USER, "--regid=%d" % USER, "--clear-groups"] if as_root else []
        result = subprocess.run(prefix + list(command), env=environment, input=stdin, capture_output=True, text=True,
                                timeout=300, cwd=home)
        if check_status and result.returncode != 0:
            raise SystemExit("check_wheel: %s exited %d:\n%s%s" % (" ".join(command), result.returncode, result.stdout,
                                                                  result.stderr))
        return result

    try:
        # 1. Installed as the user, from the file alone.
        run("/usr/bin/python3", "-m", "venv", venv)
        run(venv + "/bin/pip", "install", "--no-index", "--disable-pip-version-check", "-q", wheel)
        for name in EXECUTABLES:
            check(os.access(os.path.join(venv, "bin", name), os.X_OK), "%s is not in the venv's bin/" % name)
        check(os.path.isfile(os.path.join(venv, "share", "stol", "bundled.sqlite")), "no share/stol/bundled.sqlite")

        # 2. Every library resolves, to the wheel's own or to a system library of every target.
        own = os.path.realpath(os.path.join(venv, "lib", "stol"))
        bundled = 0
        for name in EXECUTABLES:
            listing = run("ldd", os.path.join(venv, "bin", name)).stdout
            for line in listing.splitlines():
                match = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
                if not match:
                    continue
                soname, path = match.groups()
                check(path != "not", "%s: %s not found" % (name, soname))
                if os.path.realpath(os.path.dirname(path)) == own:
                    bundled += 1
                else:
                    check(soname in SYSTEM_LIBRARIES, "%s: %s comes from the system (%s), which a default "
                          "Debian 12 or Ubuntu LTS lacks" % (name, soname, path))

        # 3. A private stack on the bundled database, with no XDG_RUNTIME_DIR.
        started = run("stol-client", "serve", "--detach")
        runtime = "/tmp/stol-%d" % uid
        check(runtime in started.stdout, "serve --detach did not say its sockets are in %s: %s" % (runtime, started.stdout))
        check(os.path.realpath(os.path.join(venv, "share", "stol", "bundled.sqlite")) in started.stdout,
              "serve did not default to the wheel's bundled database: %s" % started.stdout)

        # 4. A lineage batch from the CLI, and from Python.
        lineage = run("stol-client", "lineage", "--no-header", stdin="9606\n9689\n").stdout
        check("Homo sapiens" in lineage and "Panthera leo" in lineage, "the CLI's lineages: %r" % lineage)
        python = run(venv + "/bin/python", "-c",
                     "import stol, google.protobuf as p; t = stol.Taxonomy(); "
                     "print(p.__file__); print(t.path); print([str(l) for l in t.lineage([9606, 9689])])").stdout
        check("stol/_vendor/google/protobuf" in python, "Python did not use the bundled protobuf runtime: %s" % python)
        check(runtime + "/taxonomy.sock" in python, "Python did not find the private stack: %s" % python)
        check("Homo sapiens" in python and "Panthera leo" in python, "Python's lineages: %s" % python)

        # 5. Which service answered, and the stop.
        status = run("stol-client", "status").stdout
        check("your private stack at " + runtime in status, "status does not name the private stack: %s" % status)
        stopped = run("stol-client", "serve", "--stop").stdout
        check("stopped your private stack" in stopped, "serve --stop: %s" % stopped)
        left = subprocess.run(["pgrep", "-u", str(uid), "-f", venv + "/bin/stol-"], capture_output=True, text=True)
        check(left.stdout.strip() == "", "processes left after the stop: %s" % left.stdout)
        after = run("stol-client", "search", "lion", check_status=False)
        check(after.returncode == 5, "after the stop the client still answered (exit %d)" % after.returncode)
    finally:
        run("stol-client", "serve", "--stop", check_status=False) if os.path.exists(venv + "/bin/stol-client") else None
        shutil.rmtree(root, ignore_errors=True)
        if as_root:
            shutil.rmtree("/tmp/stol-%d" % uid, ignore_errors=True)  # nobody's, made by this test

    if failures:
        print("check_wheel: %d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("check_wheel: %s installs as uid %d without root (%d bundled libraries); a private stack on its bundled "
          "database answered the CLI and Python, and stopped" % (os.path.basename(args.wheel), uid, bundled))
    return 0


if __name__ == "__main__":
    sys.exit(main())
