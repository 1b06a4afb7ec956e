"""``stol.trees`` and ``Taxonomy.annotate``: ete4's ``NCBITaxa.annotate_tree`` on a
user's Newick tree. The reader and writer on hand-written trees (quotes, lengths as
typed, NHX, comments, malformed input with its position, a caterpillar 100,000
levels deep); and against the real daemons, which say what every node means (the
taxon a label names, the common ancestor an inner node gets: ``lineage_batch`` and
``annotate_tree``): each node's properties, inner nodes, unknown leaves untouched byte
for byte, support values, NHX merged and escaped as ete4 writes it, trees too large
for one request sent in parts (a caterpillar, a star); over trees of ids and names of every rank the served
database has, and the same text as ``stol-client annotate``. ete4 itself reading our
text back and writing the same bytes is peers_ete4.py, run by `make bench-peers`."""

from __future__ import annotations

import random
import unittest

import _samples
import _stack

import stol
from stol.taxonomy import _is_number
from stol.trees import NewickNode, nhx_value, parse_newick, quote_label, write_newick


BRIEF_TREE = "((9606,9598)207598,(10090,'Rattus norvegicus'):0.5,unknownleaf[&&NHX:x=1]);"


def entries(query):
    """(id, rank, name) of each node of the lineage of ``query`` on the whole tree, root
    first, the taxon last, as the service answers it."""
    lineage = TX.lineage(query, ranks="all")
    return list(zip(lineage.ids, lineage.ranks, lineage.names))


def common(*queries):
    """The entries of the deepest node on every query's lineage (the test's own
    reference for an inner node's taxon)."""
    lineages = [entries(q) for q in queries]
    shared = [e for e in lineages[0] if all(e in other for other in lineages[1:])]
    return lineages[0][:lineages[0].index(shared[-1]) + 1]


def common_name(entries_):
    return TX.taxon(entries_[-1][0]).common_name


def expected_nhx(entries_, own=()):
    """The NHX text ete4 writes for a node annotated with this lineage."""
    pairs = {key: nhx_value(value) for key, value in own}
    pairs.update({"taxid": str(entries_[-1][0]), "sci_name": nhx_value(entries_[-1][2]),
                  "common_name": nhx_value(common_name(entries_)), "rank": nhx_value(entries_[-1][1]),
                  "lineage": "|".join(str(e[0]) for e in entries_), "named_lineage": nhx_value([e[2] for e in entries_])})
    return "[&&NHX:" + ":".join("%s=%s" % item for item in sorted(pairs.items())) + "]"


