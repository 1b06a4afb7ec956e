"""A real STOL stack for the tests: ``systemd/stack.sh`` with temporary runtime and
state directories, the built binaries and the development database.

Nothing is built here. The binaries are taken from ``$STOL_BIN_DIR``, else
``.build/x86_64-unknown-linux-gnu/release``, else ``.../debug``; the database from
``$STOL_TEST_DATABASE``, else ``.build-generated/curated.sqlite``, else
``out/bundled.sqlite``. Without them the tests that need daemons fail
(:class:`StackUnavailable`), saying what to build: `make test` builds both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)                      # clients/python
REPOSITORY = os.path.dirname(os.path.dirname(PACKAGE_ROOT))  # the checkout
DAEMONS = ("stol-taxonomyd", "stol-favoritesd", "stol-importd", "stol-verifyd", "stol-client")

# The package under test is the one in this checkout, installed or not.
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)


class StackUnavailable(RuntimeError):
    """The binaries or the database a stack needs are not there: the tests that need it fail."""


def require_protobuf() -> None:
    """Fails when the protobuf runtime is missing (the package cannot work without it)."""
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        raise ImportError("google.protobuf is not installed for %s: apt-get install python3-protobuf (make deps) "
                          "and run the tests with /usr/bin/python3, or pip install protobuf" % sys.executable)


require_protobuf()


def binaries() -> str:
    """The directory of the built binaries, or StackUnavailable."""
    candidates = [os.environ.get("STOL_BIN_DIR", "")] + [
        os.path.join(REPOSITORY, ".build", "x86_64-unknown-linux-gnu", kind) for kind in ("release", "debug")]
    for directory in candidates:
        if directory and all(os.access(os.path.join(directory, name), os.X_OK) for name in DAEMONS):
            return directory
    raise StackUnavailable("the STOL binaries are not built (swift build -c release); looked in %s"
                            % ", ".join(c for c in candidates if c))


def database() -> str:
    """The taxonomy database the stack serves, or StackUnavailable."""
    candidates = [os.environ.get("STOL_TEST_DATABASE", ""),
                  os.path.join(REPOSITORY, ".build-generated", "curated.sqlite"),
                  os.path.join(REPOSITORY, "out", "bundled.sqlite")]
    for path in candidates:
        if path and os.path.isfile(path):
            return path
    raise StackUnavailable("no taxonomy database (make db); looked for %s" % ", ".join(c for c in candidates if c))


class Stack:
    """The four daemons under ``systemd-socket-activate``, in a temporary directory."""

    def __init__(self):
        self.bin = binaries()
        self.database = database()
        self.directory = tempfile.mkdtemp(prefix="stol-python-tests-")
        self.runtime = os.path.join(self.directory, "run")
        self.state = os.path.join(self.directory, "state")
        self.env = dict(os.environ, STOL_RUNTIME_DIR=self.runtime, STOL_STATE_DIR=self.state)
        self.env.pop("STOL_RELEASE", None)

    def _stack(self, *args: str) -> None:
        result = subprocess.run([os.path.join(REPOSITORY, "systemd", "stack.sh"), *args], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError("systemd/stack.sh %s failed (%d):\n%s" % (" ".join(args), result.returncode,
                                                                         result.stdout))

    def start(self) -> "Stack":
        """Starts (or restarts) the stack; the daemons keep their state directory."""
        self._stack("start", self.bin, self.database)
        return self

    def stop(self) -> None:
        """Stops the stack."""
        self._stack("stop")

    def close(self) -> None:
        """Stops the stack and removes its directory."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def cli(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
        """Runs ``stol-client ARGS`` against this stack."""
        return subprocess.run([os.path.join(self.bin, "stol-client"), *args], input=stdin, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)

    def cli_json(self, *args: str, stdin: str = ""):
        """``stol-client ARGS --json`` parsed (one object), whatever its exit status."""
        result = self.cli(*args, "--json", stdin=stdin)
        # An error's JSON: on standard output from older builds, on standard error from newer ones.
        text = result.stdout if result.stdout.strip() else result.stderr
        if not text.strip():
            raise AssertionError("stol-client %s printed nothing (exit %d)" % (" ".join(args), result.returncode))
        return json.loads(text)

    def cli_jsonl(self, *args: str, stdin: str = ""):
        """``stol-client ARGS`` printing JSON lines, parsed."""
        result = self.cli(*args, stdin=stdin)
        return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def start() -> Stack:
    """A started stack (StackUnavailable without binaries or database)."""
    stack = Stack()
    try:
        return stack.start()
    except BaseException:
        shutil.rmtree(stack.directory, ignore_errors=True)
        raise


def module_setup(timeout: float = 60):
    """``(STACK, TX)`` for a test module's ``setUpModule``: a started :class:`Stack` and a
    ``stol.Taxonomy`` on it; or, without binaries or database, the :class:`StackUnavailable`
    saying why and ``None`` (the module's daemon classes raise it, failing; its other tests
    still run)."""
    import stol
    try:
        stack = start()
    except StackUnavailable as missing:
        return missing, None
    return stack, stol.Taxonomy(runtime_dir=stack.runtime, timeout=timeout)


def module_teardown(stack, tx) -> None:
    """What :func:`module_setup` started, closed (``tearDownModule``)."""
    if tx is not None:
        tx.close()
    if isinstance(stack, Stack):
        stack.close()
