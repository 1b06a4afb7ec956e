"""``stol.ranks`` and ``Taxonomy.filter``: the port of the Swift client's
``RankOrder``/``RankFilter`` (taxonkit's ``filter``). The rules on hand-written ranks
(bounds, equal ranks, the 2025 spellings, ranks without order, predictable no-rank
taxa), and, against the real daemons, the filter over ids of every rank the served
database has, checked against taxonkit's rules applied here to the same ids'
``lineage(ranks="all")`` answers, and against ``stol-client filter`` when the built
client has it."""

from __future__ import annotations

import os
import random
import re
import unittest

import _samples
import _stack

import stol
from stol import ranks
from stol.answers import Lineage, Node
from stol.ranks import RankFilter


class RankOrder(unittest.TestCase):
    def test_levels_runTopDown_andSpellingsOfOneLevelAreOneRank(self):
        self.assertEqual(ranks.level("acellular root"), 0)
        self.assertEqual(ranks.level("cellular root"), 0)
        self.assertEqual({ranks.level(r) for r in ("domain", "superkingdom", "realm", "empire")}, {1})
        self.assertLess(ranks.level("kingdom"), ranks.level("phylum"))
        self.assertEqual(ranks.level("division"), ranks.level("phylum"))
        self.assertLess(ranks.level("genus"), ranks.level("subgenus"))
        self.assertLess(ranks.level("subgenus"), ranks.level("species group"))
        self.assertLess(ranks.level("species"), ranks.level("subspecies"))
        self.assertEqual(ranks.level("forma specialis"), ranks.level("subspecies"))
        self.assertEqual(ranks.level("serotype"), ranks.level("genotype"))
        self.assertLess(ranks.level("serogroup"), ranks.level("serotype"))
        self.assertLess(ranks.level("varietas"), ranks.level("forma"))
        self.assertEqual(ranks.level("variety"), ranks.level("varietas"))
        self.assertLess(ranks.level("strain"), ranks.level("isolate"))
        self.assertEqual(ranks.level("isolate"), len(ranks.LEVELS) - 1)

    def test_level_ignoresCaseAndBlanksAround_butNotInside(self):
        self.assertEqual(ranks.level(" Genus\t"), ranks.level("genus"))
        self.assertEqual(ranks.level("SPECIES GROUP"), ranks.level("species group"))
        self.assertIsNone(ranks.level("species  group"))
        self.assertIsNone(ranks.level("genus\n"), "blanks are spaces and tabs, as the Swift trimmingBlanks")

    def test_unorderedAndUnknownRanks_haveNoLevel(self):
        for rank in ("no rank", "clade", "unranked", "", "genius"):
            self.assertIsNone(ranks.level(rank), rank)
        self.assertEqual(ranks.UNORDERED, ("no rank", "clade"))

    def test_everySpelling_isOnOneLevelOnly(self):
        seen = {}
        for index, spellings in enumerate(ranks.LEVELS):
            for spelling in spellings:
                self.assertNotIn(spelling, seen)
                seen[spelling] = index
                self.assertEqual(ranks.level(spelling.upper()), index)
        for rank in ranks.UNORDERED:
            self.assertNotIn(rank, seen)

    def test_theTable_isTheSwiftClientsTable(self):
        """RankOrder.swift is the other copy: both filters must order ranks alike."""
        path = os.path.join(_stack.REPOSITORY, "Sources", "STOLModel", "RankOrder.swift")
        with open(path, encoding="utf-8") as f:
            source = f.read()
        table = source[source.index("levels: [[String]] = ["):]
        table = table[table.index("=") + 1:table.index("\n    ]\n") + 6]
        levels = [tuple(re.findall(r'"([^"]*)"', group)) for group in re.findall(r"\[([^\[\]]*)\]", table)]
        self.assertEqual(tuple(levels), ranks.LEVELS)
        unordered = re.search(r"unordered: \[String\] = \[([^\]]*)\]", source).group(1)
        self.assertEqual(tuple(re.findall(r'"([^"]*)"', unordered)), ranks.UNORDERED)

    def test_order_isWhatListOrderPrints(self):
        lines = ranks.order()
        self.assertEqual(lines[0], "acellular root,cellular root")
        self.assertEqual(lines[1], "domain,superkingdom,realm,empire")
        self.assertEqual(lines[-2], "isolate")
        self.assertEqual(lines[-1], "!no rank,!clade")
        self.assertEqual(len(lines), len(ranks.LEVELS) + 1)


