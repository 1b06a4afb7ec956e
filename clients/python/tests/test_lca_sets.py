"""``Taxonomy.lca_sets``, ``majority_vote`` and ``lca`` (``lca_batch``, issue 24).

Without daemons: how sets are cut into requests (the server's 1000 sets, 10,000
members and 64 KiB), the forms a set may take, sets too large for one request.

Against the real daemons: every answer equals ``stol-client lca --jsonl`` for the
same sets (plain, ``--majority``, weights, ``--ranks all``); members that name
nothing are listed; and a brute force written here, taxopy's ``find_majority_vote``
step by step on the lineages of ``Taxonomy.lineage(..., ranks="all")``, agrees on
every one of a few thousand random sets of the test database's taxa."""

from __future__ import annotations

import json
import random
import unittest
from collections import Counter, defaultdict
from itertools import zip_longest

import _stack
from test_transport import FakeServer, read_request

import stol
from stol import _transport
from stol import taxonomy as taxonomy_module
from stol._proto import taxonomy_pb2

# ---------------------------------------------------------------------------------------------
# Without daemons.
# ---------------------------------------------------------------------------------------------


class LcaServer:
    """A fake taxonomy service answering ``lca_batch``: each set's answer is its first
    member (1 for a name; members starting with ``x`` are not found), its weight
    share in ``support``. Records every request it was sent."""

    def __init__(self, test: unittest.TestCase):
        self.test = test
        self.requests = []
        self.server = FakeServer(self.handle)
        test.addCleanup(self.server.close)

    def handle(self, connection, number):
        while True:
            request = read_request(connection)
            if request is None:
                return
            answer = taxonomy_pb2.TaxonomyResponse(id=request.id, database={"release": "bundled"})
            case = request.WhichOneof("body")
            if case == "status":
                answer.status.SetInParent()
            elif case == "lca_batch":
                self.requests.append(request)
                for taxon_set in request.lca_batch.sets:
                    result = answer.lca_batch.results.add(key=taxon_set.key)
                    weights = list(taxon_set.weights) or [1.0] * len(taxon_set.members)
                    found = [(m, w) for m, w in zip(taxon_set.members, weights) if not m.startswith("x")]
                    result.not_found.extend(m for m in taxon_set.members if m.startswith("x"))
                    result.members = len(found)
                    if not found:
                        result.error.code = 1
                        result.error.message = "no member of the set names a taxon"
                        continue
                    result.taxon_id = int(found[0][0]) if found[0][0].isdigit() else 1
                    result.name = "Taxon " + found[0][0]
                    result.rank = "species"
                    result.support = sum(w for m, w in found if m == found[0][0]) / sum(w for _, w in found)
            connection.sendall(_transport.encode_frame(answer))

    def taxonomy(self) -> stol.Taxonomy:
        return stol.Taxonomy(socket_path=self.server.path, timeout=5)

    def check_limits(self):
        for request in self.requests:
            sets = request.lca_batch.sets
            self.test.assertLessEqual(len(sets), taxonomy_module.LCA_SETS)
            self.test.assertLessEqual(sum(len(s.members) for s in sets), taxonomy_module.LCA_MEMBERS)
            self.test.assertLessEqual(request.ByteSize(), _transport.MAX_REQUEST_BYTES)
            self.test.assertEqual(request.release, "bundled")  # the batch is pinned


