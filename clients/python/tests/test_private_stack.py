"""The package finds a user's private stack (``stol-client serve``) as stol-client does:
``STOL_RUNTIME_DIR``, else the private stack when its supervisor runs, else ``/run/stol``;
never sockets a crashed supervisor left, nor a directory someone else may enter. Then
against the real supervisor and daemons: a lineage with no ``STOL_RUNTIME_DIR`` at all."""

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import _stack

_stack.require_protobuf()

import stol  # noqa: E402
from stol import _transport  # noqa: E402


class _Environment:
    """Sets and restores environment variables (None: unset)."""

    def __init__(self, **values):
        self.values = values
        self.saved = {}

    def __enter__(self):
        for name, value in self.values.items():
            self.saved[name] = os.environ.get(name)
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        return self

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class DiscoveryOrderTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="stolpydisc")
        self.runtime = os.path.join(self.root, "stol")

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def test_variable_then_a_running_private_stack_then_the_system(self):
        with _Environment(STOL_RUNTIME_DIR=None, XDG_RUNTIME_DIR=self.root):
            self.assertEqual(stol.Taxonomy().path, "/run/stol/taxonomy.sock")
            os.mkdir(self.runtime, 0o700)
            with open(os.path.join(self.runtime, "serve.lock"), "w") as lock:
                lock.write("4242\n")
            # A lock file nobody holds: a crashed supervisor's; still the system's.
            self.assertEqual(stol.Taxonomy().path, "/run/stol/taxonomy.sock")
            fd = os.open(os.path.join(self.runtime, "serve.lock"), os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self.assertEqual(stol.Taxonomy().path, os.path.join(self.runtime, "taxonomy.sock"))
                self.assertEqual(stol.Favorites().path, os.path.join(self.runtime, "favorites.sock"))
                with _Environment(STOL_RUNTIME_DIR="/elsewhere"):
                    self.assertEqual(stol.Taxonomy().path, "/elsewhere/taxonomy.sock")
                # A directory others may enter is never the user's private stack.
                os.chmod(self.runtime, 0o755)
                self.assertEqual(stol.Taxonomy().path, "/run/stol/taxonomy.sock")
            finally:
                os.close(fd)

    def test_a_listening_socket_without_supervisor_is_a_service_managers_stack(self):
        import socket
        with _Environment(STOL_RUNTIME_DIR=None, XDG_RUNTIME_DIR=self.root):
            os.mkdir(self.runtime, 0o700)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                listener.bind(os.path.join(self.runtime, "taxonomy.sock"))
                self.assertEqual(stol.Taxonomy().path, "/run/stol/taxonomy.sock")  # bound, not listening
                listener.listen(8)
                self.assertEqual(stol.Taxonomy().path, os.path.join(self.runtime, "taxonomy.sock"))
                os.chmod(self.runtime, 0o711)
                self.assertEqual(stol.Taxonomy().path, "/run/stol/taxonomy.sock")
            finally:
                listener.close()

    def test_without_XDG_RUNTIME_DIR_the_directory_is_tmp_stol_uid(self):
        for value in ("", "relative/path", None):
            with _Environment(XDG_RUNTIME_DIR=value):
                self.assertEqual(_transport.private_runtime_dir(), "/tmp/stol-%d" % os.getuid())


class PrivateStackTest(unittest.TestCase):
    """``stol-client serve --detach`` started, then the package used with no
    ``STOL_RUNTIME_DIR``: it answers from the private stack."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="stolpypriv")
        self.client = os.path.join(_stack.binaries(), "stol-client")
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.root, HOME=self.root, TMPDIR=self.root)
        self.env.pop("STOL_RUNTIME_DIR", None)

    def tearDown(self):
        subprocess.run([self.client, "serve", "--stop"], env=self.env, capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    def test_lineage_from_the_private_stack(self):
        started = subprocess.run([self.client, "serve", "--database", _stack.database(), "--detach"],
                                 env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(started.returncode, 0, started.stderr)
        with _Environment(STOL_RUNTIME_DIR=None, XDG_RUNTIME_DIR=self.root):
            taxonomy = stol.Taxonomy()
            self.assertEqual(taxonomy.path, os.path.join(self.root, "stol", "taxonomy.sock"))
            lineage = list(taxonomy.lineage([9689]))[0]
            self.assertIn("Panthera", str(lineage))
        stopped = subprocess.run([self.client, "serve", "--stop"], env=self.env, capture_output=True, text=True,
                                 timeout=60)
        self.assertIn("stopped your private stack", stopped.stdout)
        with _Environment(STOL_RUNTIME_DIR=None, XDG_RUNTIME_DIR=self.root):
            self.assertEqual(stol.Taxonomy().path, "/run/stol/taxonomy.sock")

    def test_taxonomy_with_a_database_starts_the_private_stack_and_later_ones_share_it(self):
        client_dir = os.path.dirname(self.client)
        with _Environment(STOL_RUNTIME_DIR=None, XDG_RUNTIME_DIR=self.root, HOME=self.root,
                          PATH=client_dir + os.pathsep + os.environ.get("PATH", "")):
            first = stol.Taxonomy(database=_stack.database())
            self.assertIn("Panthera", str(first.lineage(9689)))
            pid = open(os.path.join(self.root, "stol", "serve.lock")).read().split()[0]
            # Another process of the user on the same file: the same stack, not a second one.
            again = subprocess.run([sys.executable, "-c", "import stol, sys; t = stol.Taxonomy(database=sys.argv[1]); "
                                    "print(t.lineage(9606))", _stack.database()],
                                   env=dict(os.environ, PYTHONPATH=_stack.PACKAGE_ROOT), capture_output=True, text=True,
                                   timeout=60)
            self.assertIn("Homo sapiens", again.stdout, again.stderr)
            self.assertEqual(open(os.path.join(self.root, "stol", "serve.lock")).read().split()[0], pid)
            # Another file while it runs: a clear error, not a silent answer from the wrong one.
            other = os.path.join(self.root, "other.sqlite")
            shutil.copy(_stack.database(), other)
            with self.assertRaises(stol.ServiceNotRunningError) as raised:
                stol.Taxonomy(database=other)
            self.assertIn("already runs", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
