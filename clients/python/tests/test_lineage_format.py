"""``stol.LineageFormat`` and ``Taxonomy.lineage_format``: the port of the Swift
client's ``LineageFormat`` (taxonkit-style templates). The template rules on
hand-written lineages of NCBI before and after 2025 (superkingdom and domain,
Viruses as an ``acellular root`` with a realm), and, against the real daemons, the
same text as ``stol-client lineage --ranks all --format`` for ids of every rank the
served database has."""

from __future__ import annotations

import os
import re
import unittest

import _samples
import _stack

import stol
from stol.answers import Lineage, Node
from stol.lineage_format import DEFAULT_FILL, PLACEHOLDERS, LineageFormat

#: The lion as NCBI wrote it in 2024 (``superkingdom``), ranks="all".
LION_2024 = [("no rank", "root"), ("no rank", "cellular organisms"), ("superkingdom", "Eukaryota"),
             ("clade", "Opisthokonta"), ("kingdom", "Metazoa"), ("phylum", "Chordata"), ("class", "Mammalia"),
             ("order", "Carnivora"), ("suborder", "Feliformia"), ("family", "Felidae"), ("subfamily", "Pantherinae"),
             ("genus", "Panthera"), ("species", "Panthera leo")]
#: The same in 2025's spellings: ``cellular root``, ``domain``.
LION_2025 = [("no rank", "root"), ("cellular root", "cellular organisms"), ("domain", "Eukaryota")] + LION_2024[3:]
#: SARS-CoV-2 in 2025: Viruses an ``acellular root``, the realm Riboviria, a species
#: binomial, the virus itself of no rank.
SARS_2025 = [("no rank", "root"), ("acellular root", "Viruses"), ("realm", "Riboviria"), ("kingdom", "Orthornavirae"),
             ("phylum", "Pisuviricota"), ("class", "Pisoniviricetes"), ("order", "Nidovirales"),
             ("suborder", "Cornidovirineae"), ("family", "Coronaviridae"), ("subfamily", "Orthocoronavirinae"),
             ("genus", "Betacoronavirus"), ("subgenus", "Sarbecovirus"), ("species", "Betacoronavirus pandemicum"),
             ("no rank", "Severe acute respiratory syndrome coronavirus 2")]
#: E. coli K-12 MG1655 (2024): a bacterium without kingdom, a strain under a strain.
MG1655 = [("no rank", "root"), ("no rank", "cellular organisms"), ("superkingdom", "Bacteria"),
          ("phylum", "Pseudomonadota"), ("class", "Gammaproteobacteria"), ("order", "Enterobacterales"),
          ("family", "Enterobacteriaceae"), ("genus", "Escherichia"), ("species", "Escherichia coli"),
          ("strain", "Escherichia coli K-12"), ("strain", "Escherichia coli str. K-12 substr. MG1655")]
#: A subspecies (Treponema pallidum subsp. pallidum).
SUBSPECIES = [("no rank", "root"), ("no rank", "cellular organisms"), ("superkingdom", "Bacteria"),
              ("phylum", "Spirochaetota"), ("class", "Spirochaetia"), ("order", "Spirochaetales"),
              ("family", "Treponemataceae"), ("genus", "Treponema"), ("species", "Treponema pallidum"),
              ("subspecies", "Treponema pallidum subsp. pallidum")]

SEVEN = "{k};{p};{c};{o};{f};{g};{s}"
EVERY = "{k}|{r}|{K}|{p}|{c}|{o}|{f}|{g}|{s}|{S}|{t}"