class Rules(unittest.TestCase):
    def test_lowerThan_isStrict_andKeepsNoranksUnlessDiscarded(self):
        rule = RankFilter(lower_than="genus")
        for rank in ("subgenus", "species group", "species", "subspecies", "serotype", "varietas", "strain", "isolate"):
            self.assertTrue(rule.keeps(rank), rank)
        for rank in ("genus", "subtribe", "family", "superkingdom", "domain", "acellular root"):
            self.assertFalse(rule.keeps(rank), rank)
        for rank in ("no rank", "clade", "a rank nobody has heard of"):
            self.assertTrue(rule.keeps(rank), rank)
            self.assertFalse(RankFilter(lower_than="genus", discard_noranks=True).keeps(rank), rank)

    def test_higherThan_isStrict(self):
        rule = RankFilter(higher_than="family")
        self.assertTrue(rule.keeps("superfamily"))
        self.assertTrue(rule.keeps("order"))
        self.assertTrue(rule.keeps("cellular root"))
        self.assertFalse(rule.keeps("family"))
        self.assertFalse(rule.keeps("subfamily"))
        self.assertFalse(rule.keeps("strain"))

    def test_boundWithRank_isLowerOrEqual_andRankAloneIsExactly(self):
        lower_or_equal = RankFilter(lower_than="genus", rank="genus")
        self.assertTrue(lower_or_equal.keeps("genus"))
        self.assertTrue(lower_or_equal.keeps("species"))
        self.assertFalse(lower_or_equal.keeps("subtribe"))
        higher_or_equal = RankFilter(higher_than="family", rank=["family"])
        self.assertTrue(higher_or_equal.keeps("family"))
        self.assertFalse(higher_or_equal.keeps("subfamily"))
        only = RankFilter(rank="species, Strain ")
        self.assertEqual([only.keeps(r) for r in ("species", "strain", "subspecies", "genus")],
                         [True, True, False, False])
        self.assertTrue(only.keeps("no rank"), "no-rank taxa pass any range unless discarded")
        self.assertTrue(RankFilter().keeps("phylum"))
        self.assertTrue(RankFilter(rank=[]).keeps("isolate"), "an empty list is no rank at all")

    def test_equalRanks_matchEverySpellingOfTheirLevel(self):
        domains = RankFilter(rank="superkingdom")
        for rank in ("superkingdom", "domain", "realm", "Empire"):
            self.assertTrue(domains.keeps(rank), rank)
        self.assertFalse(domains.keeps("acellular root"))
        self.assertFalse(domains.keeps("kingdom"))
        self.assertTrue(RankFilter(rank="cellular root").keeps("acellular root"))
        below_domain = RankFilter(lower_than="domain")
        self.assertFalse(below_domain.keeps("superkingdom"))
        self.assertFalse(below_domain.keeps("realm"))
        self.assertTrue(below_domain.keeps("kingdom"))

    def test_predictableNoranks_judgedByTheNearestRankedAncestor_atOrBelowTheBound(self):
        rule = RankFilter(lower_than="genus", save_predictable_noranks=True)
        self.assertTrue(rule.discard_noranks)
        # SARS-CoV-2 (no rank) under its species, nearest first.
        self.assertTrue(rule.keeps("no rank", ["species", "subgenus", "genus", "family"]))
        # Directly under a genus: the genus is at the bound, and `above >= lower_than` keeps it.
        self.assertTrue(rule.keeps("no rank", ["genus", "family"]))
        self.assertTrue(rule.keeps("clade", ["clade", "no rank", "genus"]), "unranked ancestors are passed over")
        # Under a family (through a clade): above the bound.
        self.assertFalse(rule.keeps("clade", ["clade", "family", "order"]))
        self.assertFalse(rule.keeps("no rank", ["no rank"]), "nothing ranked above: not predictable")
        self.assertFalse(rule.keeps("no rank", []), "the root: not predictable")
        self.assertTrue(rule.keeps("strain"))
        self.assertFalse(rule.keeps("genus"))
        self.assertTrue(rule.keeps_lineage(["no rank", "superkingdom", "genus", "species", "no rank"]))
        self.assertFalse(rule.keeps_lineage(["no rank", "superkingdom", "family", "no rank"]))
        self.assertFalse(rule.keeps_lineage([]), "an empty lineage (Kraken's 0) has no rank")

    def test_ancestorRanks_areOnlyReadForPredictableNoranks(self):
        def exploding():
            raise AssertionError("ancestors read")
            yield  # pragma: no cover
        self.assertTrue(RankFilter(lower_than="genus").keeps("species", exploding()))
        self.assertTrue(RankFilter(lower_than="genus").keeps("no rank", exploding()))
        self.assertFalse(RankFilter(lower_than="genus", discard_noranks=True).keeps("no rank", exploding()))

    def test_badOptions_areTypedErrors(self):
        cases = [(dict(lower_than="genus", higher_than="family"), "cannot be used together"),
                 (dict(lower_than="genius"), "unknown rank 'genius'"),
                 (dict(rank=["species", "no rank"]), "unknown rank 'no rank'"),
                 (dict(rank="clade"), "unknown rank 'clade'"),
                 (dict(higher_than="genus", save_predictable_noranks=True), "goes with lower_than"),
                 (dict(save_predictable_noranks=True), "goes with lower_than")]
        for options, message in cases:
            with self.subTest(options=options):
                with self.assertRaises(stol.InvalidRequestError) as caught:
                    RankFilter(**options)
                self.assertIn(message, caught.exception.message)
                self.assertIsInstance(caught.exception, ValueError)
        with self.assertRaises(TypeError):
            RankFilter(rank=[5])

    def test_badOptions_raiseBeforeAnyRequest(self):
        tx = stol.Taxonomy(socket_path="/nonexistent/stol-taxonomy.sock", timeout=5)
        with self.assertRaises(stol.InvalidRequestError):
            tx.filter([9606], lower_than="genius")


