#!/usr/bin/env python3
"""Builds STOL as one Linux wheel that installs without root (``make wheel``).

``pip install stol-VERSION-py3-none-manylinux_X_Y_x86_64.whl`` into a virtual
environment puts, as ruff or uv ship theirs:

- ``bin/``: ``stol-client`` and the four daemons (the Swift runtime linked in,
  ``--static-swift-stdlib``), so that ``stol-client serve`` finds the daemons beside it;
- ``lib/stol/``: the shared libraries they need that a default Debian 12 or Ubuntu
  LTS system lacks (SQLite, libsodium, OpenSSL's libcrypto, mimalloc), found through
  each binary's ``RUNPATH=$ORIGIN/../lib/stol`` (patchelf);
- ``share/stol/bundled.sqlite``: the bundled database, ``stol-client serve``'s default;
- ``stol/``: the Python package, with a pure-Python copy of the protobuf runtime
  (``stol/_vendor``, from Debian's python3-protobuf, BSD-3-Clause) that it uses only
  when no protobuf is installed, so the wheel declares no dependency and installs
  with ``--no-index``.

A wheel is a zip file with a ``.dist-info`` directory (PEP 427, PEP 491): written
here with the standard library, so the build needs neither setuptools nor network.

    build_wheel.py --bin-dir DIR --database FILE --out DIR [--python-dir clients/python]
"""

import argparse
import base64
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

DAEMONS = ["stol-taxonomyd", "stol-favoritesd", "stol-importd", "stol-verifyd"]
EXECUTABLES = ["stol-client"] + DAEMONS

#: Libraries every Debian 12 and Ubuntu LTS system has (glibc, the C++ runtime, zlib,
#: and libsystemd0 with its own dependencies and libseccomp2, which apt itself needs):
#: linked from the system. Anything else a binary needs is copied into the wheel.
SYSTEM_LIBRARIES = {
    "linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
    "librt.so.1", "libstdc++.so.6", "libgcc_s.so.1", "libz.so.1",
    "libsystemd.so.0", "libcap.so.2", "libgcrypt.so.20", "libgpg-error.so.0", "liblzma.so.5", "libzstd.so.1",
    "liblz4.so.1", "libseccomp.so.2",
}

#: Debian's python3-protobuf, the pure-Python part of which is bundled.
PROTOBUF_SOURCE = "/usr/lib/python3/dist-packages/google/protobuf"
PROTOBUF_COPYRIGHT = "/usr/share/doc/python3-protobuf/copyright"


