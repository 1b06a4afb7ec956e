"""ete4 itself reading the text ``Taxonomy.annotate`` writes, and writing the same bytes back.

ete4 4.4 lives in the virtual environment of `make bench-peers` (compiled from source by
pip, so never built by `make test`), which runs this module after its benchmark:

    make bench-peers                      # creates .cache/peers-venv, then runs this
    /usr/bin/python3 -m unittest discover -s clients/python/tests -p 'peers_*.py'   # once it is there

Without that environment (or with an ete4 that does not import) the test fails: it is
named after no test_ prefix, so `make test`'s discovery leaves it to `make bench-peers`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import unittest

import _stack
from stol.trees import parse_newick
from test_annotate import BRIEF_TREE

#: The virtual environment of `make bench-peers` (ete4 4.4, no protobuf): ete4 runs there,
#: in its own interpreter, on the text a test wrote.
PEERS_PYTHON = os.environ.get("STOL_PEERS_PYTHON") or os.path.join(_stack.REPOSITORY, ".cache", "peers-venv", "bin",
                                                                   "python")


STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()


def tearDownModule():
    _stack.module_teardown(STACK, TX)


class Ete4ReadsOurText(unittest.TestCase):
    """On the text the real daemons' annotation gives (the served database's answers)."""

    def setUp(self):
        if not isinstance(STACK, _stack.Stack):
            raise STACK
        self.assertTrue(os.access(PEERS_PYTHON, os.X_OK),
                        "ete4's virtual environment is not here (make bench-peers creates it): %s" % PEERS_PYTHON)
        check = subprocess.run([PEERS_PYTHON, "-c", "import ete4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(check.returncode, 0, "ete4 does not import in %s" % PEERS_PYTHON)

    def test_ete4_readsOurTextBack_andWritesTheSameBytes(self):
        trees = [BRIEF_TREE, "('Homo sapiens':0.25,(9606,9598)0.95,nobody,10116);",
                 "(9606[&&NHX:zz=1:taxid=old:aa=(b)],x[&&NHX:zz=1]);"]
        cases = [(tree, label) for tree in trees for label in ("keep", "name", "id")]
        texts = [TX.annotate(tree, label=label) for tree, label in cases]
        for (tree, label), ours, theirs in zip(cases, texts, ete4_read(texts)):
            with self.subTest(tree=tree, label=label):
                expected = [dict([("name", n.label)] + ([("dist", float(n.length))] if n.length else []) + n.nhx)
                            for n in parse_newick(ours).traverse()]
                self.assertEqual(theirs["props"], expected)
                self.assertEqual(theirs["written"], ours, "ete4 writes the tree it read as we wrote it")
                annotated = [p for p in theirs["props"] if "taxid" in p]
                self.assertTrue(annotated)
                for props in annotated:
                    self.assertEqual(set(props) - {"name", "dist", "x", "zz", "aa"},
                                     {"taxid", "sci_name", "common_name", "rank", "lineage", "named_lineage"})


def ete4_read(texts):
    """ete4's Tree(text, parser=1) in its own interpreter (one run for all texts): for
    each, every node's props in preorder (ete4 leaves an empty name out) and its
    write(parser=1) of the tree, the root's content included."""
    script = ("import json, sys\nfrom ete4 import Tree\nout = []\n"
              "for text in json.load(open(sys.argv[1])):\n"
              "    t = Tree(text, parser=1)\n"
              "    props = [dict(n.props, name=n.props.get('name', '')) for n in t.traverse('preorder')]\n"
              "    out.append({'props': props, 'written': t.write(parser=1, props=None, format_root_node=True)})\n"
              "print(json.dumps(out))\n")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(list(texts), f)
    try:
        result = subprocess.run([PEERS_PYTHON, "-c", script, f.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, timeout=300)
    finally:
        os.unlink(f.name)
    if result.returncode != 0:
        raise AssertionError("ete4 could not read our text: %s" % result.stderr[-2000:])
    return json.loads(result.stdout)


if __name__ == "__main__":
    unittest.main()