class Templates(unittest.TestCase):
    def test_sevenRanks_takeTheirNames_superkingdomAndDomainAlike(self):
        expected = "Eukaryota;Chordata;Mammalia;Carnivora;Felidae;Panthera;Panthera leo"
        self.assertEqual(LineageFormat(SEVEN).format(LION_2024), expected)
        self.assertEqual(LineageFormat(SEVEN).format(LION_2025), expected)

    def test_acellularRoot_isTheDomain_andTheRealmHasItsOwnPlaceholder(self):
        text = LineageFormat(EVERY).format(SARS_2025)
        self.assertEqual(text, "Viruses|Riboviria|Orthornavirae|Pisuviricota|Pisoniviricetes|Nidovirales|"
                               "Coronaviridae|Betacoronavirus|Betacoronavirus pandemicum||")

    def test_rankNames_andLetters_standForTheSamePlaceholder(self):
        layout = LineageFormat("{domain}/{superkingdom}/{d}/{k}/{kingdom}/{K}/{division}/{phylum}/{genus}/"
                               "{species}/{subspecies}/{S}/{strain}/{t}/{realm}/{r}/{class}/{order}/{family}")
        self.assertEqual(layout.format(SUBSPECIES),
                         "Bacteria/Bacteria/Bacteria/Bacteria///Spirochaetota/Spirochaetota/Treponema/"
                         "Treponema pallidum/Treponema pallidum subsp. pallidum/Treponema pallidum subsp. pallidum///"
                         "//Spirochaetia/Spirochaetales/Treponemataceae")

    def test_aRankTwice_theLowestCounts(self):
        self.assertEqual(LineageFormat("{s}|{t}").format(MG1655),
                         "Escherichia coli|Escherichia coli str. K-12 substr. MG1655")
        self.assertEqual(LineageFormat("{g}").format([("genus", "Upper"), ("subgenus", "x"), ("genus", "Lower")]),
                         "Lower")

    def test_textAroundPlaceholders_isCopied_andALoneClosingBraceIsText(self):
        self.assertEqual(LineageFormat("<{g}> } {s}}").format(LION_2024), "<Panthera> } Panthera leo}")
        self.assertEqual(LineageFormat("no placeholder at all").format(LION_2024), "no placeholder at all")
        self.assertEqual(LineageFormat("").format(LION_2024), "")

    def test_rankSpellings_areExact(self):
        # The service writes NCBI's ranks in lower case; another spelling fills nothing.
        self.assertEqual(LineageFormat("{g}|{k}").format([("Genus", "A"), ("Superkingdom", "B")]), "|")
        self.assertEqual(LineageFormat("{p}").format([("division", "Anthophyta")]), "Anthophyta")

    def test_missingRank_isEmpty_withoutFill(self):
        self.assertEqual(LineageFormat("{K};{p};{S};{t}").format(MG1655),
                         ";Pseudomonadota;;Escherichia coli str. K-12 substr. MG1655")

    def test_defaultFill_namesTheNearestPlaceholderAbove_notTheNearestNode(self):
        layout = LineageFormat("{K};{c};{g};{S}", fill=True)
        self.assertEqual(layout.format(MG1655), "unclassified Bacteria kingdom;Gammaproteobacteria;Escherichia;"
                                                "unclassified Escherichia coli subspecies")
        # Without genus the fill names the family, not the subfamily below it.
        no_genus = [pair for pair in LION_2024 if pair[0] != "genus"]
        self.assertEqual(LineageFormat("{g}", fill=True).format(no_genus), "unclassified Felidae genus")
        self.assertEqual(LineageFormat("{g}", fill=DEFAULT_FILL).format(no_genus), "unclassified Felidae genus")

    def test_fills_doNotChain_aMissingRankBelowAnotherNamesTheRealOneAbove(self):
        gaps = [("superkingdom", "Bacteria"), ("phylum", "P"), ("family", "F")]
        self.assertEqual(LineageFormat("{c};{o};{f}", fill=True).format(gaps),
                         "unclassified P class;unclassified P order;F")

    def test_domainAndRealmAtOneLevel_theDomainIsHigherForTheKingdom(self):
        without_kingdom = [pair for pair in SARS_2025 if pair[0] != "kingdom"]
        self.assertEqual(LineageFormat("{K}", fill=True).format(without_kingdom), "unclassified Viruses kingdom")
        # The realm alone (no domain) is then the one above.
        only_realm = [pair for pair in without_kingdom if pair[0] != "acellular root"]
        self.assertEqual(LineageFormat("{K}", fill=True).format(only_realm), "unclassified Riboviria kingdom")

    def test_fillNamingHigher_staysEmptyAtTheTop_andOnTheEmptyLineage(self):
        self.assertEqual(LineageFormat("{k}|{r}|{p}", fill=True).format(SUBSPECIES),
                         "Bacteria||Spirochaetota")  # the realm is at the top: nothing above it
        self.assertEqual(LineageFormat(SEVEN, fill=True).format([]), ";;;;;;")
        self.assertEqual(LineageFormat(SEVEN, fill=True, prefix_ranks=True).format([]), ";;;;;;")

    def test_fillTemplate_ofItsOwn_withAndWithoutHigher(self):
        layout = LineageFormat("{K}|{S}", fill="{rank} under {higher_rank} {higher}")
        self.assertEqual(layout.format(MG1655),
                         "kingdom under domain Bacteria|subspecies under species Escherichia coli")
        self.assertEqual(LineageFormat("{k};{r};{s}", fill="NA").format([]), "NA;NA;NA")
        self.assertEqual(LineageFormat("{r}", fill="no {rank}").format(LION_2024), "no realm")

    def test_prefixRanks_onNonEmptyFields_fillsIncluded(self):
        layout = LineageFormat(EVERY, fill=True, prefix_ranks=True)
        self.assertEqual(layout.format(SUBSPECIES),
                         "d__Bacteria||k__unclassified Bacteria kingdom|p__Spirochaetota|c__Spirochaetia|"
                         "o__Spirochaetales|f__Treponemataceae|g__Treponema|s__Treponema pallidum|"
                         "t__Treponema pallidum subsp. pallidum|"
                         "T__unclassified Treponema pallidum subsp. pallidum strain")
        self.assertEqual(LineageFormat("{r};{k}", prefix_ranks=True).format(SARS_2025), "r__Riboviria;d__Viruses")
        self.assertEqual([p.prefix for p in PLACEHOLDERS],
                         ["d__", "r__", "k__", "p__", "c__", "o__", "f__", "g__", "s__", "t__", "T__"])

    def test_thePlaceholders_areTheSwiftClientsTable(self):
        """LineageFormat.swift is the other copy: both must fill templates alike."""
        path = os.path.join(_stack.REPOSITORY, "Sources", "STOLModel", "LineageFormat.swift")
        with open(path, encoding="utf-8") as f:
            source = f.read()
        rows = re.findall(r'\.init\(letter: "(.)", name: "([^"]*)", ranks: \[([^\]]*)\], prefix: "([^"]*)", '
                          r'level: (\d+),\s*aliases: \[([^\]]*)\]\)', source)
        swift = [(letter, name, tuple(re.findall(r'"([^"]*)"', spellings)), prefix, int(level),
                  tuple(re.findall(r'"([^"]*)"', aliases))) for letter, name, spellings, prefix, level, aliases in rows]
        self.assertEqual(swift, [(p.letter, p.name, p.ranks, p.prefix, p.level, p.aliases) for p in PLACEHOLDERS])
        self.assertIn('defaultFill = "%s"' % DEFAULT_FILL, source)

    def test_aLineageObject_isFormattedFromItsRanksAndNames(self):
        ids = tuple(range(1, len(LION_2025) + 1))
        lineage = Lineage("9689", Node(9689, "species", "Panthera leo"), ids, tuple(r for r, _ in LION_2025),
                          tuple(n for _, n in LION_2025), None, None, "bundled")
        self.assertEqual(LineageFormat(SEVEN).format(lineage), LineageFormat(SEVEN).format(LION_2025))
        self.assertEqual(LineageFormat(SEVEN, fill="x").format(Lineage.unclassified("0", "")), "x;x;x;x;x;x;x")
        ids_only = Lineage("9689", None, ids, None, None, None, None, "")
        with self.assertRaises(ValueError):
            LineageFormat(SEVEN).format(ids_only)

    def test_badTemplates_areTypedErrors_withTheClientsSentences(self):
        cases = [("{x};{p}", None, "unknown placeholder {x}"), ("{p", None, "a '{' without its '}'"),
                 ("{pp}", None, "unknown placeholder {pp}"), ("{}", None, "unknown placeholder {}"),
                 ("{{k}", None, "unknown placeholder {{k}"), ("{Domain}", None, "unknown placeholder {Domain}"),
                 ("{k}", "{foo}", "unknown variable {foo} in the fill template"),
                 ("{k}", "{higher", "a '{' without its '}'"), ("{k}", "{k}", "unknown variable {k}")]
        for template, fill, message in cases:
            with self.subTest(template=template, fill=fill):
                with self.assertRaises(stol.InvalidRequestError) as caught:
                    LineageFormat(template, fill=fill)
                self.assertIn(message, caught.exception.message)
                self.assertIsInstance(caught.exception, ValueError)

    def test_badTemplate_raisesBeforeAnyRequest(self):
        # No service listens there: a request would raise ServiceNotRunningError instead.
        tx = stol.Taxonomy(socket_path="/nonexistent/stol-taxonomy.sock", timeout=5)
        with self.assertRaises(stol.InvalidRequestError):
            tx.lineage_format([9606, 9689], "{k};{nope}")
        with self.assertRaises(stol.InvalidRequestError):
            tx.lineage_format(9606, SEVEN, fill="{where}")
        with self.assertRaises(stol.InvalidRequestError):
            tx.lineage_format([9606], SEVEN, ranks="some")


STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()  # a StackUnavailable in STACK: the daemon classes fail, the others run


def tearDownModule():
    _stack.module_teardown(STACK, TX)


class AgainstTheClient(unittest.TestCase):
    """The same ids through ``Taxonomy.lineage_format`` and ``stol-client lineage --ranks
    all --no-header --format``: the text is the client's 5th column, the errors its
    codes, Kraken's 0 its ``0 0 no rank unclassified`` line."""

    queries = None

    @classmethod
    def setUpClass(cls):
        if not isinstance(STACK, _stack.Stack):
            raise STACK
        if AgainstTheClient.queries is None:
            ids = _samples.sample_ids(TX)
            names = [lineage.taxon.name for lineage in TX.lineage(ids[:60], ranks="all") if lineage.found]
            queries = [str(i) for i in ids] + names + ["0", "no such taxon", "0", "-5"]
            AgainstTheClient.queries = queries

    def compare(self, template, *options, **kwargs):
        result = STACK.cli("lineage", "--ranks", "all", "--no-header", "--format", template, *options,
                           stdin="".join(q + "\n" for q in self.queries))
        self.assertIn(result.returncode, (0, 3), result.stderr)
        lines = result.stdout.split("\n")
        self.assertEqual(lines[-1], "")
        lines = lines[:-1]
        answers = list(TX.lineage_format(self.queries, template, **kwargs))
        self.assertEqual(len(answers), len(self.queries))
        self.assertEqual(len(lines), len(self.queries))
        checked = {"found": 0, "error": 0, "unclassified": 0}
        for query, answer, line in zip(self.queries, answers, lines):
            columns = line.split("\t")
            with self.subTest(query=query, line=line):
                self.assertEqual(answer.query, query)
                self.assertEqual(columns[0], query)
                if answer.error is not None:
                    self.assertEqual(columns[1], answer.error.code_name)
                    self.assertEqual(answer.text, "")
                    checked["error"] += 1
                    continue
                self.assertEqual(len(columns), 5)
                self.assertEqual(columns[1:4], [str(answer.taxon.id), answer.taxon.rank, answer.taxon.name])
                self.assertEqual(answer.text, columns[4])
                self.assertEqual(str(answer), columns[4])
                self.assertTrue(answer.release)
                checked["unclassified" if query == "0" else "found"] += 1
        self.assertGreater(checked["found"], 50)
        self.assertGreater(checked["error"], 2)
        self.assertEqual(checked["unclassified"], 2)
        return answers

    def test_sevenRanks_asTheClientWritesThem(self):
        self.compare(SEVEN)

    def test_everyPlaceholder_defaultFill_prefixes_asTheClientWritesThem(self):
        answers = self.compare(EVERY, "--fill-missing", "--prefix-ranks", fill=True, prefix_ranks=True)
        self.assertTrue(any("unclassified" in a.text for a in answers))

    def test_fillTemplate_withHigherRank_asTheClientWritesIt(self):
        fill = "NA {rank} < {higher_rank} {higher}"
        self.compare("{domain}/{superkingdom}/{realm}/{kingdom}/{division}/{genus}/{species}/{subspecies}/{strain}",
                     "--fill-template", fill, fill=fill)

    def test_fillWithoutHigher_fillsEvenTheTop_asTheClientWritesIt(self):
        self.compare("{k}{r}{K}:{s}:{S}:{t}", "--fill-template", "-", "--prefix-ranks", fill="-", prefix_ranks=True)

    def test_oneQuery_isOneAnswer_andRaisesWhenItNamesNothing(self):
        one = TX.lineage_format(9606, SEVEN)
        self.assertIsInstance(one, stol.FormattedLineage)
        self.assertEqual(one.text, LineageFormat(SEVEN).format(TX.lineage(9606, ranks="all")))
        with self.assertRaises(stol.NotFoundError):
            TX.lineage_format(999999999, SEVEN)
        zero = TX.lineage_format(0, "{k}:{s}", fill="?")
        self.assertEqual((zero.text, zero.taxon.id, zero.error), ("?:?", 0, None))

    def test_keepLineage_theLineageTravelsWithTheText(self):
        for answer, lineage in zip(TX.lineage_format([9606, 999999999, 0], SEVEN),
                                   TX.lineage([9606, 999999999, 0], ranks="all")):
            self.assertEqual(answer.lineage.ids, lineage.ids)
            self.assertEqual(answer.lineage.names, lineage.names)
            self.assertEqual(answer.release, lineage.release)


if __name__ == "__main__":
    unittest.main()
