"""``make install`` puts the package where Debian's python3 finds it, and ``make
uninstall`` takes it away again.

The Makefile's ``install-python`` target (part of ``install-files``, which both
``make install`` and the Debian package run) copies ``clients/python/stol`` into
``$(DESTDIR)$(PYTHONDIR)``. These tests stage it into a temporary DESTDIR and import
it from there in a fresh interpreter that cannot see the checkout, so a module
left out of the install (a new file, a subpackage) fails here rather than on an
administrator's machine. Needs ``make`` only: nothing is built.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)                         # clients/python
REPOSITORY = os.path.dirname(os.path.dirname(PACKAGE_ROOT))  # the checkout
DEFAULT_PYTHONDIR = "/usr/lib/python3/dist-packages"         # PREFIX=/usr


def source_modules() -> list:
    """Every module of the package in the checkout, relative to clients/python."""
    found = []
    for directory, subdirectories, files in os.walk(os.path.join(PACKAGE_ROOT, "stol")):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
        found.extend(os.path.relpath(os.path.join(directory, f), PACKAGE_ROOT) for f in files if f.endswith(".py"))
    return sorted(found)


def installed_files(root: str) -> list:
    found = []
    for directory, _, files in os.walk(root):
        found.extend(os.path.relpath(os.path.join(directory, f), root) for f in files)
    return sorted(found)


class InstalledLayoutTests(unittest.TestCase):
    def setUp(self):
        self.destdir = tempfile.mkdtemp(prefix="stol-python-install-")
        self.addCleanup(shutil.rmtree, self.destdir, True)

    def make(self, *arguments: str) -> str:
        # Run from `make test` too: the outer make's jobserver and level are not ours.
        env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
        result = subprocess.run(["make", "--no-print-directory", "-C", REPOSITORY, *arguments,
                                 "DESTDIR=" + self.destdir], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout)
        return result.stdout

    def test_every_module_is_installed_readable_by_all_and_unchanged(self):
        self.make("install-python")
        target = os.path.join(self.destdir, DEFAULT_PYTHONDIR.lstrip("/"))
        modules = source_modules()
        self.assertIn(os.path.join("stol", "_proto", "taxonomy_pb2.py"), modules)
        self.assertEqual(installed_files(target), modules)
        for module in modules:
            path = os.path.join(target, module)
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o644, module)
            with open(path, "rb") as installed, open(os.path.join(PACKAGE_ROOT, module), "rb") as source:
                self.assertEqual(installed.read(), source.read(), module)

    def test_the_installed_package_imports_without_the_checkout(self):
        self.make("install-python")
        target = os.path.join(self.destdir, DEFAULT_PYTHONDIR.lstrip("/"))
        # -I: no PYTHONPATH, no current directory, no user site; the staged directory
        # stands in for /usr/lib/python3/dist-packages.
        script = ("import sys; sys.path.insert(0, sys.argv[1]); import stol, stol.taxonomy, stol.favorites, "
                  "stol.frames; from stol._proto import common_pb2, favorites_pb2, import_pb2, taxonomy_pb2, "
                  "verify_pb2; print(stol.__file__); print(taxonomy_pb2.__file__); "
                  "print(stol.Taxonomy.__name__, stol.Favorites.__name__, stol.NotFoundError.CODE)")
        result = subprocess.run([sys.executable, "-I", "-c", script, target], cwd=self.destdir,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                                timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout)
        package_file, proto_file, names = result.stdout.splitlines()
        self.assertEqual(package_file, os.path.join(target, "stol", "__init__.py"))
        self.assertEqual(proto_file, os.path.join(target, "stol", "_proto", "taxonomy_pb2.py"))
        self.assertEqual(names, "Taxonomy Favorites 5")

    def test_uninstall_removes_the_package_and_its_bytecode(self):
        self.make("install-python")
        target = os.path.join(self.destdir, DEFAULT_PYTHONDIR.lstrip("/"))
        # An import as root leaves __pycache__ directories beside the modules.
        subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                        "import stol, stol._proto.taxonomy_pb2", target], check=True, timeout=60)
        self.make("uninstall-python")
        self.assertEqual(os.listdir(target), [])

    def test_pythondir_and_prefix_choose_the_directory(self):
        self.make("install-python", "PREFIX=/usr/local")
        self.assertTrue(os.path.isfile(os.path.join(self.destdir, "usr/local/lib/python3/dist-packages/stol/"
                                                                  "__init__.py")))
        self.make("install-python", "PYTHONDIR=/opt/site")
        self.assertTrue(os.path.isfile(os.path.join(self.destdir, "opt/site/stol/_proto/common_pb2.py")))

    def test_install_files_and_uninstall_include_the_package(self):
        # A dry run: install-files needs built binaries, but its recipe must name the package.
        planned = self.make("-n", "install-files", "BUNDLED_DB=/nonexistent", "BIN_DIR=/nonexistent")
        self.assertIn("clients/python/stol/_proto/*.py %s/usr/lib/python3/dist-packages/stol/_proto/"
                      % self.destdir, planned)
        planned = self.make("-n", "uninstall")
        self.assertIn("rm -f %s/usr/lib/python3/dist-packages/stol/*.py" % self.destdir, planned)


if __name__ == "__main__":
    unittest.main()