class FilterOnLineages(unittest.TestCase):
    """``Taxonomy.filter`` on answers made here (no daemon): what it keeps, drops and
    lists, whatever the service answers."""

    class FakeTaxonomy(stol.Taxonomy):
        def __init__(self, answers):
            self.release = None
            self.language = "en"
            self.answers = answers

        def _lineages(self, ids, view, language, form, names):
            for query in ids:
                yield self.answers[str(query).strip()]

    @staticmethod
    def lineage(query, ranks_, taxon_id, merged_from=None):
        ids = tuple(range(1, len(ranks_))) + (taxon_id,)
        names = tuple("n%d" % i for i in ids)
        return Lineage(query, Node(taxon_id, ranks_[-1], names[-1]), ids, tuple(ranks_), names, merged_from, None,
                       "bundled")

    def test_mergedId_isJudgedByTheTaxonItWentTo_andTheInputIsKeptAsGiven(self):
        answers = {
            "12": self.lineage("12", ["no rank", "superkingdom", "genus", "species"], 74109, merged_from=12),
            "9606": self.lineage("9606", ["no rank", "superkingdom", "genus", "species"], 9606),
            "9605": self.lineage("9605", ["no rank", "superkingdom", "genus"], 9605),
            "0": Lineage.unclassified("0", "bundled"),
            "424242": Lineage("424242", None, (), (), (), None, stol.NotFoundError("no taxon"), "bundled"),
        }
        tx = self.FakeTaxonomy(answers)
        kept = tx.filter([12, "9606", 9605, 0, " 0", 424242, 12], lower_than="genus")
        self.assertEqual(list(kept), [12, "9606", 12])
        self.assertEqual([t.id for t in kept.taxa], [74109, 9606, 74109])
        self.assertEqual(kept.not_found, [424242])
        self.assertEqual(kept.release, "bundled")


STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()  # a StackUnavailable in STACK: the daemon classes fail, the others run


def tearDownModule():
    _stack.module_teardown(STACK, TX)


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


def taxonkit_keeps(options, lineage_ranks):
    """taxonkit's filter, stated afresh from its documentation, on a taxon whose
    lineage has these ranks (root first, the taxon last)."""
    rank, above = lineage_ranks[-1], list(reversed(lineage_ranks[:-1]))
    bound_low = options.get("lower_than")
    bound_high = options.get("higher_than")
    equal = options.get("rank") or []
    equal = [r.strip() for r in ([equal] if isinstance(equal, str) else equal) for r in r.split(",")]
    discard = options.get("discard_noranks") or options.get("save_predictable_noranks")
    mine = ranks.level(rank)
    if mine is None:
        if not discard:
            return True
        if not options.get("save_predictable_noranks"):
            return False
        for ancestor in above:
            if ranks.level(ancestor) is not None:
                return not ranks.level(ancestor) < ranks.level(bound_low)
        return False
    if any(ranks.level(r) == mine for r in equal):
        return True
    if bound_low:
        return mine > ranks.level(bound_low)
    if bound_high:
        return mine < ranks.level(bound_high)
    return not equal


class AgainstTheService(unittest.TestCase):
    queries = None
    lineages = None

    @classmethod
    def setUpClass(cls):
        if not isinstance(STACK, _stack.Stack):
            raise STACK
        if AgainstTheService.queries is None:
            ids = _samples.sample_ids(TX, per_rank=10)
            names = [lineage.taxon.name for lineage in TX.lineage(ids[:40], ranks="all") if lineage.found]
            queries = [str(i) for i in ids] + names + ["0", "no such taxon", "999999999"]
            queries += random.Random(5).sample(queries, 30)  # repeats
            AgainstTheService.queries = queries
            AgainstTheService.lineages = list(TX.lineage(queries, ranks="all"))

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
                            if l.found and l.taxon.id and taxonkit_keeps(options, l.ranks)]
                self.assertEqual(list(zip(kept, (t.id for t in kept.taxa))), expected)
                self.assertEqual(kept.not_found, [q for q, l in zip(self.queries, self.lineages) if not l.found])
                self.assertIn("no such taxon", kept.not_found)
                self.assertNotIn("0", kept)
                self.assertNotIn("0", kept.not_found)
                self.assertTrue(kept.release)
                self.assertLess(len(kept), len(self.queries))

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
        self.assertIsNotNone(first, "9606 (Homo sapiens) is a species of every database the tests run on")
        self.assertEqual(first[0], 9606)
        self.assertLess(len(taken), 10000, "the whole input was read before the first answer")

    def test_inputsComeBackAsGiven_intsAsInts(self):
        kept = TX.filter([9606, "9606", " 9606 ", 0, 999999999], rank="species")
        self.assertEqual(list(kept), [9606, "9606", " 9606 "])
        self.assertEqual([type(k) for k in kept], [int, str, str])
        self.assertEqual(kept.not_found, [999999999])

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
