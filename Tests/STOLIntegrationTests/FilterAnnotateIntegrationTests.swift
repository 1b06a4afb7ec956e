import Foundation
import STOLClientKit
import STOLTestFixtures
import XCTest

/// `stol-client filter` (taxonkit's rank filter) and `stol-client annotate` (ete4's
/// annotate_tree) through the real client and `stol-taxonomyd`, on NCBI's own ranks of
/// the development database: species, genera, subgenera, clades and no-rank groups.
final class FilterAnnotateIntegrationTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.start(.taxonomy)
    }

    override func tearDown() {
        stack = nil
    }

    // 9689 Panthera leo (species), 9688 Panthera (genus), 9681 Felidae (family),
    // 44542 gambiae species complex (no rank, under the clade Pyretophorus under the
    // subgenus Cellia), 33213 Bilateria (clade), 32351 melanogaster subgroup (species subgroup).
    private let mixed = "9689\n9688\n9681\n44542\n33213\n32351\n"

    func testLowerThan_keepsLowerRanksAndNoranks_inInputOrder_withCommentsCopied() throws {
        let result = try stack.client(["filter", "--lower-than", "genus"], input: "# ids\n" + mixed + "\n0\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "# ids\n9689\n44542\n33213\n32351\n",
                       "species and species subgroup are below genus; no rank and clade kept as taxonkit keeps them; 0 and the blank line left out")
    }

    func testDiscardNoranks_andEqualTo_andHigherThan() throws {
        let discarding = try stack.client(["filter", "--lower-than", "genus", "--discard-noranks"], input: mixed)
        XCTAssertEqual(discarding.stdout, "9689\n32351\n")
        let equal = try stack.client(["filter", "--lower-than", "genus", "--rank", "genus,family", "--discard-noranks"], input: mixed)
        XCTAssertEqual(equal.stdout, "9689\n9688\n9681\n32351\n")
        let higher = try stack.client(["filter", "--higher-than", "genus", "--discard-noranks"], input: mixed)
        XCTAssertEqual(higher.stdout, "9681\n")
    }

    func testSavePredictableNoranks_followsTheNearestRankedAncestor() throws {
        // 44542's nearest ranked ancestor is the subgenus Cellia: below genus, not below species.
        let genus = try stack.client(["filter", "--lower-than", "genus", "--save-predictable-noranks"], input: mixed)
        XCTAssertEqual(genus.stdout, "9689\n44542\n32351\n", "Bilateria's nearest ranked ancestor is a kingdom")
        let species = try stack.client(["filter", "--lower-than", "species", "--save-predictable-noranks"], input: mixed)
        XCTAssertEqual(species.stdout, "")
        XCTAssertEqual(species.status, 0)
    }

    func testTSVColumn_namesAndUnknownIds() throws {
        let input = "sample\ttaxon\treads\n#c\nA\t9689\t10\nB\tPanthera\t5\nC\t424242\t1\nD\tHomo sapiens\t7\nE\n"
        let result = try stack.client(["filter", "--rank", "species", "--column", "2"], input: input)
        XCTAssertEqual(result.status, 3, "an id that names nothing is exit 3")
        XCTAssertEqual(result.stdout, "#c\nA\t9689\t10\nD\tHomo sapiens\t7\n",
                       "a header without # is a query that names nothing; names are looked up like ids")
        XCTAssertTrue(result.stderr.contains("424242"), result.stderr)
        XCTAssertTrue(result.stderr.contains("taxon"), "the header line is listed as not found: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("line without column 2"), result.stderr)
    }

    func testUsageErrors_areExit64() throws {
        for arguments in [["--lower-than", "genus", "--higher-than", "family"], ["--lower-than", "genius"],
                          ["--higher-than", "genus", "--save-predictable-noranks"], ["--column", "0"]] {
            let result = try stack.client(["filter"] + arguments, input: "9606\n")
            XCTAssertEqual(result.status, 64, "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stdout, "")
        }
        // The server judges the options (rank_filter without queries) before any input:
        // an empty input still hears of them, and the message names the rank it refused.
        let unread = try stack.client(["filter", "--lower-than", "genius"], input: "")
        XCTAssertEqual(unread.status, 64, unread.stderr)
        XCTAssertTrue(unread.stderr.contains("genius"), unread.stderr)
        let order = try stack.client(["filter", "--list-order"], input: "")
        XCTAssertTrue(order.stdout.hasPrefix("acellular root,cellular root\ndomain,superkingdom,realm,empire\n"), order.stdout)
    }

    // MARK: annotate

    private func lineage(_ query: String) throws -> [Int64] {
        let result = try stack.client(["lineage", "--ranks", "all", "--ids", "--no-header"], input: query + "\n")
        let columns = result.stdout.trimmingCharacters(in: .newlines).split(separator: "\t", omittingEmptySubsequences: false)
        return columns.last!.split(separator: ";").compactMap { Int64($0) }
    }

    private func properties(_ node: NewickTree.Node) -> [String: String] {
        Dictionary(node.properties.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    func testAnnotate_putsEte4sPropertiesOnEveryNode_andLeavesUnknownLeavesAsTheyWere() throws {
        let input = "((9606:0.1,'Panthera leo':0.2)inner:1,(9689,9694)Panthera,unknown_leaf[&&NHX:x=1]);"
        let result = try stack.client(["annotate"], input: input)
        XCTAssertEqual(result.status, 3, "an unknown leaf is exit 3: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("unknown_leaf"), result.stderr)
        let tree = try NewickTree(parsing: result.stdout)
        XCTAssertEqual(tree.nodes.map(\.label), ["", "inner", "9606", "Panthera leo", "Panthera", "9689", "9694", "unknown_leaf"],
                       "labels stay as they were")
        XCTAssertEqual(tree.nodes[2].length, "0.1")
        for (index, query) in [(2, "9606"), (3, "9689"), (5, "9689"), (6, "9694"), (4, "9688")] {
            let props = properties(tree.nodes[index])
            let ids = try lineage(query)
            XCTAssertEqual(props["lineage"], ids.map(String.init).joined(separator: "|"), "node \(index)")
            XCTAssertEqual(props["taxid"], String(ids.last!))
        }
        XCTAssertEqual(properties(tree.nodes[2])["sci_name"], "Homo sapiens")
        XCTAssertEqual(properties(tree.nodes[2])["rank"], "species")
        XCTAssertEqual(properties(tree.nodes[2])["named_lineage"]?.hasSuffix("|Homo|Homo sapiens"), true)
        // "inner" names nothing: the common ancestor of a human and a lion, as lineages give it.
        let human = try lineage("9606"), lion = try lineage("9689")
        let common = zip(human, lion).prefix { $0 == $1 }.map(\.0)
        XCTAssertEqual(properties(tree.nodes[1])["taxid"], String(common.last!))
        XCTAssertEqual(properties(tree.nodes[0])["taxid"], String(common.last!), "the root: the same ancestor")
        XCTAssertTrue(result.stdout.contains(",unknown_leaf[&&NHX:x=1])"), "byte for byte: \(result.stdout)")
    }

    func testAnnotate_roundTripsTreeTaxaNewick_withIdAndNameLabels() throws {
        let induced = try stack.client(["tree", "--taxa", "--ranks", "all", "--format", "newick", "--label", "id"],
                                       input: "9689\n9694\n9606\n7227\n")
        XCTAssertEqual(induced.status, 0, induced.stderr)
        let named = try stack.client(["annotate", "--label", "name"], input: induced.stdout)
        XCTAssertEqual(named.status, 0, named.stderr)
        let tree = try NewickTree(parsing: named.stdout)
        let before = try NewickTree(parsing: induced.stdout)
        XCTAssertEqual(tree.nodes.count, before.nodes.count)
        for (old, new) in zip(before.nodes, tree.nodes) {
            XCTAssertEqual(properties(new)["taxid"], old.label, "every node of tree --taxa is a taxon")
            XCTAssertEqual(new.label, properties(new)["sci_name"], "--label name")
        }
        // Inner ids are taxa when told so; by default a number there is a support value (issue 34), and the
        // node gets its leaves' common ancestor, which in an induced tree is the same taxon.
        let jsonl = try stack.client(["annotate", "--format", "jsonl", "--internal-labels", "taxa"], input: induced.stdout)
        let objects = jsonl.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        XCTAssertEqual(objects.count, before.nodes.count)
        XCTAssertTrue(objects.allSatisfy { $0["from"] as? String == "label" })
        let auto = try stack.client(["annotate", "--format", "jsonl"], input: induced.stdout)
        let autoObjects = auto.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        XCTAssertEqual(autoObjects.map { "\($0["taxid"] ?? "")" }, objects.map { "\($0["taxid"] ?? "")" })
        XCTAssertTrue(auto.stderr.contains("inner labels are numbers, read as support values"), auto.stderr)
    }

    /// Issue 34: support values on inner nodes are not taxa by default: the human+chimp clade's "100" was
    /// taxon 100 (Ancylobacter aquaticus) and mouse+rat's "2" Bacteria, exit 0, without a word.
    func testAnnotate_readsNumbersOnInnerNodesAsSupportValues_andSaysSo() throws {
        let result = try stack.client(["annotate", "--label", "name"], input: "((9606,9598)100,(10090,10116)2);")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertFalse(result.stdout.contains("Ancylobacter") || result.stdout.contains("Bacteria"), result.stdout)
        XCTAssertTrue(result.stderr.contains("annotate: 2 inner labels are numbers, read as support values"), result.stderr)
        let tree = try NewickTree(parsing: result.stdout)
        XCTAssertEqual(properties(tree.nodes[1])["taxid"], "207598", "human and chimp: Homininae, from the leaves")
        let asTaxa = try stack.client(["annotate", "--internal-labels", "taxa"], input: "((9606,9598)9604,10090);")
        XCTAssertEqual(properties(try NewickTree(parsing: asTaxa.stdout).nodes[1])["taxid"], "9604", "told so, an id is a taxon")
    }

    func testAnnotate_refusesAMalformedTree_withExit65() throws {
        let result = try stack.client(["annotate"], input: "((9606,9689);")
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("at byte"), result.stderr)
        XCTAssertEqual(result.stdout, "")
    }

    func testAnnotate_internalSupport_keepsSupportValues() throws {
        let result = try stack.client(["annotate", "--internal-support", "--label", "id"], input: "((9606,9689)95:0.5,9694);")
        XCTAssertEqual(result.status, 0, result.stderr)
        let tree = try NewickTree(parsing: result.stdout)
        XCTAssertEqual(tree.nodes[1].label, String(properties(tree.nodes[1])["taxid"]!),
                       "the support value is not a taxid: the node gets its leaves' ancestor")
        XCTAssertNotEqual(properties(tree.nodes[1])["taxid"], "95")
        XCTAssertEqual(tree.nodes[1].length, "0.5")
    }

    /// A tree larger than one request (64 KiB) goes in parts (AnnotateTreeParts): its
    /// inner nodes get what they get in a small tree of the same shape sent whole. The
    /// lions' clade alone is larger than a request: its leaves go in groups of their own.
    func testAnnotate_aTreeLargerThanARequest_isAnsweredInParts_asTheSameTreeWhole() throws {
        // Inner labels that name no taxon ("cats" is Felidae's common name): the server gives them their leaves' ancestor.
        func tree(lions: Int) -> String {
            func clade(_ id: String, _ count: Int) -> String { "(" + Array(repeating: id, count: count).joined(separator: ",") + ")" }
            return "((\(clade("9689", lions)),\(clade("9694", 3)))nx_cats,(\(clade("9606", 3)),\(clade("9598", 3)))nx_apes)nx_top;"
        }
        func inner(_ text: String) throws -> [String: String] {
            let result = try stack.client(["annotate", "--format", "jsonl"], input: text)
            XCTAssertEqual(result.status, 0, result.stderr)
            var taxa: [String: String] = [:]
            var lionClade: String?
            for line in result.stdout.split(separator: "\n") {
                let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let taxid = (object["taxid"] as? Int).map(String.init) ?? "none"
                if let label = object["label"] as? String, !label.isEmpty, object["leaf"] as? Bool == false { taxa[label] = taxid }
                if object["node"] as? Int == 2 { lionClade = taxid }
            }
            taxa["lions"] = lionClade
            return taxa
        }
        let small = try inner(tree(lions: 3)), large = try inner(tree(lions: 30_000))
        XCTAssertGreaterThan(tree(lions: 30_000).utf8.count, 65_536)
        XCTAssertEqual(large["lions"], "9689", "the lions' clade, cut into parts, is the lion")
        // The common ancestor as the taxa's lineages give it (no cut in the way).
        func ancestor(_ a: String, _ b: String) throws -> String {
            String(zip(try lineage(a), try lineage(b)).prefix { $0 == $1 }.last!.0)
        }
        XCTAssertEqual(large["nx_cats"], try ancestor("9689", "9694"))
        XCTAssertEqual(large["nx_apes"], try ancestor("9606", "9598"))
        XCTAssertEqual(large, small, "the tree in parts answers as the same shape whole")
        XCTAssertNotEqual(small["nx_top"], "none")
    }
}
