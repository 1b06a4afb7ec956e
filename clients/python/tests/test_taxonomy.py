"""``stol.Taxonomy`` against the real daemons: every answer equals what
``stol-client --json`` gives for the same input, errors are typed, batches come
back whole and in order."""

from __future__ import annotations

import dataclasses
import itertools
import subprocess
import sys
import unittest

import _stack
from google.protobuf import json_format

import stol
from stol import taxonomy as taxonomy_module
from stol._proto import common_pb2, taxonomy_pb2

STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()
    if TX is None:
        raise STACK  # every test here needs the daemons: the whole module fails, saying why


def tearDownModule():
    _stack.module_teardown(STACK, TX)


def parse(payload: dict, message):
    """The message a ``stol-client --json`` object describes (its ``database`` member apart)."""
    payload = {key: value for key, value in payload.items() if key != "database"}
    return json_format.ParseDict(payload, message)


def rank_of(node: dict) -> str:
    """The rank of a taxon of the CLI's taxa-form JSON, as ``stol`` spells it."""
    if node.get("source_rank"):
        return node["source_rank"]
    rank = node.get("rank", "RANK_UNSPECIFIED")
    return "" if rank == "RANK_UNSPECIFIED" else rank[len("RANK_"):].lower()


class Sample:
    """Ids of the served database: every node under every root, on the whole tree."""
    _ids = None

    @classmethod
    def ids(cls, enough: int = 20000):
        """Every node of the database, or of as many whole subtrees as make ``enough``
        (on a large database: the roots' subtrees are too large to export whole)."""
        if cls._ids is None:
            ids = []
            pending = [root.id for root in TX.roots()]
            while pending and len(ids) < enough:
                top = pending.pop(0)
                try:
                    ids.extend(node.id for node in TX.subtree(top, format="nodes", ranks="all", max_taxa=50000))
                except stol.InvalidRequestError:  # too large: its children instead
                    ids.append(top)
                    pending.extend(child.id for child in TX.children(top))
            cls._ids = ids
        return cls._ids

    @classmethod
    def spread(cls, count: int = 25):
        ids = cls.ids()
        return ids[::max(1, len(ids) // count)]


class SingleAnswersEqualTheCLI(unittest.TestCase):
    def test_taxon(self):
        for taxon_id in Sample.spread() + [9689]:
            with self.subTest(taxon_id=taxon_id):
                taxon = TX.taxon(taxon_id)
                cli = STACK.cli_json("taxon", str(taxon_id))
                self.assertEqual(TX.last_response.taxon, parse(cli, taxonomy_pb2.Taxon()))
                self.assertEqual(TX.last_response.database,
                                 json_format.ParseDict(cli["database"], common_pb2.DatabaseIdentity()))
                self.assertEqual(taxon.id, cli["id"])
                self.assertEqual(taxon.name, cli["scientific_name"])
                self.assertEqual(taxon.parent_id, cli.get("parent_id"))
                self.assertEqual(taxon.rank, rank_of(cli))
                self.assertEqual(taxon.release, cli["database"]["release"])
        self.assertEqual(TX.database.release, TX.taxon(9689).release)

    def test_taxon_andDetail_giveBothTreesParentAndChildren_asTheCLI(self):
        for taxon_id in Sample.spread() + [10090, 9688]:
            with self.subTest(taxon_id=taxon_id):
                taxon = TX.taxon(taxon_id)
                cli = STACK.cli_json("taxon", str(taxon_id))
                self.assertEqual(taxon.source_parent_id, cli.get("source_parent_id"))
                self.assertEqual(taxon.source_child_count, cli.get("source_child_count", 0))
                self.assertEqual(taxon.child_count, cli.get("child_count", 0))
                self.assertEqual(TX.detail(taxon_id).taxon, taxon)
        mouse = TX.taxon(10090)
        self.assertNotEqual(mouse.parent_id, mouse.source_parent_id, "genus Mus in the view, subgenus Mus in NCBI's tree")
        self.assertEqual(TX.detail(10090, ranks="all").lineage[-1].id, mouse.source_parent_id)
        self.assertEqual(TX.taxon(10090, ranks="all").rank, "species")

    def test_descendants_areTheCLIs_inTheSameOrder_andAnUnknownRankIsTyped(self):
        for taxon_id, rank in ((9688, "species"), (2759, "phylum"), (40674, None), (2759, "Division")):
            with self.subTest(taxon_id=taxon_id, rank=rank):
                found = TX.descendants(taxon_id, rank=rank)
                args = ["descendants", str(taxon_id), "--ids"] + (["--rank", rank] if rank else [])
                self.assertEqual([t.id for t in found], [int(line) for line in STACK.cli(*args).stdout.split()])
                self.assertEqual(found.total, len(found))
                self.assertTrue(found)
                if len(found) > 3:
                    self.assertEqual([t.id for t in TX.descendants(taxon_id, rank=rank, limit=3)], [t.id for t in found[:3]])
        with self.assertRaisesRegex(stol.InvalidRequestError, "unknown rank 'specis'.*species"):
            TX.descendants(9688, rank="specis")
        with self.assertRaises(ValueError):
            TX.descendants(9688, limit=0)

    def test_lion_is_what_the_readme_says(self):
        lion = TX.taxon(9689)
        self.assertEqual((lion.name, lion.rank, lion.parent_id, lion.common_name), ("Panthera leo", "species", 9688, "lion"))

    def test_taxa_resolves_many_and_lists_the_missing(self):
        sample = Sample.spread(40)
        ids = sample + [424242, -3, 9689, 9689]
        taxa = TX.taxa(ids)
        self.assertEqual(taxa.missing, [424242, -3])
        self.assertEqual(sorted(taxa), sorted(set(ids) - {424242, -3}))
        for taxon_id in sample[::5]:
            # The same taxon; its place in both trees (child counts, NCBI's parent) only get_taxon fills.
            alone = dataclasses.replace(TX.taxon(taxon_id), child_count=0, source_parent_id=None, source_child_count=None)
            self.assertEqual(taxa[taxon_id], alone)
        self.assertTrue(taxa.release)

    def test_ancestors_detail_roots(self):
        cli = STACK.cli_json("ancestors", "9689")
        TX.ancestors(9689)
        self.assertEqual(TX.last_response.ancestors, parse(cli, taxonomy_pb2.TaxonList()))
        cli = STACK.cli_json("ancestors", "9689", "--ranks", "all")
        self.assertEqual([t.id for t in TX.ancestors(9689, ranks="all")], [t["id"] for t in cli["taxa"]])
        cli = STACK.cli_json("detail", "9689", "--lang", "es")
        detail = TX.detail(9689, language="es")
        self.assertEqual(TX.last_response.detail, parse(cli, taxonomy_pb2.TaxonDetail()))
        self.assertEqual(next(iter(detail.names)), "es")
        self.assertEqual(detail.taxon.common_name, "león")
        cli = STACK.cli_json("roots")
        roots = TX.roots()
        self.assertEqual(TX.last_response.roots, parse(cli, taxonomy_pb2.TaxonPage()))
        self.assertEqual(roots.total, len(roots))

    def test_children_all_pages(self):
        parents = [t.id for t in TX.roots()] + [9688, 9681]
        for parent in parents:
            with self.subTest(parent=parent):
                cli = STACK.cli_json("children", str(parent), "--limit", "500")
                children = TX.children(parent)
                self.assertEqual(TX.last_response.children.total, cli.get("total", 0))
                self.assertEqual([t.id for t in children], [t["id"] for t in cli.get("taxa", [])])
                self.assertEqual([t.child_count for t in children], [t.get("child_count", 0) for t in cli.get("taxa", [])])

    def test_children_pages_are_joined_in_order(self):
        expected = [t["id"] for t in STACK.cli_json("children", "9688", "--limit", "500")["taxa"]]
        self.assertGreaterEqual(len(expected), 3)
        page, taxonomy_module.CHILDREN_PAGE = taxonomy_module.CHILDREN_PAGE, 2
        try:
            children = TX.children(9688)
        finally:
            taxonomy_module.CHILDREN_PAGE = page
        self.assertEqual([t.id for t in children], expected)
        self.assertEqual(children.total, len(expected))

    def test_compare(self):
        for a, b in [(9689, 9694), (9689, 9688), (9689, 9689), (9689, 2157), (Sample.ids()[3], Sample.ids()[-3])]:
            with self.subTest(a=a, b=b):
                cli = STACK.cli_json("compare", str(a), str(b))
                comparison = TX.compare(a, b)
                self.assertEqual(TX.last_response.compare, parse(cli, taxonomy_pb2.CompareResponse()))
                self.assertEqual(comparison.distance, cli.get("distance"))
                self.assertEqual(comparison.lca.id if comparison.lca else None, cli.get("lca", {}).get("id"))
        self.assertEqual(TX.compare(9689, 9694).shared_clade, "Both are in genus Panthera")

    def test_search(self):
        for text, options, kwargs in [("lion", [], {}), ("panth", ["--prefix"], {"prefix": True}),
                                      ("Pantera leo", [], {}),
                                      ("cat", ["--rank", "family", "--limit", "5"], {"rank": "family", "limit": 5}),
                                      ("león", ["--lang", "es"], {"language": "es"}),
                                      ("lion", ["--no-fuzzy", "--limit", "50"], {"fuzzy": False, "limit": 50}),
                                      ("lion", ["--within", "Pterois"], {"within": "Pterois"}),
                                      ("Mus", ["--within", "862507"], {"within": 862507})]:
            with self.subTest(text=text, options=options):
                cli = STACK.cli_json("search", *text.split(), *options)
                hits = TX.search(text, **kwargs)
                self.assertEqual(TX.last_response.search, parse(cli, taxonomy_pb2.SearchResponse()))
                self.assertEqual([h.taxon.id for h in hits], [h["taxon"]["id"] for h in cli.get("hits", [])])
        self.assertEqual(TX.search("lion")[0].taxon.id, 9689)
        self.assertEqual(TX.search("lion", within="Pterois")[0].taxon.id, 185886, "the red lionfish, not the lion")
        with self.assertRaises(stol.NotFoundError):
            TX.search("lion", within="no such taxon")

    def test_relatives(self):
        for taxon_id, n, computed in [(9689, 5, False), (9689, 20, True), (9606, 3, False)]:
            with self.subTest(taxon_id=taxon_id, n=n, computed=computed):
                args = ["relatives", str(taxon_id), "-n", str(n)] + (["--computed"] if computed else [])
                cli = STACK.cli_json(*args)
                relatives = TX.relatives(taxon_id, n=n, computed=computed)
                self.assertEqual(TX.last_response.relatives, parse(cli, taxonomy_pb2.RelativesResponse()))
                self.assertEqual([r.taxon.id for r in relatives], [r["taxon"]["id"] for r in cli["relatives"]])

    def test_subtree_newick_is_the_clis_text(self):
        for taxon_id, ranks in [(9688, "main"), (9681, "main"), (9681, "all")] + [(t.id, "main") for t in TX.roots()]:
            with self.subTest(taxon_id=taxon_id, ranks=ranks):
                cli = STACK.cli("tree", str(taxon_id), "--format", "newick", "--ranks", ranks, "--max-taxa", "50000")
                if cli.returncode != 0:  # a root too large to export (a large database): the same refusal
                    with self.assertRaises(stol.InvalidRequestError) as caught:
                        TX.subtree(taxon_id, ranks=ranks, max_taxa=50000)
                    self.assertIn(str(caught.exception), cli.stderr)
                    continue
                tree = TX.subtree(taxon_id, ranks=ranks, max_taxa=50000)
                self.assertEqual(tree, cli.stdout.rstrip("\n"))
                self.assertTrue(tree.release)

    def test_subtree_nodes_are_the_clis_json_lines(self):
        cli = STACK.cli_jsonl("tree", "9681", "--format", "jsonl")
        nodes = TX.subtree(9681, format="nodes")
        self.assertEqual([(n.id, n.parent_id, n.depth, n.rank, n.name) for n in nodes],
                         [(c["id"], c["parent_id"], c["depth"], c["rank"], c["name"]) for c in cli])

    def test_status_and_history(self):
        cli = STACK.cli_json("status")
        status = TX.status()
        self.assertEqual(status.taxa_count, cli["taxa_count"])
        self.assertEqual(status.default_release, cli["default_release"])
        self.assertEqual([r.release for r in status.releases], [r["release"] for r in cli["releases"]])
        self.assertEqual(TX.releases(), [r["release"] for r in cli["releases"]])
        cli = STACK.cli_json("history", "9689")
        TX.history(9689)
        self.assertEqual(TX.last_response.history, parse(cli, taxonomy_pb2.HistoryResponse()))


class BatchesEqualTheCLI(unittest.TestCase):
    def test_kraken_zeros_keep_their_places_anywhere_in_a_long_batch(self):
        # Answered by the package, never sent: first, twice in a row, at the edges of the blocks the
        # input is read in and of the requests (1000 each), last, and a batch of zeros only.
        ids = Sample.ids()
        queries = [str(i) for i in itertools.islice(itertools.cycle(ids), 9000)]
        for place in (9000, 4097, 4096, 4095, 2001, 2000, 1000, 999, 11, 10, 0):
            queries.insert(place, "0")
        for names in (True, False):
            lineages = list(TX.lineage(iter(queries), ranks="all", names=names))
            self.assertEqual([lineage.query for lineage in lineages], queries)
            self.assertEqual([i for i, lineage in enumerate(lineages) if lineage.taxon.id == 0],
                             [i for i, query in enumerate(queries) if query == "0"])
            self.assertTrue(all(lineage.ids and lineage.ids[-1] == int(query)
                                for lineage, query in zip(lineages, queries) if query != "0"))
        self.assertEqual([lineage.taxon.name for lineage in TX.lineage(["0", "0"])], ["unclassified", "unclassified"])

    def test_lineage_of_5000_queries_in_order(self):
        ids = Sample.ids()
        queries = [str(i) for i in itertools.islice(itertools.cycle(ids), 4980)]
        queries[10:10] = ["Panthera tigris", "lion", "424242", "no such taxon", "0"]
        queries += [str(i) for i in ids[:15]]
        self.assertEqual(len(queries), 5000)

        lineages = list(TX.lineage(int(q) if q.isdigit() else q for q in queries))  # lazy input
        self.assertEqual([lineage.query for lineage in lineages], queries)

        cli = STACK.cli_jsonl("lineage", "--jsonl", stdin="".join(q + "\n" for q in queries))
        self.assertEqual(len(cli), len(lineages))
        for lineage, expected in zip(lineages, cli):
            self.assertEqual(lineage.query, expected["query"])
            if "error" in expected:
                self.assertIsNotNone(lineage.error, lineage.query)
                self.assertEqual("ERROR_CODE_" + lineage.error.code_name, expected["error"]["code"])
                self.assertEqual(lineage.error.message, expected["error"]["message"])
                continue
            if expected["taxon"]["id"] == 0:
                # Kraken's 0: unclassified, an empty lineage, as the TSV's lineage column.
                self.assertEqual((lineage.taxon.id, lineage.taxon.name, lineage.ids), (0, "unclassified", ()))
                continue
            path = expected.get("lineage", []) + [expected["taxon"]]
            self.assertEqual(list(lineage.ids), [t["id"] for t in path], lineage.query)
            self.assertEqual(list(lineage.names), [t["scientific_name"] for t in path], lineage.query)
            self.assertEqual(list(lineage.ranks), [rank_of(t) for t in path], lineage.query)
        # The unknown ids and names; Kraken's 0 is answered as unclassified, not an error.
        self.assertEqual(sum(1 for lineage in lineages if lineage.error), 2)
        self.assertTrue(any(lineage.query == "0" and lineage.taxon.id == 0 for lineage in lineages))
        self.assertEqual(type(lineages[12].error), stol.NotFoundError)
        self.assertEqual((lineages[14].query, lineages[14].error, lineages[14].taxon.id), ("0", None, 0))

    def test_lineage_whole_tree(self):
        queries = [str(i) for i in Sample.spread(30)]
        cli = STACK.cli_jsonl("lineage", "--jsonl", "--ranks", "all", stdin="\n".join(queries) + "\n")
        for lineage, expected in zip(TX.lineage(queries, ranks="all"), cli):
            if expected["taxon"]["id"] == 0:
                # Kraken's 0: unclassified, an empty lineage, as the TSV's lineage column.
                self.assertEqual((lineage.taxon.id, lineage.taxon.name, lineage.ids), (0, "unclassified", ()))
                continue
            path = expected.get("lineage", []) + [expected["taxon"]]
            self.assertEqual(list(lineage.ids), [t["id"] for t in path])
            self.assertEqual(list(lineage.ranks), [t.get("source_rank", "") for t in path])

    def test_lineage_ids_only(self):
        """names=False (the ids form): the same ids and taxon as with names, what
        `stol-client lineage --ranks all --ids` prints, and no names to misuse."""
        queries = [str(i) for i in Sample.spread(40)] + ["Panthera leo", "424242", "no such taxon", "0", "-3", "",
                                                         "9689", " 9689 ", "0"]
        for ranks in ("all", "main"):
            with self.subTest(ranks=ranks):
                named = list(TX.lineage(queries, ranks=ranks))
                bare = list(TX.lineage(queries, ranks=ranks, names=False))  # the packed form
                self.assertEqual([b.query for b in bare], [q.strip() for q in queries], "the queries as sent")
                self.assertEqual([b.query for b in bare], [n.query for n in named])
                for full, ids_only in zip(named, bare):
                    self.assertEqual(ids_only.ids, full.ids, full.query)
                    self.assertEqual(ids_only.taxon, full.taxon, full.query)
                    self.assertEqual(type(ids_only.error), type(full.error), full.query)
                    self.assertEqual(str(ids_only.error), str(full.error), full.query)
                    self.assertEqual(ids_only.merged_from, full.merged_from, full.query)
                    self.assertEqual(ids_only.release, full.release, full.query)
                    self.assertIsNone(ids_only.ranks)
                    self.assertIsNone(ids_only.names)
        cli = STACK.cli("lineage", "--ranks", "all", "--ids", "--no-header", stdin="".join(q + "\n" for q in queries))
        rows = [line.split("\t") for line in cli.stdout.splitlines()]
        self.assertEqual(len(rows), len(queries))
        for lineage, row in zip(TX.lineage(queries, ranks="all", names=False), rows):
            if lineage.error is None:
                self.assertEqual(";".join(map(str, lineage.ids)), row[4], lineage.query)
                self.assertEqual((lineage.taxon.id, lineage.taxon.rank, lineage.taxon.name),
                                 (int(row[1]), row[2], row[3]))
        lion = TX.lineage(9689, ranks="all", names=False)
        self.assertEqual(lion.ids, TX.lineage(9689, ranks="all").ids)
        self.assertEqual(str(lion), ";".join(map(str, lion.ids)))
        with self.assertRaisesRegex(ValueError, "names=False"):
            lion.rank_names
        with self.assertRaises(stol.NotFoundError):
            TX.lineage(424242, names=False)

    def test_lineage_names_are_read_from_the_answers_nodes_or_from_a_compact_answer(self):
        """The package asks for the nodes form (each lineage node's rank and name once per
        answer); a server that answers in the compact form (one without it) reads the same."""
        from stol.answers import Lineage

        def answer(form: str):
            response = taxonomy_pb2.LineageBatchResponse()
            found = response.results.add(query="9689", lineage_ids=[1, 9688])
            found.taxon.id, found.taxon.scientific_name, found.taxon.source_rank = 9689, "Panthera leo", "species"
            if form == "nodes":
                response.nodes.add(id=1, rank="no rank", name="root")
                response.nodes.add(id=9688, rank="genus", name="Panthera")
            else:
                found.lineage_ranks.extend(["no rank", "genus"])
                found.lineage_names.extend(["root", "Panthera"])
            missing = response.results.add(query="424242")
            missing.error.code, missing.error.message = stol.NotFoundError.CODE, "no taxon 424242"
            return response
        for with_nodes in ("nodes", "compact"):
            response = answer(with_nodes)
            read = Lineage.reader(response)
            lion, missing = (read(result, "2024.9.7") for result in response.results)
            self.assertEqual((lion.ids, lion.ranks, lion.names), ((1, 9688, 9689), ("no rank", "genus", "species"),
                                                                  ("root", "Panthera", "Panthera leo")), with_nodes)
            self.assertEqual((lion.taxon.id, lion.taxon.rank, lion.release), (9689, "species", "2024.9.7"))
            self.assertIsInstance(missing.error, stol.NotFoundError)
        lion = TX.lineage(9689, ranks="all")
        sent = TX.last_response.lineage_batch
        self.assertEqual([node.id for node in sent.nodes], list(lion.ids[:-1]), "the package asked for the nodes form")
        self.assertEqual(list(sent.results[0].lineage_names), [])
        self.assertEqual(lion.names[-2:], ("Panthera", "Panthera leo"))

    def test_lineage_ids_of_a_batch_are_read_from_the_packed_form_or_from_an_older_servers_results(self):
        """names=False on a batch asks for the packed form (every lineage in one array, the
        taxa once, notes for failed and merged queries); a server that does not know it
        answers results in the taxa form, read as the same lineages; an answer that does
        not add up is a protocol violation, not a wrong lineage."""
        from stol.answers import Lineage, Node

        queries = ["9689", "424242", "12345"]
        packed = taxonomy_pb2.LineageBatchResponse(packed_lengths=[3, 0, 3], packed_ids=[1, 9688, 9689, 1, 9688, 9689])
        packed.nodes.add(id=9689, rank="species", name="Panthera leo")
        missing = packed.packed_notes.add(index=1)
        missing.error.code, missing.error.message = stol.NotFoundError.CODE, "no taxon 424242"
        packed.packed_notes.add(index=2, merged_from=12345)
        older = taxonomy_pb2.LineageBatchResponse()
        for query in ("9689", "12345"):
            found = older.results.add(query=query, merged_from=12345 if query == "12345" else 0)
            found.taxon.id, found.taxon.scientific_name, found.taxon.source_rank = 9689, "Panthera leo", "species"
            for taxon_id, rank, name in ((1, "no rank", "root"), (9688, "genus", "Panthera")):
                node = found.lineage.add(id=taxon_id, scientific_name=name, source_rank=rank)
            if query == "9689":
                gone = older.results.add(query="424242")
                gone.error.code, gone.error.message = stol.NotFoundError.CODE, "no taxon 424242"
        for form, answer in (("packed", packed), ("taxa", older)):
            lion, gone, merged = Lineage.packed(answer, queries, "2024.9.7")
            self.assertEqual([lion.query, gone.query, merged.query], queries, form)
            self.assertEqual((lion.ids, lion.taxon, lion.merged_from, lion.error), ((1, 9688, 9689), Node(9689, "species", "Panthera leo"),
                                                                                    None, None), form)
            self.assertEqual((lion.ranks, lion.names, lion.release), (None, None, "2024.9.7"), form)
            self.assertEqual((gone.ids, gone.taxon), ((), None), form)
            self.assertIsInstance(gone.error, stol.NotFoundError, form)
            self.assertEqual((merged.ids, merged.merged_from, merged.taxon.id), ((1, 9688, 9689), 12345, 9689), form)
        short = taxonomy_pb2.LineageBatchResponse(packed_lengths=[3, 4], packed_ids=[1, 9688, 9689])
        with self.assertRaises(stol.ProtocolViolationError):
            Lineage.packed(short, ["9689", "9690"], "2024.9.7")
        with self.assertRaises(stol.ProtocolViolationError):
            Lineage.packed(short, ["9689"], "2024.9.7")
        silent = taxonomy_pb2.LineageBatchResponse(packed_lengths=[0])  # neither a lineage nor an error
        self.assertIsInstance(Lineage.packed(silent, ["9689"], "2024.9.7")[0].error, stol.ProtocolViolationError)

    def test_lineage_of_one_raises_typed(self):
        self.assertEqual(TX.lineage("Panthera leo").taxon.id, 9689)
        self.assertEqual(TX.lineage(9689).rank_names["genus"], "Panthera")
        with self.assertRaises(stol.NotFoundError) as caught:
            TX.lineage(424242)
        self.assertEqual(caught.exception.details, {"taxon_id": "424242"})

    def test_names_over_64_kib_are_split_into_requests(self):
        names = ["Nonexistent name %04d %s" % (i, "x" * 180) for i in range(1000)]
        lineages = list(TX.lineage(names))
        self.assertEqual([lineage.query for lineage in lineages], names)
        self.assertTrue(all(isinstance(lineage.error, stol.NotFoundError) for lineage in lineages))

    def test_compare_pairs(self):
        ids = Sample.ids()
        pairs = [(ids[i], ids[-1 - i]) for i in range(0, 1200, 7)] + [(9689, "Panthera tigris"), (9689, "nope")]
        cli = STACK.cli_jsonl("compare", "--batch", "--jsonl", stdin="".join("%s\t%s\n" % p for p in pairs))
        results = list(TX.compare_pairs(pairs))
        self.assertEqual(len(results), len(cli))
        for result, expected in zip(results, cli):
            self.assertEqual((result.a, result.b), (expected["a"], expected["b"]))
            if "error" in expected:
                self.assertEqual("ERROR_CODE_" + result.error.code_name, expected["error"]["code"])
                continue
            self.assertEqual(result.lca.id if result.lca else 0, expected.get("lca_id", 0))
            self.assertEqual(result.distance_main, expected.get("distance_main", 0))
            self.assertEqual(result.distance_all, expected.get("distance_all"))
            self.assertEqual(result.unrelated, expected.get("unrelated", False))

    def test_a_loop_of_lca_calls_and_compare_pairs_answer_the_same_ancestors(self):
        # The documented fast way for a loop over pairs (lca's docstring): one batch, the same answers.
        ids = Sample.ids()
        pairs = [(ids[i], ids[-1 - i]) for i in range(0, min(600, len(ids) // 2), 3)] + [(9689, 9689), (9689, "Panthera tigris")]
        for ranks in ("main", "all"):
            one_by_one = [TX.lca([a, b], ranks=ranks) for a, b in pairs]
            batched = [pair.lca for pair in TX.compare_pairs(pairs, ranks=ranks)]
            self.assertEqual([n.id if n else None for n in one_by_one], [n.id if n else None for n in batched], ranks)
            self.assertTrue(any(n is not None and n.id not in (1, 131567) for n in batched), "only trivial ancestors")

    def test_lca_of_many(self):
        self.assertEqual(TX.lca([9689, 9694]).id, 9688)
        self.assertEqual(TX.lca([9689, 9694, "Panthera onca", 9681]).id, 9681)
        self.assertEqual(TX.lca([9689]).id, 9689)
        # Eukaryota and Archaea: different roots of the eight-rank view (no common ancestor), or
        # "cellular organisms" on a database with NCBI's whole tree.
        expected = STACK.cli_jsonl("compare", "--batch", "--jsonl", stdin="9689\t2157\n")[0]
        lca = TX.lca([9689, 2157])
        self.assertEqual(lca.id if lca else 0, expected.get("lca_id", 0))
        members = [n.id for n in TX.subtree(40674, format="nodes")][1::5]  # Mammalia, five apart
        lca = TX.lca(members)
        # The same fold through the CLI, pair by pair.
        current = str(members[0])
        for other in members[1:]:
            current = str(STACK.cli_jsonl("compare", "--batch", "--jsonl", stdin="%s\t%s\n" % (current, other))[0]["lca_id"])
        self.assertEqual(lca.id, int(current))
        with self.assertRaises(stol.NotFoundError):
            TX.lca([9689, 424242])

    def test_name2id(self):
        names = ["Panthera leo", "lion", "Panthera", "no such name", "león"] + [t.name for t in TX.taxa(Sample.spread(30)).values()]
        cli = STACK.cli_jsonl("name2id", "--jsonl", stdin="".join(n + "\n" for n in names))
        result = TX.name2id(names)
        for expected in cli:
            if "error" in expected:
                self.assertIn(expected["name"], result.missing)
                continue
            self.assertEqual(result[expected["name"]], expected["ids"])
            self.assertEqual(result.ranks[expected["name"]], expected["ranks"])
        self.assertEqual(result["lion"], [9689])
        self.assertEqual(result.missing, ["no such name"])

    def test_name2id_of_several_requests_is_every_whole_results_ids_in_order(self):
        """Without a hint name2id asks for the ids alone (``ids_only``, 1000 names a request):
        each name's ids, the missing names (repeats kept) and the tables read later (a second
        lookup, pinned to the release) are what the whole results say, across requests."""
        taxa = [t.name for t in TX.taxa(Sample.spread(400)).values()]
        names = (taxa + ["no such name", "lion", " Panthera leo ", "panthera leo", "", "Panthera"]) * 5
        self.assertGreater(len(names), 2000)
        result = TX.name2id(names)
        whole = [item for item, _ in TX._name_results(names, "")]
        self.assertEqual(len(whole), len(names))
        expected = {item.name: list(item.ids) for item in whole if item.ids}
        self.assertEqual(dict(result), expected)
        self.assertEqual(result.missing, [item.name for item in whole if not item.ids])
        self.assertEqual(result.missing.count("no such name"), 5)
        self.assertEqual(result.ranks, {item.name: list(item.ranks) for item in whole if item.ids})
        self.assertEqual(result.confidence, {item.name: item.confidence for item in whole if item.ids})

    def test_name2ids_tables_are_read_when_first_asked_for_and_are_the_services_answer(self):
        """The ids are stored as each answer comes; kinds, confidence, matches, ranks, totals and
        several_kingdoms are read from the kept results on first use: each as the CLI prints it."""
        names = ["Panthera leo", "lion", "panthera leo", "Panthera", "no such name"] + \
            [t.name for t in TX.taxa(Sample.spread(40)).values()]
        cli = {line["name"]: line for line in STACK.cli_jsonl("name2id", "--jsonl", stdin="".join(n + "\n" for n in names))}
        first = TX.name2id(names[:3])
        result = TX.name2id(names)
        self.assertEqual(first.kinds, {"Panthera leo": "exact", "lion": "common", "panthera leo": "capitalised"})
        kinds = {v.number: v.name[len("MATCH_KIND_"):].lower() for v in taxonomy_pb2.MatchKind.DESCRIPTOR.values}
        matches = {v.number: v.name[len("MATCH_TYPE_"):].lower() for v in taxonomy_pb2.MatchType.DESCRIPTOR.values}
        for name, expected in cli.items():
            with self.subTest(name=name):
                if "error" in expected:
                    self.assertNotIn(name, result)
                    self.assertNotIn(name, result.kinds)
                    continue
                kind = taxonomy_pb2.MatchKind.Value(expected["kind"])
                match = taxonomy_pb2.MatchType.Value(expected["match"])
                self.assertEqual(result.kinds[name], kinds[kind])
                self.assertEqual(result.matches[name], matches[match] if match else "")
                self.assertEqual(result.confidence[name], expected.get("confidence", 0))
                self.assertEqual(result.ranks[name], expected["ranks"])
                self.assertEqual(name in result.several_kingdoms, expected.get("several_kingdoms", False))
                self.assertEqual(result.totals.get(name, 0), expected.get("total", 0))
        self.assertEqual(set(result.kinds), set(result), "one entry per found name, none for the missing")

    def test_name2id_from_a_fresh_interpreter_loads_no_record_types(self):
        """`import stol` and name2id leave `stol.answers` (dataclasses and two dozen record types)
        and `typing` (the package's annotations are postponed) unloaded; the names the package
        exports from `answers` load it when first read."""
        script = ("import sys, stol\n"
                  "found = stol.Taxonomy().name2id(['lion', 'no such name'])\n"
                  "print(found['lion'], found.missing, found.kinds['lion'], 'dataclasses' in sys.modules,\n"
                  "      type(sys.modules['stol.answers']).__name__, 'typing' in sys.modules)\n"
                  "print(stol.Taxon.__module__, stol.MAIN_RANKS[0], 'dataclasses' in sys.modules,\n"
                  "      stol.Taxonomy().taxon(9689).name, type(stol.answers).__name__)\n")
        result = subprocess.run([sys.executable, "-c", script], env=dict(STACK.env, PYTHONPATH=_stack.PACKAGE_ROOT),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        before, after = result.stdout.splitlines()
        self.assertEqual(before, "[9689] ['no such name'] common False _LazyModule False")
        self.assertEqual(after, "stol.answers domain True Panthera leo module")


class TypedErrors(unittest.TestCase):
    def assertLikeCLI(self, exception, *cli_args):
        cli = STACK.cli_json(*cli_args)
        self.assertEqual(exception.code_name, cli["error"]["code"])
        self.assertEqual(str(exception), cli["error"]["message"])
        self.assertEqual(exception.details, cli["error"].get("details", {}))

    def test_not_found(self):
        for call, args in [(lambda: TX.taxon(424242), ["taxon", "424242"]),
                           (lambda: TX.detail(424242), ["detail", "424242"]),
                           (lambda: TX.compare(9689, 424242), ["compare", "9689", "424242"]),
                           (lambda: TX.relatives(424242), ["relatives", "424242"]),
                           (lambda: TX.children(424242), ["children", "424242"])]:
            with self.subTest(args=args):
                with self.assertRaises(stol.NotFoundError) as caught:
                    call()
                self.assertIsInstance(caught.exception, stol.StolError)
                self.assertIsInstance(caught.exception, LookupError)
                self.assertEqual(caught.exception.code, 5)
                self.assertEqual(caught.exception.details, {"taxon_id": "424242"})
                self.assertLikeCLI(caught.exception, *args)

    def test_invalid_request(self):
        for call, args in [(lambda: TX.taxon(0), ["taxon", "0"]),
                           (lambda: TX.search("!!!"), ["search", "!!!"]),
                           (lambda: TX.relatives(9688), ["relatives", "9688"])]:
            with self.subTest(args=args):
                with self.assertRaises(stol.InvalidRequestError) as caught:
                    call()
                self.assertEqual(caught.exception.code, 1)
                self.assertLikeCLI(caught.exception, *args)
        with self.assertRaises(stol.InvalidRequestError):
            TX.search("lion", limit=201)
        with self.assertRaises(stol.InvalidRequestError):
            TX.subtree(2759, max_taxa=3)
        # The connection stays open after a typed error.
        self.assertEqual(TX.taxon(9689).id, 9689)

    def test_release_not_installed(self):
        with stol.Taxonomy("no-such-release", runtime_dir=STACK.runtime) as pinned:
            with self.assertRaises(stol.ReleaseNotInstalledError) as caught:
                pinned.taxon(9689)
            self.assertEqual(caught.exception.details, {"release": "no-such-release"})
            with self.assertRaises(stol.ReleaseNotInstalledError):
                list(pinned.lineage([9689, 9694]))
        release = TX.status().default_release
        with stol.Taxonomy(release, runtime_dir=STACK.runtime) as pinned:
            self.assertEqual(pinned.taxon(9689).release, release)
            self.assertEqual(next(pinned.lineage([9689])).release, release)

    def test_request_too_large_is_refused_before_sending(self):
        with self.assertRaises(stol.RequestTooLargeError):
            TX.search("lion " * 20000)
        self.assertEqual(TX.search("lion")[0].taxon.id, 9689)

    def test_bad_arguments(self):
        with self.assertRaises(stol.InvalidRequestError):
            TX.lineage([9689], ranks="everything")
        with self.assertRaises(stol.InvalidRequestError):
            TX.search("lion", rank="tribe")
        with self.assertRaises(stol.InvalidRequestError):
            TX.taxon(1 << 70)  # beyond int64: refused before sending


class Connections(unittest.TestCase):
    def test_iterating_while_calling(self):
        # A batch has a connection of its own: other calls may be made while iterating.
        for lineage in TX.lineage([9689, 9694, 9690] * 700):
            if lineage.query == "9694":
                self.assertEqual(TX.taxon(9694).name, lineage.taxon.name)
                break
        self.assertEqual(TX.taxon(9689).id, 9689)

    def test_z_reconnects_after_a_restart(self):
        # (named _z_: unittest runs it after the others of this class)
        self.assertEqual(TX.taxon(9689).id, 9689)
        STACK.start()  # stops every daemon, which closes this connection, and starts them again
        self.assertEqual(TX.taxon(9689).id, 9689)
        self.assertEqual(len(list(TX.lineage(itertools.islice(itertools.cycle(Sample.ids()), 2500)))), 2500)


if __name__ == "__main__":
    unittest.main()