class RecordingTaxonomy(stol.Taxonomy):
    """A Taxonomy that records the queries of its lineage batches and its requests by
    operation, then asks the service as any other."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent = []
        self.calls = []

    def _lineages(self, ids, *args, **kwargs):
        ids = list(ids)
        self.sent.extend(q for q in ids if isinstance(q, str))  # the labels' queries (ancestors go as ints)
        return super()._lineages(ids, *args, **kwargs)

    def _call(self, field, release=None, **body):
        self.calls.append(field)
        return super()._call(field, release, **body)


class Reading(unittest.TestCase):
    def test_labelsQuotesLengthsAndNHX_areRead_commentsSkipped(self):
        root = parse_newick(" ( 'a b':1.50 [a comment], \"c\"\"d\"[&&NHX:x=1:y=two],'it''s' ,\n"
                            "  Homo sapiens : 2e-3 )inner:0[&&NHX:s=9] [done];\n")
        self.assertEqual([n.label for n in root.traverse()], ["inner", "a b", 'c"d', "it's", "Homo sapiens"])
        self.assertEqual([n.length for n in root.traverse()], ["0", "1.50", None, None, "2e-3"])
        self.assertEqual(root.children[1].nhx, [("x", "1"), ("y", "two")])
        self.assertEqual(root.nhx, [("s", "9")])
        self.assertEqual([n.is_leaf for n in root.traverse()], [False, True, True, True, True])
        self.assertEqual(parse_newick("A;").label, "A")
        self.assertEqual([n.label for n in parse_newick("(,(,));").traverse()], [""] * 5)
        self.assertEqual(parse_newick("(a:-1,b:+.5e+3,c:inf,d:NaN);").children[1].length, "+.5e+3")

    def test_nhxOtherThanEte4s_isAComment_andEmptyFieldsAreNothing(self):
        root = parse_newick("(a[&BEAST=1][&&NHX:k=v::=e],b[&&NHX]);")
        self.assertEqual(root.children[0].nhx, [("k", "v"), ("", "e")])
        self.assertEqual(root.children[1].nhx, [])

    def test_unchangedNodes_areWrittenBackAsTheTextHadThem(self):
        for text in ["((A:0.1,B:0.2)95:0.3,('Homo sapiens',C[&&NHX:k=v]):1,D);", "A;", "(,(,));",
                     "('unneeded':1.0,'x''y' [kept comment]:2[&&NHX:a=(1)])'r':0.50;"]:
            self.assertEqual(write_newick(parse_newick(text)), text)
        self.assertEqual(write_newick(parse_newick(" ( A , B )\n[done] ;\n[after]")), "(A,B);")

    def test_nodesWithoutSource_areWrittenFromTheirParts_quotedOnlyWhereNeeded(self):
        tree = NewickNode(children=[NewickNode("Homo sapiens", "0.5"), NewickNode("Homo_sapiens", nhx=[("k", "v")]),
                                    NewickNode("it's"), NewickNode('"quoted'), NewickNode("O157:H7,[x];(y)")],
                          label="root")
        self.assertEqual(write_newick(tree),
                         "('Homo sapiens':0.5,Homo_sapiens[&&NHX:k=v],'it''s','\"quoted','O157:H7,[x];(y)')root;")

    def test_quotedLabels_readBackAsWritten_forAnyCharacters(self):
        rng = random.Random(11)
        alphabet = "ab Z_\t()[]':;,\"&=|é-"
        for _ in range(500):
            labels = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12))).strip() or "x"
                      for _ in range(3)]
            tree = NewickNode(children=[NewickNode(label) for label in labels[:2]], label=labels[2])
            text = write_newick(tree)
            self.assertEqual([n.label for n in parse_newick(text).traverse()], [labels[2]] + labels[:2], text)
        self.assertEqual(quote_label("Escherichia coli O157:H7"), "'Escherichia coli O157:H7'")
        self.assertEqual(quote_label("Homo_sapiens"), "Homo_sapiens")
        self.assertEqual(quote_label(""), "")

    def test_nhxValues_escapeWhatEte4Escapes(self):
        self.assertEqual(nhx_value("a:b;c(d)e,f[g]h=i|j k"), "a_b_c_d_e_f_g_h_i|j k")
        self.assertEqual(nhx_value([1, 131567, 2]), "1|131567|2")
        self.assertEqual(nhx_value(["root", "E. coli O157:H7"]), "root|E. coli O157_H7")
        self.assertEqual(nhx_value(""), "")

    def test_malformedTrees_areNewickErrors_atTheirPosition(self):
        cases = [("((a,b);", 6, "no ')' for the '(' at position 0"), ("(a,b)", 5, "does not end with ';'"),
                 ("(a,b));", 5, "a ')' without its '('"), ("(a,b); (c,d);", 7, "text after the ';'"),
                 ("('a,b);", 1, "without its closing quote"), ("(a[&&NHX:x=1,b);", 2, "a '[' without its ']'"),
                 ("(a:x1,b);", 3, "not a number"), ("(a:,b);", 3, "without a branch length"),
                 ("(a[&&NHX:novalue],b);", 2, "without 'key='"), ("a,b;", 1, "a ',' outside parentheses"),
                 ("a(b);", 1, "unexpected '('"), ("('a'b,c);", 4, "text after a quoted label"),
                 ("", 0, "does not end with ';'"), ("(a,\nb [x;", 6, "a '[' without its ']'")]
        for text, position, message in cases:
            with self.subTest(text=text):
                with self.assertRaises(stol.NewickError) as caught:
                    parse_newick(text)
                self.assertIn(message, caught.exception.message)
                self.assertEqual(caught.exception.position, position)
                self.assertEqual(caught.exception.details["position"], str(position))
                self.assertIsInstance(caught.exception, ValueError)
        with self.assertRaises(stol.NewickError) as caught:
            parse_newick("(a,\nb [x;")
        self.assertEqual((caught.exception.details["line"], caught.exception.details["column"]), ("2", "3"))

    def test_aCaterpillar100000Deep_parsesAndWritesWithoutRecursion(self):
        depth = 100_000
        text = "(x," * depth + "y" + ")" * depth + ";"
        root = parse_newick(text)
        self.assertEqual(sum(1 for _ in root.traverse()), 2 * depth + 1)
        self.assertEqual(write_newick(root), text)


class Offline(unittest.TestCase):
    def test_aTreeWithoutLabels_asksNothing(self):
        tx = stol.Taxonomy(socket_path="/nonexistent/stol-taxonomy.sock", timeout=5)  # a request would raise
        text = tx.annotate("((,):1,)[&&NHX:k=v];")
        self.assertEqual((text, text.not_found, text.release), ("((,):1,)[&&NHX:k=v];", [], ""))

    def test_malformedTree_andABadLabelChoice_raiseBeforeAnyRequest(self):
        tx = stol.Taxonomy(socket_path="/nonexistent/stol-taxonomy.sock", timeout=5)
        with self.assertRaises(stol.NewickError):
            tx.annotate("((9606,9598);")
        with self.assertRaises(stol.InvalidRequestError):
            tx.annotate("A;", label="taxid")


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

    def recording(self):
        tx = RecordingTaxonomy(runtime_dir=STACK.runtime, timeout=120)
        self.addCleanup(tx.close)
        return tx


class Annotation(DaemonTest):
    """``Taxonomy.annotate``'s text, node by node, from the service's answers."""

    def test_anUnquotedUnderscore_isABlank_aQuotedOne_isWritten(self):
        text = TX.annotate("(Panthera_leo,'Panthera_tigris',Panthera_onca);")
        self.assertEqual(text.not_found, ["Panthera_tigris"], "quoted: the underscore is one")
        leo, tigris, onca = text.tree.children
        self.assertEqual((leo.props["taxid"], onca.props["taxid"]), (9689, 9690))
        self.assertFalse(tigris.props)
        self.assertEqual(leo.label, "Panthera_leo", "written back as it was")

    def test_anInnerLabelThatIsNoAncestorOfItsLeaves_isWarned_andKept(self):
        with self.assertWarnsRegex(UserWarning, "1 inner label names a taxon that is not an ancestor.*'Panthera' \\(taxon 9688\\)"):
            text = TX.annotate("((9606,9598)Panthera,(9689,9694)Panthera);")
        self.assertEqual(text.not_ancestors, ["Panthera"])
        self.assertEqual(text.tree.children[0].props["taxid"], 9688, "the label's own taxon stays")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a right label warns of nothing
            self.assertEqual(TX.annotate("((9689,9694)Panthera,9681)Felidae;").not_ancestors, [])
        self.assertEqual(text, STACK.cli("annotate", stdin="((9606,9598)Panthera,(9689,9694)Panthera);").stdout.rstrip("\n"),
                         "the same text as stol-client annotate")

    def test_eachNode_getsItsTaxon_innerNodesTheirLeavesAncestor_unknownLeavesStayAsTheyWere(self):
        tx = self.recording()
        text = tx.annotate(BRIEF_TREE, internal_labels="taxa")  # its inner 207598 is a taxid, not a support value
        human, chimp, mouse, rat = entries("9606"), entries("9598"), entries("10090"), entries("Rattus norvegicus")
        murinae_node = "(10090%s,'Rattus norvegicus'%s):0.5%s" % (
            expected_nhx(mouse), expected_nhx(rat), expected_nhx(common("10090", "10116")))
        self.assertEqual(text, "((9606%s,9598%s)207598%s,%s,unknownleaf[&&NHX:x=1])%s;" % (
            expected_nhx(human), expected_nhx(chimp), expected_nhx(entries("207598")), murinae_node,
            expected_nhx(common("9606", "9598", "10090", "10116"))))
        self.assertEqual(text.not_found, ["unknownleaf"])
        self.assertTrue(text.release)
        self.assertEqual(sorted(tx.sent), sorted(["207598", "9606", "9598", "10090", "Rattus norvegicus",
                                                  "unknownleaf"]))
        self.assertIn("annotate_tree", tx.calls)
        root = common("9606", "9598", "10090", "10116")
        self.assertEqual(text.tree.props, {"taxid": root[-1][0], "sci_name": root[-1][2],
                                           "common_name": common_name(root), "rank": root[-1][1],
                                           "lineage": [e[0] for e in root], "named_lineage": [e[2] for e in root]})
        self.assertEqual(text.tree.children[2].props, {})

    def test_theNHXText_isExactlyWhatEte4Writes_forOneNode(self):
        text = TX.annotate("(9606,x);")
        self.assertIn("9606" + expected_nhx(entries("9606")), text)
        self.assertTrue(text.endswith(")%s;" % expected_nhx(entries("9606"))),
                        "one annotated leaf: the root's ancestor is that taxon")

    def test_unknownLeaves_untouchedByteForByte_withTheirQuotesCommentsAndNHX(self):
        leaves = ["'my leaf' [a comment]:0.10[&&NHX:k=v(1)]", "\"dq\"\"x\":1", "nobody", "'0'"]
        text = TX.annotate("(9606," + ",".join(leaves) + ");")
        for leaf in leaves:
            self.assertIn("," + leaf, text)
        self.assertEqual(text.not_found, ["my leaf", 'dq"x', "nobody", "0"])

    def test_innerLabels_areTaxaToo_unlessTheyAreSupportValues(self):
        tree = "((9606,9598)0.95,(10090,nobody)0.80:0.2,(x,y)z)1.00;"
        # Issue 34: by default a number on an inner node is a support value, and the caller is told.
        tx = self.recording()
        with self.assertWarnsRegex(UserWarning, "3 inner labels are numbers, read as support values"):
            tx.annotate(tree)
        self.assertNotIn("0.95", tx.sent)
        self.assertIn("z", tx.sent)
        tx = self.recording()
        text = tx.annotate(tree, internal_labels="taxa")
        self.assertIn("0.95", tx.sent)
        self.assertIn("z", tx.sent)
        self.assertEqual(text.not_found, ["nobody", "x", "y"], "inner labels that name nothing are not listed")
        self.assertEqual(text.tree.children[0].props["taxid"], common("9606", "9598")[-1][0])
        self.assertEqual(text.tree.children[1].props["taxid"], 10090, "the unknown leaf does not pull it up")
        self.assertEqual(text.tree.children[2].props, {}, "no annotated leaf below: left as it was")
        self.assertIn(",(x,y)z)", text)
        supported = self.recording()
        text = supported.annotate(tree, internal_support=True)
        self.assertEqual(sorted(supported.sent), sorted(["9606", "9598", "10090", "nobody", "x", "y"]))
        self.assertIn(")0.95[&&NHX:", text)
        self.assertIn(")0.80:0.2[&&NHX:", text)
        self.assertTrue(text.endswith(")1.00%s;" % expected_nhx(common("9606", "9598", "10090"))))

    def test_anInnerNodesOwnTaxon_isItsOwn_andItsParentCountsOnlyLeaves(self):
        # (human, chimp) labelled as the mouse: the node is the mouse, its parent the
        # ancestor of human, chimp and rat, not of mouse and rat.
        text = TX.annotate("((9606,9598)10090,10116);", internal_labels="taxa")
        self.assertEqual(text.tree.children[0].props["taxid"], 10090)
        self.assertEqual(text.tree.props["taxid"], common("9606", "9598", "10116")[-1][0])

    def test_labelChoice_writesTheNameOrTheId_onAnnotatedNodesOnly(self):
        homininae = common("9606", "9598")
        named = TX.annotate("('Homo sapiens',(9606,9598)0.95,nobody);", label="name")
        self.assertTrue(named.startswith("('Homo sapiens'[&&NHX:"))
        self.assertIn(")%s[&&NHX:" % quote_label(homininae[-1][2]), named)
        self.assertIn(",nobody)", named)
        self.assertTrue(named.endswith(")%s%s;" % (quote_label(homininae[-1][2]), expected_nhx(homininae))))
        ids = TX.annotate("('Homo sapiens',(9606,9598)0.95,nobody);", label="id")
        self.assertTrue(ids.startswith("(9606[&&NHX:"))
        self.assertIn(")%d[&&NHX:" % homininae[-1][0], ids)
        support = TX.annotate("((9606,9598)0.95,10090);", label="name", internal_support=True)
        self.assertIn(")%s[&&NHX:" % quote_label(homininae[-1][2]), support,
                      "the support value gives way to the name, as in stol-client")

    def test_ownNHX_isKept_oursReplaceTheSameKeys_allSortedAndEscapedAsEte4(self):
        text = TX.annotate("(9606[&&NHX:zz=1:taxid=old:aa=(b)],x[&&NHX:zz=(1)]);")
        own = [("zz", "1"), ("taxid", "old"), ("aa", "(b)")]
        self.assertIn("9606" + expected_nhx(entries("9606"), own), text)
        self.assertIn("aa=_b_:common_name=", text)
        self.assertIn(":taxid=9606:zz=1]", text)
        self.assertIn(",x[&&NHX:zz=(1)])", text, "an unknown leaf's own NHX is not touched")

    def test_eachDistinctLabel_isAskedOnce_andNeitherEmptyLabelsNorZero(self):
        tx = self.recording()
        text = tx.annotate("((9606,9606,0),(,'  '),Homo sapiens,9606);")
        self.assertEqual(sorted(tx.sent), ["9606", "Homo sapiens"])
        self.assertEqual(text.not_found, ["0", "  "])
        self.assertEqual(text.tree.children[0].props["taxid"], 9606)

    def test_aTreeWithoutTaxa_isWrittenAsItWas_withoutAskingForAncestors(self):
        tx = self.recording()
        text = tx.annotate("((a,b),(c,d)e)f;")
        self.assertEqual(text, "((a,b),(c,d)e)f;")
        self.assertEqual(text.not_found, ["a", "b", "c", "d"])
        self.assertNotIn("annotate_tree", tx.calls)

    def test_aCaterpillar30000Deep_isSentInParts_andAnnotatedWithoutRecursion(self):
        depth = 30_000
        text = "(9606," * depth + "9598" + ")" * depth + ";"
        tx = self.recording()
        result = tx.annotate(text)
        self.assertGreater(tx.calls.count("annotate_tree"), 1, "60,001 nodes do not fit one request")
        ancestor = common("9606", "9598")[-1][0]
        self.assertEqual(result.tree.props["taxid"], ancestor)
        deepest, chain = result.tree, 0
        while deepest.children:
            self.assertEqual(deepest.props["taxid"], ancestor)
            self.assertEqual(deepest.children[0].props["taxid"], 9606)
            deepest = deepest.children[-1]
            chain += 1
        self.assertEqual((chain, deepest.props["taxid"]), (depth, 9598))

    def test_aStarOf30000Leaves_isSentInGroups(self):
        leaves = [9606, 9598, 10090, 10116] * 7500
        tx = self.recording()
        result = tx.annotate("(" + ",".join(map(str, leaves)) + ");")
        self.assertGreater(tx.calls.count("annotate_tree"), 1, "30,001 nodes of 4 bytes do not fit one request")
        self.assertEqual(result.tree.props["taxid"], common("9606", "9598", "10090", "10116")[-1][0])
        self.assertEqual([child.props["taxid"] for child in result.tree.children], leaves)


def common_prefix(lineages):
    prefix = None
    for lineage in lineages:
        if prefix is None:
            prefix = list(lineage)
            continue
        length = 0
        while length < min(len(prefix), len(lineage)) and prefix[length] == lineage[length]:
            length += 1
        del prefix[length:]
    return prefix


class AgainstTheService(DaemonTest):
    def expectations(self, root, internal_support=False, internal_labels="auto"):
        """What each node (preorder) must carry, from lineage(ranks="all") and taxon()
        answers asked here one by one: the NHX text of its six properties, or None."""
        nodes = list(root.traverse())
        inner = "support" if internal_support else internal_labels

        def is_taxon(n):
            if not n.children:
                return bool(n.label)
            return bool(n.label) and (inner == "taxa" or (inner == "auto" and not _is_number(n.label)))
        labels = {n.label for n in nodes if is_taxon(n)}
        lineages = {}
        for label in labels:
            try:
                lineages[label] = TX.lineage(label, ranks="all")
            except (stol.NotFoundError, stol.InvalidRequestError, stol.TaxonDeletedError):
                pass
        named = {}
        for lineage in lineages.values():
            named.update(zip(lineage.ids, zip(lineage.names, lineage.ranks)))
        def below(node):
            stack, out = [node], []
            while stack:
                current = stack.pop()
                if not current.children and current.label in lineages:
                    out.append(lineages[current.label].ids)
                stack.extend(current.children)
            return out
        expected = []
        for node in nodes:
            own = lineages.get(node.label) if is_taxon(node) else None
            ids = list(own.ids) if own is not None else (common_prefix(below(node)) if node.children else None)
            if not ids:
                expected.append(None)
                continue
            taxid = ids[-1]
            expected.append({"taxid": str(taxid), "sci_name": nhx_value(named[taxid][0]),
                             "common_name": nhx_value(TX.taxon(taxid).common_name), "rank": nhx_value(named[taxid][1]),
                             "lineage": "|".join(map(str, ids)),
                             "named_lineage": nhx_value([named[i][0] for i in ids])})
        not_found = [n.label for n in nodes if not n.children and n.label and n.label not in lineages]
        return expected, not_found

    def check(self, tree, **options):
        result = TX.annotate(tree, **options)
        source = parse_newick(tree)
        expected, not_found = self.expectations(source, options.get("internal_support", False),
                                                options.get("internal_labels", "auto"))
        written = list(parse_newick(result).traverse())
        self.assertEqual(len(written), len(expected))
        for before, after, props in zip(source.traverse(), written, expected):
            if props is None:
                self.assertEqual(after.source, before.source, "a node left as it was is written as it was")
                continue
            pairs = dict(after.nhx)
            self.assertEqual({k: pairs[k] for k in props}, props, after.label)
            self.assertEqual(after.length, before.length)
        self.assertEqual(result.not_found, not_found)
        self.assertTrue(result.release)
        return result, expected

    def test_theBriefsTree_eachNodeCarriesTheServicesAnswers(self):
        result, expected = self.check(BRIEF_TREE)
        self.assertEqual(result.not_found, ["unknownleaf"])
        self.assertIn(",unknownleaf[&&NHX:x=1])", result)
        self.assertEqual(expected[1]["taxid"], "207598")
        leaves = [TX.lineage(q, ranks="all").ids for q in ("9606", "9598", "10090", "Rattus norvegicus")]
        self.assertEqual(result.tree.props["lineage"], common_prefix(leaves))
        self.assertEqual(result.tree.children[1].props["lineage"], common_prefix(leaves[2:]))
        human = TX.lineage(9606, ranks="all")
        self.assertEqual(result.tree.children[0].children[0].props["lineage"], list(human.ids))
        self.assertEqual(result.tree.children[0].children[0].props["common_name"], TX.taxon(9606).common_name)

    def test_treeOfEveryRank_idsAndNames_eachNodeCarriesTheServicesAnswers(self):
        rng = random.Random(8)
        ids = _samples.sample_ids(TX, per_rank=3)
        found = [lineage for lineage in TX.lineage(ids, ranks="all") if lineage.found]
        labels = [str(i) for i in ids] + [lineage.taxon.name for lineage in found[:25]] + ["nobody", "999999999"]
        nodes = [quote_label(label) for label in labels]
        while len(nodes) > 1:
            rng.shuffle(nodes)
            size = rng.choice([2, 2, 3])
            group, nodes = nodes[:size], nodes[size:]
            inner = rng.choice(["", "", str(rng.choice(ids)), "clade_%d" % len(nodes)])
            length = rng.choice(["", ":0.5", ":1e-3"])
            nodes.append("(" + ",".join(group) + ")" + quote_label(inner) + length)
        tree = nodes[0] + ";"
        result, expected = self.check(tree)
        self.assertGreater(sum(1 for e in expected if e), len(labels) // 2)
        result, _ = self.check(tree, internal_support=True)
        self.check(tree, internal_labels="taxa")
        self.check(tree, label="name")

    def test_namesWithNewicksCharacters_areQuotedAndReadBack(self):
        special = sorted(name for _, name in _samples.tree_nodes(TX).values()
                         if any(c in name for c in "()[]':;,"))[:40]
        self.assertTrue(special, "every database the tests run on has names with ()[]':;, (the curated one too)")
        tree = "(" + ",".join(quote_label(name) for name in special) + ");"
        result, expected = self.check(tree)
        back = parse_newick(result)
        self.assertEqual([n.label for n in back.children], special)
        named, _ = self.check(tree, label="name")
        self.assertEqual([n.label for n in parse_newick(named).children], special)

    def test_sameTextAsTheClientsAnnotate(self):
        trees = [BRIEF_TREE, "((9606:0.1,9598:0.2)Homininae:0.3,('Mus musculus',nobody[&&NHX:a=1]):1,10116)95;"]
        for tree in trees:
            for options in ({}, {"label": "name"}, {"label": "id"}, {"internal_support": True}, {"internal_labels": "taxa"}):
                args = ["--label", options["label"]] if "label" in options else []
                args += ["--internal-support"] if options.get("internal_support") else []
                args += ["--internal-labels", options["internal_labels"]] if "internal_labels" in options else []
                with self.subTest(tree=tree, options=options):
                    cli = STACK.cli("annotate", *args, stdin=tree)
                    ours = TX.annotate(tree, **options)
                    self.assertEqual(cli.stdout, ours + "\n")
                    self.assertEqual(cli.returncode, 3 if ours.not_found else 0)
                    if ours.not_found:
                        self.assertIn("(%d): %s" % (len(ours.not_found), ", ".join(ours.not_found)), cli.stderr)


if __name__ == "__main__":
    unittest.main()
