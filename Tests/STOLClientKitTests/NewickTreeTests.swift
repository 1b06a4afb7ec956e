import STOLClientKit
import STOLModel
import XCTest

/// ``NewickTree``: a user's Newick read and written back as it was, and annotated
/// as ete4's `annotate_tree` does it; the ete4 text below was written by ete4 4.4's
/// `Tree.write(parser=1, props=None)` for the same tree and properties.
final class NewickTreeTests: XCTestCase {
    /// ete4's `write` of ((9606:0.1,9598:0.2)Homininae:0.3,'E. coli O157:H7'[&&NHX:colour=red]); with the props set by hand.
    private let ete4Written = "((9606:0.1[&&NHX:common_name=human:lineage=1|207598|9606:named_lineage=root|Homininae|Homo sapiens"
        + ":rank=species:sci_name=Homo sapiens:taxid=9606],9598:0.2[&&NHX:common_name=chimpanzee:lineage=1|207598|9598"
        + ":named_lineage=root|Homininae|Pan troglodytes:rank=species:sci_name=Pan troglodytes:taxid=9598])Homininae:0.3"
        + "[&&NHX:common_name=:lineage=1|207598:named_lineage=root|Homininae:rank=subfamily:sci_name=Homininae:taxid=207598],"
        + "'E. coli O157:H7'[&&NHX:colour=red:common_name=:lineage=1|562|83334:named_lineage=root|Escherichia coli|"
        + "Escherichia coli O157_H7:rank=serotype:sci_name=Escherichia coli O157_H7:taxid=83334]);"

    private typealias Rung = NewickTree.Rung
    private let root = Rung(id: 1, name: "root", rank: "no rank")
    private let homininae = Rung(id: 207598, name: "Homininae", rank: "subfamily")

    func testParse_readsLabelsLengthsNHX_andSkipsComments() throws {
        let tree = try NewickTree(parsing: " ( 'a b':1.5 [a comment], \"c\"\"d\"[&&NHX:x=1:y=two],'it''s'):2e-3[&&NHX:s=9] ;\n")
        XCTAssertEqual(tree.nodes.count, 4)
        XCTAssertEqual(tree.nodes.map(\.label), ["", "a b", "c\"d", "it's"])
        XCTAssertEqual(tree.nodes[1].length, "1.5")
        XCTAssertEqual(tree.nodes[0].length, "2e-3")
        XCTAssertEqual(tree.nodes[2].properties, [.init(key: "x", value: "1"), .init(key: "y", value: "two")])
        XCTAssertEqual(tree.nodes[0].properties, [.init(key: "s", value: "9")])
        XCTAssertEqual(tree.nodes[0].children, [1, 2, 3])
        XCTAssertEqual(tree.nodes[3].parent, 0)
    }

    func testWrittenUnchanged_isTheInputWithoutBlanksAndPlainComments() throws {
        let text = "((A:0.1,B:0.2)95:0.3,('Homo sapiens',C[&&NHX:k=v]):1,D);"
        XCTAssertEqual(try NewickTree(parsing: text).written { _ in nil }, text)
        XCTAssertEqual(try NewickTree(parsing: "(A , B)\n[done];").written { _ in nil }, "(A,B);")
        XCTAssertEqual(try NewickTree(parsing: "A;").written { _ in nil }, "A;", "a tree of one leaf")
        XCTAssertEqual(try NewickTree(parsing: "(,(,));").written { _ in nil }, "(,(,));", "empty labels stay empty")
    }

    func testMalformedTrees_failWithTheirPosition() {
        let cases: [(String, String)] = [
            ("((a,b);", "expected ',' or ')'"),
            ("(a,b)", "without ';'"),
            ("(a,b));", "a ')' without its '('"),
            ("(a,b); (c,d);", "text after the ';'"),
            ("('a,b);", "closing quote"),
            ("(a[&&NHX:x=1,b);", "without its ']'"),
            ("(a:x1,b);", "not a number"),
            ("(a[&&NHX:novalue],b);", "without '='"),
            ("", "empty"),
        ]
        for (text, reason) in cases {
            XCTAssertThrowsError(try NewickTree(parsing: text), text) { error in
                let failure = error as? NewickTree.ParseError
                XCTAssertNotNil(failure, text)
                XCTAssertTrue(failure?.reason.contains(reason) == true, "\(text): \(failure?.description ?? "\(error)")")
            }
        }
    }

    func testADeepCaterpillar_parsesAndWritesWithoutRecursion() throws {
        let depth = 100_000
        let text = String(repeating: "(x,", count: depth) + "y" + String(repeating: ")", count: depth) + ";"
        let tree = try NewickTree(parsing: text)
        XCTAssertEqual(tree.nodes.count, 2 * depth + 1)
        XCTAssertEqual(tree.written { _ in nil }, text)
        let annotation = NewickTree.Annotation(lineage: [root, Rung(id: 5, name: "x", rank: "species")], fromLabel: true)
        let written = tree.written { tree.nodes[$0].children.isEmpty ? tree.content(of: $0, annotation: annotation, label: .id) : nil }
        XCTAssertEqual(written.components(separatedBy: "taxid=5]").count - 1, depth + 1, "every leaf annotated, none lost")
    }

