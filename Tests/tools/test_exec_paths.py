"""systemd/exec_paths.py: the drop-ins that name the only executable files of each
daemon's unit, checked on real executables (the loader's own answer, no fake ldd)."""
import importlib.util
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "systemd", "exec_paths.py")
spec = importlib.util.spec_from_file_location("exec_paths", SCRIPT)
exec_paths = importlib.util.module_from_spec(spec)
spec.loader.exec_module(exec_paths)

DAEMONS = ["stol-taxonomyd", "stol-favoritesd", "stol-importd", "stol-verifyd"]


def ldd_paths(executable):
    """What the loader itself resolves, read independently of the script's parser."""
    output = subprocess.run(["ldd", executable], check=True, capture_output=True, text=True).stdout
    paths = set()
    for line in output.splitlines():
        for word in line.split():
            if word.startswith("/"):
                paths.add(word)
    return paths


class ExecPathsTests(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="exec-paths-")
        self.libexec = "/usr/libexec/stol"
        self.unitdir = "/usr/lib/systemd/system"
        os.makedirs(self.root + self.libexec)
        # Real dynamic executables standing in for the daemons.
        for daemon in DAEMONS:
            shutil.copy("/bin/true", os.path.join(self.root + self.libexec, daemon))

    def tearDown(self):
        shutil.rmtree(self.root)

    def run_script(self):
        subprocess.run(["python3", SCRIPT, "--root", self.root, "--libexec", self.libexec, "--unitdir", self.unitdir],
                       check=True)

    def drop_in(self, unit):
        with open(os.path.join(self.root + self.unitdir, unit + ".d", "exec-paths.conf")) as file:
            return file.read()

    def test_eachDaemonsUnit_getsADropIn_listingExactlyTheLibrariesTheLoaderResolves(self):
        self.run_script()
        for daemon, unit in exec_paths.UNITS.items():
            text = self.drop_in(unit)
            self.assertIn("[Service]\n", text)
            lines = [line for line in text.splitlines() if line.startswith("ExecPaths=")]
            self.assertEqual(len(lines), 1, text)
            listed = set(lines[0][len("ExecPaths="):].split())
            expected = ldd_paths(os.path.join(self.root + self.libexec, daemon))
            self.assertEqual(listed, expected, f"{unit}: every library the loader maps, and nothing else")
            self.assertTrue(any("libc.so" in path for path in listed), listed)
            self.assertFalse(any(path.startswith(self.root) for path in listed), "paths as installed, not as staged")

    def test_aLibraryFoundOutsideTheSystem_isNamedByItsCopyBesideTheDaemon(self):
        beside = os.path.join(self.root + self.libexec, "libswiftCore.so")
        open(beside, "w").close()
        self.assertEqual(exec_paths.installed_path("/opt/swift/usr/lib/swift/linux/libswiftCore.so", self.root, self.libexec),
                         self.libexec + "/libswiftCore.so")
        self.assertEqual(exec_paths.installed_path("/opt/swift/usr/lib/swift/linux/libOther.so", self.root, self.libexec),
                         "/opt/swift/usr/lib/swift/linux/libOther.so", "no copy beside: the path the loader found")
        self.assertEqual(exec_paths.installed_path("/lib/x86_64-linux-gnu/libc.so.6", self.root, self.libexec),
                         "/lib/x86_64-linux-gnu/libc.so.6")
        self.assertEqual(exec_paths.installed_path(self.root + self.libexec + "/libx.so", self.root, self.libexec),
                         self.libexec + "/libx.so", "a staged path loses its root")

    def test_aDaemonThatIsNotInstalled_failsTheRun(self):
        os.unlink(os.path.join(self.root + self.libexec, "stol-importd"))
        result = subprocess.run(["python3", SCRIPT, "--root", self.root, "--libexec", self.libexec, "--unitdir", self.unitdir],
                                capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("stol-importd is not installed", result.stderr)


if __name__ == "__main__":
    unittest.main()
