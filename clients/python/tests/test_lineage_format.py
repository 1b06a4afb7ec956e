"""``Taxonomy.lineage_format`` against the real daemons: lineages in taxonkit-style
templates, filled by the service (``lineage_batch``'s ``template``): the same text as
``stol-client lineage --ranks all --format`` for ids of every rank the served database
has, Kraken's 0, one query and many, and bad templates refused by the service before
any input is read. The template rules themselves are pinned on the server
(``LineageTemplateTests``)."""

from __future__ import annotations

import unittest

import _samples
import _stack

import stol

SEVEN = "{k};{p};{c};{o};{f};{g};{s}"
EVERY = "{k}|{r}|{K}|{p}|{c}|{o}|{f}|{g}|{s}|{S}|{t}"

STACK = None
TX = None


def setUpModule():
    global STACK, TX
    STACK, TX = _stack.module_setup()  # a StackUnavailable in STACK: the daemon classes fail, the others run


def tearDownModule():
    _stack.module_teardown(STACK, TX)


class Parameters(unittest.TestCase):
    def test_aLineageFormat_holdsTheTemplateAndItsOptions(self):
        layout = stol.LineageFormat(SEVEN, fill=True, prefix_ranks=True)
        self.assertEqual(layout, stol.LineageFormat(SEVEN, True, True))
        self.assertNotEqual(layout, stol.LineageFormat(SEVEN))
        self.assertEqual(len({layout, stol.LineageFormat(SEVEN, True, True)}), 1)
        with self.assertRaises(TypeError):
            stol.LineageFormat(5)
        with self.assertRaises(TypeError):
            stol.LineageFormat(SEVEN, fill=3)

    def test_aBadRanksValue_raisesBeforeAnyRequest(self):
        tx = stol.Taxonomy(socket_path="/nonexistent/stol-taxonomy.sock", timeout=5)
        with self.assertRaises(stol.InvalidRequestError):
            tx.lineage_format([9606], SEVEN, ranks="some")
        with self.assertRaises(TypeError):
            tx.lineage_format([9606], stol.LineageFormat(SEVEN), fill=True)


class DaemonTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not isinstance(STACK, _stack.Stack):
            raise STACK


class Templates(DaemonTest):
    def test_badTemplates_areRaisedByTheService_beforeAnyInputIsRead(self):
        cases = [("{x};{p}", None, "unknown placeholder {x}", {"field": "format", "placeholder": "x"}),
                 ("{p", None, "a '{' without its '}'", {"field": "format"}),
                 ("{Domain}", None, "unknown placeholder {Domain}", {"field": "format", "placeholder": "Domain"}),
                 ("{k}", "{foo}", "unknown variable {foo} in the fill template", {"field": "fill", "variable": "foo"}),
                 ("{k}", "{higher", "a '{' without its '}'", {"field": "fill"})]
        for template, fill, message, details in cases:
            read = []

            def inputs():
                read.append(1)
                yield 9606
            with self.subTest(template=template, fill=fill):
                with self.assertRaises(stol.InvalidRequestError) as caught:
                    TX.lineage_format(inputs(), template, fill=fill)
                self.assertIn(message, caught.exception.message)
                self.assertEqual(caught.exception.details, details)
                self.assertIsInstance(caught.exception, ValueError)
                self.assertEqual(read, [], "no input was read")
                with self.assertRaises(stol.InvalidRequestError):
                    TX.lineage_format(9606, template, fill=fill)

    def test_oneQuery_isOneAnswer_theSameAsInABatch_andRaisesWhenItNamesNothing(self):
        one = TX.lineage_format(9606, EVERY, fill=True, prefix_ranks=True)
        self.assertIsInstance(one, stol.FormattedLineage)
        [batched] = list(TX.lineage_format([9606], EVERY, fill=True, prefix_ranks=True))
        self.assertEqual(one, batched)
        self.assertTrue(one.text.startswith("d__Eukaryota|"), one.text)
        self.assertEqual(one.lineage.ids, TX.lineage(9606, ranks="all").ids)
        with self.assertRaises(stol.NotFoundError):
            TX.lineage_format(999999999, SEVEN)
        zero = TX.lineage_format(0, "{k}:{s}", fill="?")
        self.assertEqual((zero.text, zero.taxon.id, zero.error), ("?:?", 0, None))
        self.assertEqual(TX.lineage_format("0", SEVEN, fill=True).text, ";;;;;;", "a fill naming {higher}: nothing above")

    def test_aLineageFormat_asTemplate_andAnEmptyFill_fillNothing(self):
        layout = stol.LineageFormat(EVERY, fill="", prefix_ranks=True)
        self.assertEqual([f.text for f in TX.lineage_format([9606, 0], layout)],
                         [f.text for f in TX.lineage_format([9606, 0], EVERY, prefix_ranks=True)])
        self.assertEqual(TX.lineage_format(0, layout).text, "||||||||||")

    def test_keepLineage_theLineageTravelsWithTheText(self):
        for answer, lineage in zip(TX.lineage_format([9606, 999999999, 0], SEVEN),
                                   TX.lineage([9606, 999999999, 0], ranks="all")):
            self.assertEqual(answer.lineage.ids, lineage.ids)
            self.assertEqual(answer.lineage.names, lineage.names)
            self.assertEqual(answer.release, lineage.release)
            self.assertEqual(answer.query, lineage.query)
        self.assertEqual([f.found for f in TX.lineage_format([9606, 999999999, 0], SEVEN)], [True, False, True])


class AgainstTheClient(DaemonTest):
    """The same ids through ``Taxonomy.lineage_format`` and ``stol-client lineage --ranks
    all --no-header --format``: the text is the client's 5th column, the errors its
    codes, Kraken's 0 its ``0 0 no rank unclassified`` line."""

    queries = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
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

    def test_rankIds_asTheClientWritesThem_eachTheIdOfTheNamesFormsTaxon(self):
        answers = self.compare(SEVEN, "--ids", rank_ids=True)
        names = {a.query: a.text for a in TX.lineage_format(self.queries, SEVEN)}
        checked = 0
        for answer in answers:
            if not answer.found or answer.query == "0":
                continue
            for taxon_id, name in zip(answer.text.split(";"), names[answer.query].split(";")):
                self.assertEqual(taxon_id == "", name == "", answer.query)
                if taxon_id:
                    self.assertEqual(TX.taxon(int(taxon_id)).name, name)
                    checked += 1
        self.assertGreater(checked, 100)
        with self.assertRaises(ValueError):
            TX.lineage_format(9606, SEVEN, fill=True, rank_ids=True)

    def test_mainRanks_asTheClientWritesThem(self):
        result = STACK.cli("lineage", "--no-header", "--format", EVERY, "--fill-missing",
                           stdin="".join(q + "\n" for q in self.queries))
        lines = result.stdout.splitlines()
        answers = list(TX.lineage_format(self.queries, EVERY, fill=True, ranks="main"))
        self.assertEqual([a.text if a.found else None for a in answers],
                         [line.split("\t")[4] if len(line.split("\t")) == 5 else None for line in lines])


if __name__ == "__main__":
    unittest.main()