def run(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def needed_libraries(binary: str) -> dict:
    """soname -> resolved path of every library ``binary`` loads (``ldd``, transitively)."""
    found = {}
    for line in run("ldd", binary).splitlines():
        match = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
        if match:
            if match.group(2) == "not":
                sys.exit("build_wheel: %s needs %s, which is not installed" % (binary, match.group(1)))
            found[match.group(1)] = match.group(2)
    return found


def glibc_tag() -> str:
    """The manylinux tag of this build machine's glibc (the binaries need at least it)."""
    name, version = platform.libc_ver()
    if name != "glibc":
        sys.exit("build_wheel: not a glibc system (%s)" % name)
    major, minor = version.split(".")[:2]
    return "manylinux_%s_%s_%s" % (major, minor, platform.machine())


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def version_of(client: str) -> str:
    """The release's version, as ``stol-client --version`` reports it."""
    words = run(client, "--version").split()
    if not words:
        sys.exit("build_wheel: stol-client --version printed nothing")
    return words[-1]


def stage(args, root: str, version: str) -> None:
    """Lays the wheel's files out under ``root`` (its paths inside the archive)."""
    data = os.path.join(root, "stol-%s.data" % version)
    scripts = os.path.join(data, "scripts")
    libraries = os.path.join(data, "data", "lib", "stol")
    share = os.path.join(data, "data", "share", "stol")
    for directory in (scripts, libraries, share):
        os.makedirs(directory)
    bundled = {}
    for name in EXECUTABLES:
        source = os.path.join(args.bin_dir, name)
        if not os.access(source, os.X_OK):
            sys.exit("build_wheel: %s is missing (make build)" % source)
        target = os.path.join(scripts, name)
        shutil.copy2(source, target)
        os.chmod(target, 0o755)
        run("strip", "--strip-unneeded", target)
        for soname, path in needed_libraries(source).items():
            if soname not in SYSTEM_LIBRARIES:
                bundled[soname] = path
        # The libraries copied below are found beside the environment's bin/.
        run("patchelf", "--set-rpath", "$ORIGIN/../lib/stol", target)
    for soname, path in sorted(bundled.items()):
        target = os.path.join(libraries, soname)
        shutil.copy2(os.path.realpath(path), target)
        os.chmod(target, 0o644)
        run("patchelf", "--set-rpath", "$ORIGIN", target)
    shutil.copy2(args.database, os.path.join(share, "bundled.sqlite"))

    package = os.path.join(args.python_dir, "stol")
    shutil.copytree(package, os.path.join(root, "stol"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_vendor"))
    vendor = os.path.join(root, "stol", "_vendor", "google", "protobuf")
    if not os.path.isdir(PROTOBUF_SOURCE):
        sys.exit("build_wheel: %s is missing (apt-get install python3-protobuf)" % PROTOBUF_SOURCE)
    # The pure-Python runtime only: no compiled extension (it would tie the wheel to one Python).
    shutil.copytree(PROTOBUF_SOURCE, vendor,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "pyext", "cpp", "compiler"))
    with open(os.path.join(root, "stol", "_vendor", "google", "__init__.py"), "w") as init:
        init.write("# A namespace for the bundled protobuf runtime (stol/__init__.py adds it only when none is installed).\n")
    if os.path.exists(PROTOBUF_COPYRIGHT):
        shutil.copy2(PROTOBUF_COPYRIGHT, os.path.join(vendor, "COPYRIGHT"))


def metadata(version: str, readme: str) -> str:
    return ("Metadata-Version: 2.1\nName: stol\nVersion: %s\n"
            "Summary: STOL, the tree of life as a service: the client, the daemons and the Python package, "
            "for one user without root (stol-client serve)\n"
            "Requires-Python: >=3.9\nProvides-Extra: pandas\nRequires-Dist: pandas; extra == \"pandas\"\n"
            "Classifier: Operating System :: POSIX :: Linux\n"
            "Classifier: Topic :: Scientific/Engineering :: Bio-Informatics\n"
            "Description-Content-Type: text/markdown\n\n%s" % (version, readme))


def write_wheel(root: str, out: str, version: str, tag: str, readme: str) -> str:
    dist_info = "stol-%s.dist-info" % version
    os.makedirs(os.path.join(root, dist_info))
    with open(os.path.join(root, dist_info, "METADATA"), "w") as handle:
        handle.write(metadata(version, readme))
    with open(os.path.join(root, dist_info, "WHEEL"), "w") as handle:
        handle.write("Wheel-Version: 1.0\nGenerator: stol build_wheel.py\nRoot-Is-Purelib: false\nTag: py3-none-%s\n" % tag)
    path = os.path.join(out, "stol-%s-py3-none-%s.whl" % (version, tag))
    records = []
    files = []
    for directory, _, names in os.walk(root):
        for name in names:
            full = os.path.join(directory, name)
            files.append((os.path.relpath(full, root), full))
    # dist-info last, as PEP 427 recommends; RECORD lists itself without a hash.
    files.sort(key=lambda item: (item[0].startswith(dist_info), item[0]))
    os.makedirs(out, exist_ok=True)
    temporary = path + ".part"
    with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for relative, full in files:
            with open(full, "rb") as handle:
                data = handle.read()
            info = zipfile.ZipInfo(relative, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100755 if os.access(full, os.X_OK) else 0o100644) << 16
            archive.writestr(info, data)
            records.append("%s,%s,%d" % (relative, record_hash(data), len(data)))
        records.append("%s/RECORD,," % dist_info)
        info = zipfile.ZipInfo("%s/RECORD" % dist_info, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = 0o100644 << 16
        archive.writestr(info, "\n".join(records) + "\n")
    os.replace(temporary, path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", required=True, help="the release build's binaries (make build)")
    parser.add_argument("--database", required=True, help="the bundled database (make db)")
    parser.add_argument("--out", required=True, help="where the wheel is written")
    parser.add_argument("--python-dir", default=os.path.join(os.path.dirname(__file__), "..", "clients", "python"))
    args = parser.parse_args()
    for tool in ("patchelf", "strip", "ldd"):
        if shutil.which(tool) is None:
            sys.exit("build_wheel: %s is missing (make deps installs it)" % tool)
    version = version_of(os.path.join(args.bin_dir, "stol-client"))
    with open(os.path.join(args.python_dir, "README.md")) as handle:
        readme = handle.read()
    root = tempfile.mkdtemp(prefix="stol-wheel.")
    try:
        stage(args, root, version)
        path = write_wheel(root, args.out, version, glibc_tag(), readme)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("wheel: %s (%.1f MiB)" % (path, os.path.getsize(path) / 1048576))


if __name__ == "__main__":
    main()
