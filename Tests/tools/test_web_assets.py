"""The web app's embedded assets are what web/ makes (web/embed_assets.py --check)."""
import pathlib
import subprocess
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


class EmbeddedAssets(unittest.TestCase):
    def test_the_committed_swift_file_is_what_the_web_files_make(self):
        result = subprocess.run([sys.executable, str(ROOT / "web/embed_assets.py"), "--check"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(result.returncode, 0, result.stdout)

    def test_a_changed_web_file_is_caught(self):
        sys.path.insert(0, str(ROOT / "web"))
        import embed_assets
        original = embed_assets.generate()
        script = ROOT / "web/app.js"
        text = script.read_text(encoding="utf-8")
        try:
            script.write_text(text + "// changed\n", encoding="utf-8")
            self.assertNotEqual(embed_assets.generate(), original)
        finally:
            script.write_text(text, encoding="utf-8")
        self.assertEqual(embed_assets.generate(), original)


if __name__ == "__main__":
    unittest.main()