class Batching(unittest.TestCase):
    def test_sets_are_cut_at_the_servers_limits_and_answered_in_order(self):
        server = LcaServer(self)
        rng = random.Random(5)
        cases = {  # name: (sets, requests)
            "20 members each: 10,000 members per request": ([[str(rng.randrange(1, 1000)) for _ in range(20)]
                                                             for _ in range(5000)], 10),
            "20 ids of 7 digits each: 64 KiB per request": ([[str(rng.randrange(10**6, 10**7)) for _ in range(20)]
                                                             for _ in range(5000)], 15),
            "one member each: 1000 sets per request": ([[str(i)] for i in range(1, 3001)], 3),
            "long names: 64 KiB per request": ([[str(i)] + ["x" + "n" * 250] * 30 for i in range(1, 200)], 25),
            "sizes mixed": ([[str(i)] * rng.randrange(1, 4000) for i in range(1, 60)], None),
        }
        with server.taxonomy() as tx:
            for name, (sets, requests) in cases.items():
                with self.subTest(name):
                    server.requests.clear()
                    results = list(tx.lca_sets(iter(sets), majority=0.5))
                    self.assertEqual([r.key for r in results], list(range(len(sets))))
                    self.assertEqual([r.taxon.id for r in results], [int(s[0]) for s in sets])
                    self.assertEqual([r.not_found for r in results], [s[1:] if s[1:2] and s[1][0] == "x" else []
                                                                      for s in sets])
                    self.assertTrue(all(r.release == "bundled" and r.error is None for r in results))
                    server.check_limits()
                    self.assertTrue(all(req.lca_batch.majority == 0.5 for req in server.requests))
                    sent = sum(len(req.lca_batch.sets) for req in server.requests)
                    self.assertEqual(sent, len(sets))
                    if requests is not None:   # full requests, not one per set
                        self.assertEqual(len(server.requests), requests)

    def test_forms_of_a_set(self):
        server = LcaServer(self)
        with server.taxonomy() as tx:
            results = list(tx.lca_sets([
                [9606, 9598],                                   # members: key = position
                (9606, 9598),                                   # a tuple of ids: members too
                ("contig 7", [9598, 9606]),                     # (key, members)
                (("sample", 3), ["9597", 9606], [3, 1]),        # (key, members, weights)
                {"key": "d", "members": ["9606"], "weights": []},
                {"members": ["Homo sapiens", 9606]},
                ("Homo sapiens", "Pan troglodytes"),           # two names: members, not (key, members)
            ]))
        self.assertEqual([r.key for r in results], [0, 1, "contig 7", ("sample", 3), "d", 5, 6])
        sent = server.requests[0].lca_batch.sets
        self.assertEqual([list(s.members) for s in sent],
                         [["9606", "9598"], ["9606", "9598"], ["9598", "9606"], ["9597", "9606"], ["9606"],
                          ["Homo sapiens", "9606"], ["Homo sapiens", "Pan troglodytes"]])
        self.assertEqual(list(sent[3].weights), [3.0, 1.0])
        self.assertEqual(list(sent[4].weights), [])  # empty weights: unweighted
        self.assertTrue(all(s.key == "" for s in sent))  # keys stay here
        self.assertEqual(results[3].support, 0.75)
        with server.taxonomy() as tx:
            with self.assertRaises(TypeError):
                list(tx.lca_sets([9606]))   # a set is a list of members, not one member
            with self.assertRaises(stol.InvalidRequestError):
                tx.lca_sets([[9606]], majority=1.0)  # refused at the call, before the first next()
            with self.assertRaises(stol.InvalidRequestError):
                tx.lca_sets([[9606]], ranks="some")

    def test_a_set_too_large_is_sent_merged_or_fails_alone(self):
        server = LcaServer(self)
        huge = ["17"] * 20000 + ["x1"] * 3 + ["5"] * 10000          # three distinct members
        too_many = [str(i) for i in range(100, 12100)]               # 12,000 distinct
        weighted = (["17", "5"] * 6000, [2.0, 0.5] * 6000)
        with server.taxonomy() as tx:
            results = list(tx.lca_sets([["1"], huge, too_many, ["2"], ("w",) + weighted, too_many], majority=0.5))
        self.assertEqual([r.key for r in results], [0, 1, 2, 3, "w", 5])
        merged = server.requests[0].lca_batch.sets[1]
        self.assertEqual(list(merged.members), ["17", "x1", "5"])
        self.assertEqual(list(merged.weights), [20000.0, 3.0, 10000.0])
        self.assertEqual(results[1].taxon.id, 17)
        self.assertEqual(results[1].members, 30000)           # every occurrence, as if sent whole
        self.assertEqual(results[1].not_found, ["x1"] * 3)
        self.assertAlmostEqual(results[1].support, 2 / 3)
        for index in (2, 5):  # in the middle and last (after the last request)
            self.assertIsInstance(results[index].error, stol.RequestTooLargeError)
            self.assertIsNone(results[index].taxon)
        w = server.requests[0].lca_batch.sets[3]   # 12,000 members over the limit: merged too
        self.assertEqual((list(w.members), list(w.weights)), (["17", "5"], [12000.0, 3000.0]))
        self.assertEqual(results[4].support, 0.8)
        server.check_limits()


# ---------------------------------------------------------------------------------------------
# Against the real daemons.
# ---------------------------------------------------------------------------------------------

STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()  # a StackUnavailable in STACK: the daemon classes fail, the others run


def tearDownModule():
    _stack.module_teardown(STACK, TX)


