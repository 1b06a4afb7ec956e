"""``Taxonomy.topology`` (``induced_tree``, issue 24) against the real daemons: the same
Newick as ``stol-client tree --taxa``, the nodes with their requested marks, what
names nothing listed, and ete4's get_topology written out on the lineages the
package itself answers (edges between taxids) for random sets."""

from __future__ import annotations

import random
import unittest

import _stack


STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()
    if TX is None:
        raise STACK  # every test here needs the daemons: the whole module fails, saying why


def tearDownModule():
    _stack.module_teardown(STACK, TX)


def ete4_edges(taxa, lineages, intermediate_nodes=False):
    """ete4's get_topology on root-first lineages: (top, {(child, parent)})."""
    children, parent = {}, {}
    for taxon in taxa:
        lineage = lineages[taxon]
        for upper, lower in zip(lineage, lineage[1:]):
            if lower not in parent:
                parent[lower] = upper
                children.setdefault(upper, []).append(lower)
    root = lineages[next(iter(taxa))][0]
    if not intermediate_nodes:
        order, stack = [], list(children.get(root, []))
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(children.get(node, []))
        for node in order:
            kids = children.get(node, [])
            if len(kids) == 1 and node not in taxa:
                up = parent[node]
                children[up] = [c for c in children[up] if c != node] + kids
                parent[kids[0]] = up
                children.pop(node)
    top = children[root][0] if len(children.get(root, [])) == 1 else root
    edges, stack = set(), [top]
    while stack:
        node = stack.pop()
        for child in children.get(node, []):
            edges.add((child, node))
            stack.append(child)
    return top, edges


class Topology(unittest.TestCase):
    def test_newick_isWhatTheClientPrints_andNotFoundIsListed(self):
        taxa = ["9689", "9694", "9606", "424242", "Panthera onca"]
        text = TX.topology(taxa, ranks="main")
        cli = STACK.cli("tree", "--taxa", "--format", "newick", stdin="\n".join(taxa) + "\n")
        self.assertEqual(str(text) + "\n", cli.stdout)
        self.assertEqual(text.not_found, ["424242"])
        ids = TX.topology([9689, 9606], ranks="all", label="id")
        self.assertIn("9689", ids)
        self.assertTrue(ids.endswith(";"))

    def test_nodes_markTheTaxaAskedFor_andEachParentIsTheNodeAbove(self):
        nodes = TX.topology([9689, 9694, 9606], format="nodes", ranks="main")
        self.assertEqual(sorted(n.id for n in nodes if n.requested), [9606, 9689, 9694])
        by_id = {n.id: n for n in nodes}
        for node in nodes:
            if node.parent_id is not None:
                self.assertEqual(by_id[node.parent_id].depth, node.depth - 1)

    def test_randomSets_areEte4sGetTopology_onTheLineagesTheServiceGives(self):
        rng = random.Random(24)
        pool = [n.id for n in TX.subtree(40674, format="nodes", ranks="all", max_taxa=50000)]
        for round_number in range(40):
            taxa = set(rng.sample(pool, rng.randint(2, 25)))
            keep = round_number % 4 == 0
            lineages = {}
            for lineage in TX.lineage(sorted(taxa), ranks="all", names=False):
                lineages[lineage.taxon.id] = list(lineage.ids)
            top, expected = ete4_edges(taxa, lineages, intermediate_nodes=keep)
            nodes = TX.topology(sorted(taxa), format="nodes", ranks="all", keep_single_children=keep)
            got = {(n.id, n.parent_id) for n in nodes if n.parent_id is not None}
            self.assertEqual(nodes[0].id, top, sorted(taxa))
            self.assertEqual(got, expected, sorted(taxa))


class NamesInContext(unittest.TestCase):
    def test_within_keepsTheTaxaUnderTheHint_withKindsAndConfidence(self):
        plain = TX.name2id(["Panthera", "lion", "panthera leo"])
        self.assertEqual(plain.kinds, {"Panthera": "exact", "lion": "common", "panthera leo": "capitalised"})
        self.assertEqual(plain.confidence["Panthera"], 100)
        hinted = TX.name2id(["Panthera", "Quercus"], within="Mammalia")
        self.assertEqual(hinted["Panthera"], [9688])
        self.assertEqual(hinted.missing, ["Quercus"])
        self.assertEqual(hinted.outside["Quercus"], [3511])
        cli = STACK.cli_json("name2id", "--within", "Mammalia", "--no-header", stdin="Quercus\n")
        self.assertEqual(cli["outside_ids"], [3511])


if __name__ == "__main__":
    unittest.main()
