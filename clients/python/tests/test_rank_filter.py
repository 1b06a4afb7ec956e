"""``Taxonomy.filter``, ``filter_stream`` and ``rank_order`` against the real daemons:
taxonkit's ``filter`` as the service applies it (``rank_filter``), over ids of every rank
the served database has, checked against taxonkit's rules stated afresh here on the
same ids' ``lineage(ranks="all")`` answers and the service's own order of ranks, and
against ``stol-client filter``; bad options refused by the service before any input is
read. The rules themselves are pinned on the server (``RankRulesTests``)."""

from __future__ import annotations

import random
import unittest

import _samples
import _stack

import stol

STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()  # a StackUnavailable in STACK: the daemon classes fail, the others run


def tearDownModule():
    _stack.module_teardown(STACK, TX)


class DaemonTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not isinstance(STACK, _stack.Stack):
            raise STACK


class RankOrder(DaemonTest):
    def test_theServicesOrder_isWhatListOrderPrints(self):
        order = TX.rank_order()
        lines = order.order()
        self.assertEqual(lines[0], "acellular root,cellular root")
        self.assertEqual(lines[1], "domain,superkingdom,realm,empire")
        self.assertEqual(lines[-2], "isolate")
        self.assertEqual(lines[-1], "!no rank,!clade")
        self.assertEqual(order.unordered, ("no rank", "clade"))
        self.assertEqual(order.main_ranks["domain"], ("domain", "superkingdom", "acellular root"))
        self.assertEqual(list(order.main_ranks), list(stol.MAIN_RANKS))
        self.assertEqual([p.letter for p in order.placeholders], ["k", "r", "K", "p", "c", "o", "f", "g", "s", "S", "t"])
        self.assertEqual(order.default_fill, "unclassified {higher} {rank}")
        self.assertTrue(order.release)
        listed = STACK.cli("filter", "--list-order")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertEqual(listed.stdout.splitlines(), lines, "the client prints the same table")


class Options(DaemonTest):
    def test_badOptions_areRaisedByTheService_beforeAnyInputIsRead(self):
        cases = [(dict(lower_than="genus", higher_than="family"), "cannot be used together", {}),
                 (dict(lower_than="genius"), "unknown rank 'genius'", {"rank": "genius"}),
                 (dict(rank=["species", "no rank"]), "unknown rank 'no rank'", {"rank": "no rank"}),
                 (dict(rank="clade"), "unknown rank 'clade'", {"rank": "clade"}),
                 (dict(higher_than="genus", save_predictable_noranks=True), "goes with lower_than", {}),
                 (dict(save_predictable_noranks=True), "goes with lower_than", {})]
        for options, message, details in cases:
            read = []

            def inputs():
                read.append(1)
                yield 9606
            with self.subTest(options=options):
                with self.assertRaises(stol.InvalidRequestError) as caught:
                    TX.filter_stream(inputs(), **options)
                self.assertIn(message, caught.exception.message)
                self.assertEqual(caught.exception.details, details)
                self.assertIsInstance(caught.exception, ValueError)
                self.assertEqual(read, [], "no input was read")
                with self.assertRaises(stol.InvalidRequestError):
                    TX.filter([9606], **options)
        with self.assertRaises(TypeError):
            TX.filter([9606], rank=[5])

    def test_rankSpellings_caseAndCommas_areTheServicesToJudge(self):
        a = TX.filter([9606, 9605, 9604], rank="Species, genus ")
        b = TX.filter([9606, 9605, 9604], rank=["species", "GENUS"])
        self.assertEqual(list(a), list(b))
        self.assertTrue(a, "this database has 9606 or 9605")


#: Option sets taxonkit users write, and a few edge ones.
OPTIONS = [
    dict(lower_than="genus"),
    dict(lower_than="genus", rank="genus"),
    dict(lower_than="genus", discard_noranks=True),
    dict(lower_than="genus", save_predictable_noranks=True),
    dict(lower_than="species", save_predictable_noranks=True),
    dict(lower_than="family", rank=["family"], discard_noranks=True),
    dict(higher_than="family"),
    dict(higher_than="order", rank="order", discard_noranks=True),
    dict(rank="species"),
    dict(rank="species,subspecies,strain,varietas,forma"),
    dict(rank=["superkingdom"]),
    dict(discard_noranks=True),
    dict(),
]


def taxonkit_keeps(options, lineage_ranks, level):
    """taxonkit's filter, stated afresh from its documentation, on a taxon whose lineage
    has these ranks (root first, the taxon last); ``level`` orders ranks (None: no order)."""
    rank, above = lineage_ranks[-1], list(reversed(lineage_ranks[:-1]))
    bound_low = options.get("lower_than")
    bound_high = options.get("higher_than")
    equal = options.get("rank") or []
    equal = [r.strip() for r in ([equal] if isinstance(equal, str) else equal) for r in r.split(",")]
    discard = options.get("discard_noranks") or options.get("save_predictable_noranks")
    mine = level(rank)
    if mine is None:
        if not discard:
            return True
        if not options.get("save_predictable_noranks"):
            return False
        for ancestor in above:
            if level(ancestor) is not None:
                return not level(ancestor) < level(bound_low)
        return False
    if any(level(r) == mine for r in equal):
        return True
    if bound_low:
        return mine > level(bound_low)
    if bound_high:
        return mine < level(bound_high)
    return not equal