def taxopy_majority(lineages, fraction, weights=None):
    """taxopy 0.14's find_majority_vote step by step (_unweighted_majority_vote and
    _weighted_majority_vote), on root-first lineages of ids: (taxon, taxopy's agreement)
    or None. Levels by depth from the root, read deepest first; at each level the
    count (or weight) of every taxon and of None (lineages that end above it), most
    first; the top answers when it is a taxon, more than fraction of the total and
    more than the second."""
    levels = list(zip_longest(*lineages))
    if not weights:
        total = len(lineages)
        for level in reversed(levels):
            ranked = Counter(level).most_common()
            if ranked[0][0] and ranked[0][1] > total * fraction:
                if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
                    return ranked[0][0], ranked[0][1] / total
        return None
    total = sum(weights)
    for level in reversed(levels):
        weighed = defaultdict(float)
        for taxon, weight in zip(level, weights):
            weighed[taxon] += weight
        ranked = sorted(weighed.items(), key=lambda x: x[1], reverse=True)
        if ranked[0][0] and ranked[0][1] > total * fraction:
            if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
                return ranked[0][0], ranked[0][1] / total
    return None


def reaching_share(lineages, taxon, weights=None):
    """STOL's agreement: the share of the weight holding taxon among the members whose
    lineage reaches its depth."""
    weights = weights or [1.0] * len(lineages)
    depth = next(lineage.index(taxon) for lineage in lineages if taxon in lineage)
    holding = sum(w for lineage, w in zip(lineages, weights) if taxon in lineage)
    reaching = sum(w for lineage, w in zip(lineages, weights) if len(lineage) > depth)
    return holding / reaching


def common_prefix(lineages):
    lca = None
    for level in zip(*lineages):
        if any(x != level[0] for x in level):
            break
        lca = level[0]
    return lca


