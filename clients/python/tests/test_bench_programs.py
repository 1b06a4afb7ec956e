"""The two programs ``make bench-peers`` times as its "STOL python" rows
(Pipeline/scripts/peer_workloads/stol_python_lineage.py and stol_python_lca.py), run
as the benchmark runs them (their own process, the package on PYTHONPATH, the stack
found through STOL_RUNTIME_DIR) against the real daemons: their answers, in the
benchmark's normalised form, are what ``stol-client`` gives for the same input.

The benchmark checks them against taxopy on NCBI's whole tree; this catches a
broken program (a wrong column, a lost error, answers out of order) in ``make test``,
on the development database, without the peers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest

import _stack

import stol

PROGRAMS = os.path.join(_stack.REPOSITORY, "Pipeline", "scripts", "peer_workloads")
STACK = None


def setUpModule():
    global STACK
    STACK = _stack.start()


def tearDownModule():
    if STACK is not None:
        STACK.close()


def some_ids(enough: int = 3000) -> list:
    """Ids of the served database: whole subtrees under its roots, on the whole tree."""
    with stol.Taxonomy(runtime_dir=STACK.runtime) as tx:
        ids, pending = [], [root.id for root in tx.roots()]
        while pending and len(ids) < enough:
            top = pending.pop(0)
            try:
                ids.extend(node.id for node in tx.subtree(top, format="nodes", ranks="all", max_taxa=50000))
            except stol.InvalidRequestError:  # too large: its children instead
                ids.append(top)
                pending.extend(child.id for child in tx.children(top))
    return ids[:enough]


class BenchPrograms(unittest.TestCase):
    def run_program(self, name: str, lines: list) -> list:
        directory = tempfile.mkdtemp(prefix="stol-bench-programs-")
        self.addCleanup(__import__("shutil").rmtree, directory, True)
        source, target = os.path.join(directory, "in.txt"), os.path.join(directory, "out.tsv")
        with open(source, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        env = dict(STACK.env, PYTHONPATH=_stack.PACKAGE_ROOT)
        result = subprocess.run([sys.executable, os.path.join(PROGRAMS, name), source, target], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                                timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout)
        with open(target, encoding="utf-8") as f:
            return f.read().splitlines()

    def test_lineage_program_writes_the_whole_tree_lineages_of_stol_client(self):
        queries = [str(i) for i in some_ids()] + ["424242", "0"]
        got = self.run_program("stol_python_lineage.py", queries)
        cli = STACK.cli("lineage", "--ranks", "all", "--ids", "--no-header", stdin="".join(q + "\n" for q in queries))
        expected = []
        for query, line in zip(queries, cli.stdout.splitlines()):
            fields = line.split("\t")
            # stol-client: query, id, rank, name, ids root first (the taxon last); or query, CODE, message.
            expected.append("%s\t%s" % (query, fields[4] if fields[1].isdigit() else "!" + fields[1]))
        self.assertEqual(len(expected), len(queries))
        self.assertEqual(got, expected)
        # Kraken's 0 is unclassified: an empty lineage, as stol-client's TSV gives it.
        self.assertEqual(got[-2:], ["424242\t!NOT_FOUND", "0\t"])
        # Root first, the taxon itself last (the normalised form), the taxon being the id asked for.
        self.assertTrue(all(line.split("\t")[1].split(";")[-1] == line.split("\t")[0] for line in got[:-2]))

    def test_lca_program_writes_the_ancestors_of_stol_client(self):
        ids = some_ids(1200)
        pairs = ["%d %d" % (ids[i], ids[-1 - i]) for i in range(0, len(ids), 3)] + ["9689 9694", "9689 424242"]
        got = self.run_program("stol_python_lca.py", pairs)
        cli = STACK.cli("compare", "--batch", "--ranks", "all", "--jsonl",
                        stdin="".join(p.replace(" ", "\t") + "\n" for p in pairs))
        expected = []
        for pair, line in zip(pairs, cli.stdout.splitlines()):
            answer = json.loads(line)
            if "error" in answer:
                value = "!" + answer["error"]["code"][len("ERROR_CODE_"):]
            else:
                value = str(answer["lca_id"]) if answer.get("lca_id") else "NONE"
            expected.append("%s\t%s" % (pair.replace(" ", "\t"), value))
        self.assertEqual(len(expected), len(pairs))
        self.assertEqual(got, expected)
        self.assertEqual(got[-2:], ["9689\t9694\t9688", "9689\t424242\t!NOT_FOUND"])


if __name__ == "__main__":
    unittest.main()