class AgainstTheService(DaemonTest):
    queries = None
    lineages = None
    level = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if AgainstTheService.queries is None:
            ids = _samples.sample_ids(TX, per_rank=10)
            names = [lineage.taxon.name for lineage in TX.lineage(ids[:40], ranks="all") if lineage.found]
            queries = [str(i) for i in ids] + names + ["0", "no such taxon", "999999999"]
            queries += random.Random(5).sample(queries, 30)  # repeats
            AgainstTheService.queries = queries
            AgainstTheService.lineages = list(TX.lineage(queries, ranks="all"))
            levels = {spelling: index for index, spellings in enumerate(TX.rank_order().levels) for spelling in spellings}
            AgainstTheService.level = staticmethod(lambda rank: levels.get(rank.strip(" \t").lower()))

    def test_everyRankOfTheDatabase_isInTheSample(self):
        found_ranks = {lineage.taxon.rank for lineage in self.lineages if lineage.found}
        database_ranks = set(_samples.tree_ranks(TX).values())
        self.assertEqual(database_ranks - found_ranks, set())
        self.assertIn("no rank", found_ranks)

    def test_filter_keepsWhatTaxonkitsRulesKeep_onTheWholeTreesRanks(self):
        for options in OPTIONS:
            with self.subTest(options=options):
                kept = TX.filter(self.queries, **options)
                expected = [(q, l.taxon.id) for q, l in zip(self.queries, self.lineages)
                            if l.found and l.taxon.id and taxonkit_keeps(options, l.ranks, self.level)]
                self.assertEqual(list(zip(kept, (t.id for t in kept.taxa))), expected)
                self.assertEqual(kept.not_found, [q for q, l in zip(self.queries, self.lineages) if not l.found])
                self.assertIn("no such taxon", kept.not_found)
                self.assertNotIn("0", kept)
                self.assertNotIn("0", kept.not_found)
                self.assertTrue(kept.release)
                self.assertLess(len(kept), len(self.queries))
                lineages = {l.taxon.id: l for l in self.lineages if l.found and l.taxon.id}
                for taxon in kept.taxa:
                    self.assertEqual((taxon.rank, taxon.name), (lineages[taxon.id].taxon.rank, lineages[taxon.id].taxon.name))

    def test_filterStream_givesFiltersAnswer_readingItsInputLazily(self):
        options = {"lower_than": "genus", "discard_noranks": True}
        whole = TX.filter(self.queries, **options)
        stream = TX.filter_stream(iter(self.queries), **options)
        pairs = list(stream)
        self.assertEqual([item for item, _ in pairs], list(whole))
        self.assertEqual([taxon.id for _, taxon in pairs], [taxon.id for taxon in whole.taxa])
        self.assertEqual(stream.not_found, whole.not_found)
        self.assertEqual(stream.release, whole.release)
        # 20,000 inputs, read only as far as the requests in flight need: after the first
        # pair, at most a few batches of 1000 were taken from the generator.
        taken = []

        def many():
            for i in range(20000):
                taken.append(i)
                yield 9606
        lazy = TX.filter_stream(many(), rank="species")
        first = next(lazy, None)
        self.assertIsNotNone(first, "every database the tests run on has the species 9606")
        self.assertEqual(first[0], 9606)
        self.assertLess(len(taken), 10000, "the whole input was read before the first answer")

    def test_inputsComeBackAsGiven_intsAsInts(self):
        kept = TX.filter([9606, "9606", " 9606 ", 0, 999999999], rank="species")
        self.assertEqual(list(kept), [9606, "9606", " 9606 "])
        self.assertEqual([type(k) for k in kept], [int, str, str])
        self.assertEqual(kept.not_found, [999999999])

    def test_longNames_areCutIntoRequestsUnder64KiB(self):
        names = ["x" * 500 + str(i) for i in range(400)] + ["9606"]  # 200 KB of names: several requests
        kept = TX.filter(names, rank="species")
        self.assertEqual(len(kept.not_found), 400)
        self.assertEqual(list(kept), ["9606"])

    def test_sameLinesAsTheClientsFilter(self):
        lines = [q for q in self.queries if q != "0"]
        for options in OPTIONS:
            args = []
            for key, value in options.items():
                flag = "--" + key.replace("_", "-")
                if value is True:
                    args.append(flag)
                elif isinstance(value, list):
                    for item in value:
                        args += ["--rank", item]
                else:
                    args += [flag, value]
            with self.subTest(options=options):
                result = STACK.cli("filter", *args, stdin="".join(line + "\n" for line in lines))
                self.assertEqual(result.returncode, 3, result.stderr)  # some are not found
                self.assertEqual(result.stdout.splitlines(), list(TX.filter(lines, **options)))


if __name__ == "__main__":
    unittest.main()