class Daemons(unittest.TestCase):
    taxa = None      # every taxon of the test database (whole tree)
    parent = None

    @classmethod
    def setUpClass(cls):
        if not isinstance(STACK, _stack.Stack):
            raise STACK
        if Daemons.taxa is None:
            nodes, pending = [], [root.id for root in TX.roots()]
            tops = set()
            for root in pending:
                top = TX.lineage(root, ranks="all", names=False).ids[0]
                tops.add(top)
            for top in sorted(tops):
                nodes.extend(TX.subtree(top, format="nodes", ranks="all", max_taxa=50000))
            Daemons.taxa = [n.id for n in nodes]
            Daemons.parent = {n.id: n.parent_id for n in nodes}
            Daemons.ranks = {n.id: n.rank for n in nodes}

    # The sets: seeded, drawn so that majorities happen (members from one low taxon's
    # subtree plus a few others), with repeats, single members and unknown members.
    def random_sets(self, count, seed, unknown=True):
        rng = random.Random(seed)
        children = defaultdict(list)
        for taxon, parent in self.parent.items():
            if parent is not None:
                children[parent].append(taxon)

        def subtree(top):
            out, stack = [], [top]
            while stack:
                node = stack.pop()
                out.append(node)
                stack.extend(children[node])
            return out
        sets = []
        for index in range(count):
            size = rng.choice([1, 2, 3, 5, 8, 20, 20, 20, 40])
            kind = index % 4
            if kind == 3:   # uniform over the tree
                members = [rng.choice(self.taxa) for _ in range(size)]
            else:
                top = rng.choice(self.taxa)
                for _ in range(rng.randrange(0, 4)):      # up a few levels: a larger clade
                    top = self.parent.get(top) or top
                pool = subtree(top)
                share = [0.9, 0.6, 0.5][kind]
                members = [rng.choice(pool) if rng.random() < share else rng.choice(self.taxa) for _ in range(size)]
            members = [str(m) for m in members]
            if unknown and rng.random() < 0.05:
                members.insert(rng.randrange(len(members) + 1), rng.choice(["424242", "no such taxon"]))
            sets.append(members)
        return sets

    def cli_lca(self, sets, *args, weights=None):
        if weights is None:
            text = "".join("\t".join(members) + "\n" for members in sets)
        else:
            text = "".join("\t".join("%s:%r" % mw for mw in zip(members, ws)) + "\n"
                           for members, ws in zip(sets, weights))
            args += ("--weighted",)
        # 100 sets per run of the client: the comparison is of the answers; how stol-client
        # cuts a long input into requests is its own tests' business (LcaIntegrationTests).
        answers, rows = [], text.splitlines(True)
        for start in range(0, len(rows), 100):
            run = STACK.cli("lca", "--jsonl", *args, stdin="".join(rows[start:start + 100]))
            self.assertIn(run.returncode, (0, 3), run.stderr)
            answers += [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
        return answers

    def assertSameAsCLI(self, results, cli):
        self.assertEqual(len(results), len(cli))
        for result, expected in zip(results, cli):
            where = "set %r: %r" % (result.key, expected)
            self.assertEqual(result.not_found, expected.get("not_found", []), where)
            self.assertEqual(result.members, expected.get("members", 0), where)
            if "error" in expected:
                self.assertIsNotNone(result.error, where)
                self.assertEqual("ERROR_CODE_" + result.error.code_name, expected["error"]["code"], where)
                self.assertEqual(result.error.message, expected["error"]["message"], where)
                self.assertIsNone(result.taxon, where)
                continue
            self.assertIsNone(result.error, where)
            self.assertEqual(result.taxon.id, int(expected["taxon_id"]), where)
            self.assertEqual(result.taxon.rank, expected.get("rank", ""), where)
            self.assertEqual(result.taxon.name, expected.get("name", ""), where)
            self.assertAlmostEqual(result.support, expected.get("support", 0.0), places=12, msg=where)
            self.assertAlmostEqual(result.agreement, expected.get("agreement", 0.0), places=12, msg=where)

    def test_answers_equal_the_cli(self):
        sets = self.random_sets(1500, seed=1) + [["424242"], ["no such taxon", "424242"]]
        rng = random.Random(2)
        weights = [[rng.choice([0.5, 1.0, 2.0, 3.25, 10.0]) for _ in members] for members in sets]
        for majority, ranks, weighted in [(None, "main", False), (None, "all", False), (0.5, "main", False),
                                          (0.5, "all", False), (0.3, "all", True), (0.75, "main", True)]:
            with self.subTest(majority=majority, ranks=ranks, weighted=weighted):
                args = ("--ranks", ranks) + (("--majority", str(majority)) if majority else ())
                cli = self.cli_lca(sets, *args, weights=weights if weighted else None)
                given = [(i + 1, members, w) for i, (members, w) in enumerate(zip(sets, weights))] if weighted \
                    else [(i + 1, members) for i, members in enumerate(sets)]
                results = list(TX.lca_sets(iter(given), majority=majority, ranks=ranks))
                self.assertEqual([r.key for r in results], list(range(1, len(sets) + 1)))
                self.assertSameAsCLI(results, cli)
                # Most sets answer (the comparison is not one of errors alone): about two in three
                # of these random sets of the curated tree's ids.
                self.assertGreater(sum(r.error is None for r in results), len(sets) * 0.6)
                self.assertTrue(any(r.not_found for r in results))

    def test_brute_force_agrees_on_every_set(self):
        """taxopy's algorithm, written above, on the lineages the service gives."""
        sets = self.random_sets(3000, seed=3, unknown=False)
        rng = random.Random(4)
        weights = [[rng.choice([0.5, 1.0, 2.0, 3.0]) for _ in members] for members in sets]
        lineage = {}
        wanted = sorted({m for members in sets for m in members})
        for item in TX.lineage(wanted, ranks="all", names=False):
            lineage[item.query] = list(item.ids)
        checked = Counter()
        for fraction, weighted in [(0.5, False), (0.3, False), (0.8, False), (0.5, True)]:
            given = [("s%d" % i, members, w if weighted else None) for i, (members, w) in enumerate(zip(sets, weights))]
            for (key, members, w), result in zip(given, TX.lca_sets(given, majority=fraction, ranks="all")):
                self.assertEqual(result.key, key)
                lineages = [lineage[m] for m in members]
                expected = taxopy_majority(lineages, fraction, w)
                where = "%s fraction %s weights %s: %s" % (key, fraction, w, members)
                if expected is None:   # only under different roots (never on NCBI's tree, all under root 1)
                    self.assertIsInstance(result.error, stol.InvalidRequestError, where)
                    checked["no majority"] += 1
                    continue
                self.assertIsNone(result.error, where)
                checked["deeper than the common ancestor" if expected[0] != common_prefix(lineages)
                        else "the common ancestor"] += 1
                self.assertEqual(result.taxon.id, expected[0], where)
                self.assertAlmostEqual(result.support, expected[1], places=12, msg=where)
                self.assertAlmostEqual(result.agreement, reaching_share(lineages, expected[0], w), places=12,
                                       msg=where)
                self.assertEqual(result.members, len(members))
        for members, result in zip(sets, TX.lca_sets(sets, ranks="all")):
            expected = common_prefix([lineage[m] for m in members])
            if expected is None:   # different roots (the test database has three)
                self.assertIsInstance(result.error, stol.InvalidRequestError, members)
                continue
            self.assertEqual(result.taxon.id, expected, members)
            self.assertEqual((result.support, result.agreement), (1.0, 1.0))
        # The sets are drawn so that majorities below the common ancestor are common.
        self.assertGreater(checked["deeper than the common ancestor"], 3000, checked)
        self.assertGreater(checked["the common ancestor"], 1000, checked)
        # majority_vote, one set at a time, gives the same.
        for members in sets[:100]:
            expected = taxopy_majority([lineage[m] for m in members], 0.5)
            if expected is None:
                with self.assertRaises(stol.InvalidRequestError):
                    TX.majority_vote(members)
            else:
                self.assertEqual(TX.majority_vote(members).taxon.id, expected[0])

    def test_members_not_found_are_listed(self):
        results = list(TX.lca_sets([[9689, 424242, "no such taxon", 9694], ["424242"], [9689]]))
        self.assertEqual(results[0].taxon.id, 9688)
        self.assertEqual(results[0].members, 2)
        self.assertEqual(results[0].not_found, ["424242", "no such taxon"])
        self.assertIsInstance(results[1].error, stol.InvalidRequestError)
        self.assertEqual(results[1].not_found, ["424242"])
        self.assertEqual(results[2].taxon.id, 9689)
        self.assertEqual(results[2].taxon.name, "Panthera leo")
        self.assertEqual(results[2].release, TX.status().default_release)

    def test_majority_vote(self):
        lion, tiger, leopard = 9689, 9694, 9691
        vote = TX.majority_vote([lion, lion, tiger, 424242])
        self.assertEqual(vote.taxon.id, lion)                 # 2 of the 3 found
        self.assertAlmostEqual(vote.support, 2 / 3)
        self.assertEqual(vote.not_found, ["424242"])
        self.assertEqual(TX.majority_vote([lion, tiger, leopard]).taxon.id, 9688)   # genus Panthera
        self.assertEqual(TX.majority_vote([lion, tiger], weights=[3, 1]).taxon.id, lion)
        self.assertEqual(TX.majority_vote([lion]).taxon.id, lion)   # one member: taxopy refuses, STOL answers
        self.assertEqual(TX.majority_vote([lion, tiger]).taxon.id, 9688)   # 1 to 1 at species: genus, 2 of 2
        with self.assertRaises(stol.InvalidRequestError):
            TX.majority_vote([424242, "no such taxon"])
        with self.assertRaises(stol.InvalidRequestError):
            TX.majority_vote([lion, tiger], fraction=1.0)
        with self.assertRaises(stol.InvalidRequestError):
            TX.majority_vote([lion, tiger], weights=[1])

    def test_large_sets_merged_answer_as_sent_whole(self):
        sets = self.random_sets(40, seed=6, unknown=True)
        rng = random.Random(7)
        big = [[rng.choice(members) for _ in range(rng.randrange(11000, 30000))] for members in sets]
        small = [list(Counter(members)) for members in big]
        counts = [list(Counter(members).values()) for members in big]
        for result, members, expected in zip(TX.lca_sets(big, majority=0.5, ranks="all"), big,
                                             TX.lca_sets(zip(range(40), small, counts), majority=0.5, ranks="all")):
            self.assertEqual(result.taxon, expected.taxon)
            self.assertEqual(type(result.error), type(expected.error))
            self.assertEqual(result.support, expected.support)
            self.assertEqual(result.not_found, [m for m in members if m in expected.not_found])
            self.assertEqual(result.members, len(members) - len(result.not_found))

    def test_lca_is_one_request_and_folds_large_lists(self):
        mammals = [node.id for node in TX.subtree(40674, format="nodes", ranks="all")][1::2]
        everything = self.taxa[::3]
        expected = {ranks: [next(TX.lca_sets([members], ranks=ranks)).taxon for members in (mammals, everything)]
                    for ranks in ("all", "main")}
        self.assertIsNotNone(expected["all"][0])
        for ranks in ("all", "main"):
            self.assertEqual([TX.lca(mammals, ranks), TX.lca(everything, ranks)], expected[ranks])
        saved = taxonomy_module.LCA_MEMBERS
        taxonomy_module.LCA_MEMBERS = 7   # several sets, then their ancestors
        try:
            for ranks in ("all", "main"):
                self.assertEqual([TX.lca(mammals, ranks), TX.lca(everything, ranks)], expected[ranks])
            panthera = [9689, 9694, "Panthera onca", 9691, 9689, 9694, 9691, 9689, 9694]
            self.assertEqual(TX.lca(panthera).id, 9688)
            with self.assertRaises(stol.NotFoundError):
                TX.lca(panthera + [424242])
        finally:
            taxonomy_module.LCA_MEMBERS = saved
        with self.assertRaises(stol.NotFoundError) as caught:
            TX.lca([9689, 9694, 424242, "no such taxon"])
        self.assertEqual(caught.exception.details, {"taxon_id": "424242"})


if __name__ == "__main__":
    unittest.main()
