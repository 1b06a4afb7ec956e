"""``import stol`` loads what a lineage script needs and nothing else: the favourites
(their protobuf module), the Newick parser, the frames' helpers and the private stack's
starter (``subprocess``) load on first use (PEP 562), and then work as they did.

A fresh interpreter per case: what an earlier test imported would hide a module loaded
too early. Needs nothing built: no daemon is reached.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # clients/python

LATER = ["stol.favorites", "stol._proto.favorites_pb2", "stol.trees", "stol.frames", "stol.private", "subprocess"]


def fresh(code: str) -> dict:
    """Runs ``code`` after ``import stol`` in a new interpreter; its last line prints JSON."""
    script = "import json, sys\nimport stol\n" + code
    run = subprocess.run([sys.executable, "-c", script], cwd=PACKAGE_ROOT, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT))
    if run.returncode != 0:
        raise AssertionError(run.stderr)
    return json.loads(run.stdout.strip().splitlines()[-1])


class ImportOnFirstUseTests(unittest.TestCase):
    def test_import_stol_loads_none_of_what_a_lineage_script_does_not_use(self):
        loaded = fresh("print(json.dumps([m for m in %r if m in sys.modules]))" % (LATER,))
        self.assertEqual(loaded, [])

    def test_each_name_loads_on_first_use_and_is_what_it_was(self):
        seen = fresh("""
from stol.trees import parse_newick
tree = parse_newick("((a,b)c,d)e;")
notice = stol.FavoritesNotice
print(json.dumps({
    "favorites": stol.Favorites.__module__, "notice": notice.__module__, "frame": stol.lineage_frame.__module__,
    "trees": stol.trees.__name__, "root": tree.label, "private": callable(stol.private.stop),
    "modules": stol.favorites.__name__ + " " + stol.frames.__name__,
    "dir": all(name in dir(stol) for name in ("Favorites", "lineage_frame", "trees", "Taxonomy")),
    "all": all(hasattr(stol, name) for name in stol.__all__)}))
""")
        self.assertEqual(seen, {"favorites": "stol.favorites", "notice": "stol.favorites", "frame": "stol.frames",
                                "trees": "stol.trees", "root": "e", "private": True,
                                "modules": "stol.favorites stol.frames", "dir": True, "all": True})

    def test_a_name_the_package_does_not_have_is_an_attribute_error(self):
        seen = fresh("""
try:
    stol.Favourites
except AttributeError as error:
    print(json.dumps(str(error)))
""")
        self.assertEqual(seen, "module 'stol' has no attribute 'Favourites'")


if __name__ == "__main__":
    unittest.main()