    func testAnnotatedContent_isWhatEte4Writes_andEte4sTextReadsBack() throws {
        let tree = try NewickTree(parsing: "((9606:0.1,9598:0.2)Homininae:0.3,'E. coli O157:H7'[&&NHX:colour=red]);")
        let found: [Int: [Rung]] = [
            2: [root, homininae, Rung(id: 9606, name: "Homo sapiens", rank: "species", commonName: "human")],
            3: [root, homininae, Rung(id: 9598, name: "Pan troglodytes", rank: "species", commonName: "chimpanzee")],
            1: [root, homininae],
            4: [root, Rung(id: 562, name: "Escherichia coli", rank: "species"),
                Rung(id: 83334, name: "Escherichia coli O157:H7", rank: "serotype")],
        ]
        let written = tree.written { node in
            found[node].map { tree.content(of: node, annotation: .init(lineage: $0, fromLabel: true), label: .keep) }
        }
        XCTAssertEqual(written, ete4Written, "the same bytes as ete4 (its root carries no props)")
        let back = try NewickTree(parsing: ete4Written)
        let leaf = back.nodes[4]
        XCTAssertEqual(leaf.label, "E. coli O157:H7")
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: leaf.properties.map { ($0.key, $0.value) })["sci_name"],
                       "Escherichia coli O157_H7", "ete4 makes each of :;(),[]= in a value '_'")
        XCTAssertEqual(leaf.properties.first?.key, "colour", "the node's own property is kept")
    }

    func testUnannotatedNodes_areWrittenAsTheyWere_andLabelNameQuotesWhereNewickNeedsIt() throws {
        // ((human, chimp), (mouse, unknown)): the server gave the inner nodes their taxa (annotate_tree).
        let tree = try NewickTree(parsing: "((h,c),(m,nobody));")
        let euarchontoglires = Rung(id: 314146, name: "Euarchontoglires", rank: "superorder")
        let human = [root, euarchontoglires, homininae, Rung(id: 9606, name: "Homo sapiens", rank: "species")]
        let annotations: [Int: NewickTree.Annotation] = [
            0: .init(lineage: [root, euarchontoglires], fromLabel: false),
            2: .init(lineage: human, fromLabel: true),
        ]
        let written = tree.written { node in annotations[node].map { tree.content(of: node, annotation: $0, label: .name) } }
        XCTAssertTrue(written.contains(",nobody)"), "an unknown leaf is written as it was: \(written)")
        XCTAssertTrue(written.contains("(m,nobody)"), "an inner node without a taxon is written as it was: \(written)")
        XCTAssertTrue(written.contains("'Homo sapiens'[&&NHX:"), "--label name, quoted where Newick needs it")
        XCTAssertTrue(written.contains(")Euarchontoglires[&&NHX:"), "the root is named after its taxon too: \(written)")
    }

    func testOwnNHXProperties_areSortedAndEscapedWithOurs_asEte4WritesThem() throws {
        let tree = try NewickTree(parsing: "(A[&&NHX:zz=1:aa=(b):taxid=7]:0.5,'\"q');")
        XCTAssertEqual(tree.nodes[1].length, "0.5", "NHX before the length is read too")
        let lineage = [root, Rung(id: 9606, name: "Homo sapiens", rank: "species")]
        let content = tree.content(of: 1, annotation: .init(lineage: lineage, fromLabel: true), label: .keep)
        XCTAssertEqual(content, "A:0.5[&&NHX:aa=_b_:common_name=:lineage=1|9606:named_lineage=root|Homo sapiens:rank=species"
                       + ":sci_name=Homo sapiens:taxid=9606:zz=1]", "ours replace taxid=7; all sorted, all escaped")
        XCTAssertEqual(tree.nodes[2].label, "\"q")
        XCTAssertEqual(NewickTree.quoted("\"q"), "'\"q'", "a label starting with a double quote is quoted")
        XCTAssertEqual(try NewickTree(parsing: "(" + NewickTree.quoted("\"q") + ");").nodes[1].label, "\"q")
    }

    func testQueries_skipInnerSupportValues_whenAsked() throws {
        let tree = try NewickTree(parsing: "((9606,9598)95,(10090,)80)root;")
        XCTAssertEqual(tree.queries(inner: .taxa).queries.map(\.label), ["root", "95", "9606", "9598", "80", "10090"])
        XCTAssertEqual(tree.queries(inner: .support).queries.map(\.label), ["9606", "9598", "10090"])
        // Issue 34: by default a number on an inner node is a support value, a name a taxon; leaves are always taxa.
        let auto = tree.queries(inner: .auto)
        XCTAssertEqual(auto.queries.map(\.label), ["root", "9606", "9598", "10090"])
        XCTAssertEqual(auto.supportValues, 2)
        for number in ["100", "0.95", "1e-3", "+1", ".5"] { XCTAssertTrue(NewickTree.isNumber(number), number) }
        for label in ["", "Mus", "nan", "inf", "1_000", "9606a", "0x10", "e"] { XCTAssertFalse(NewickTree.isNumber(label), label) }
    }
}
