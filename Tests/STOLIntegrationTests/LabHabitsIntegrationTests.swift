import Foundation
import GRDB
import STOLTestFixtures
import XCTest

/// What taxonkit and ete4 users reach for (issue 34), through the real client and
/// `stol-taxonomyd` on the development database: both trees' parents and child counts
/// in `taxon`/`detail`, `descendants --rank`, ids per rank in `--format`, `--column N`
/// on the batch commands, and `annotate`'s Newick blanks and misplaced inner labels.
/// Expected answers are worked out here from the database's own rows, not written in.
final class LabHabitsIntegrationTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.start(.taxonomy)
    }

    override func tearDown() {
        stack = nil
    }

    /// Each row of `taxa`: the source's parent, the view's parent, rank and name.
    private struct Row {
        let parent: Int64?
        let mainParent: Int64?
        let rank: String
        let mainRank: String?
        let name: String
    }

    private func rows() throws -> [Int64: Row] {
        try DatabaseQueue(path: stack.database).read { db in
            var rows: [Int64: Row] = [:]
            for row in try GRDB.Row.fetchAll(db, sql: "SELECT id, parent_id, main_parent_id, rank, main_rank, scientific_name FROM taxa") {
                let id: Int64 = row[0]
                let parent: Int64? = row[1]
                rows[id] = Row(parent: parent == id ? nil : parent, mainParent: row[2], rank: row[3], mainRank: row[4], name: row[5])
            }
            return rows
        }
    }

    private func json(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    // MARK: taxon and detail: both trees, labelled

    func testTaxonAndDetail_showTheViewsParentAndNCBIsParent_eachLabelled() throws {
        let rows = try rows()
        // Every species of the database whose NCBI parent is not its genus (Mus musculus under subgenus Mus, …).
        let differing = rows.filter { $0.value.mainRank == "species" && $0.value.parent != $0.value.mainParent }.keys.sorted()
        XCTAssertFalse(differing.isEmpty, "the development database holds species under a subgenus")
        for id in differing.prefix(5) + [9689] {
            let row = rows[id]!
            let text = try stack.client(["taxon", String(id)])
            XCTAssertEqual(text.status, 0, text.stderr)
            let sourceChildren = rows.values.filter { $0.parent == id }.count
            let viewChildren = rows.filter { $0.value.mainParent == id && $0.value.mainRank != nil }.count
            XCTAssertTrue(text.stdout.contains("parent:       \(row.mainParent!) (eight-rank view); \(row.parent!) in the source's own tree"),
                          text.stdout)
            XCTAssertTrue(text.stdout.contains("children:     \(viewChildren) (eight-rank view); \(sourceChildren) in the source's own tree"),
                          text.stdout)
            let answer = try json(try stack.client(["taxon", String(id), "--json"]).stdout)
            XCTAssertEqual((answer["parent_id"] as? NSNumber)?.int64Value, row.mainParent)
            XCTAssertEqual((answer["source_parent_id"] as? NSNumber)?.int64Value, row.parent)
            XCTAssertEqual((answer["source_child_count"] as? NSNumber)?.intValue ?? 0, sourceChildren)
            // detail --ranks all: NCBI's every ancestor, the parent last.
            let detail = try json(try stack.client(["detail", String(id), "--ranks", "all", "--json"]).stdout)
            let lineage = try XCTUnwrap(detail["lineage"] as? [[String: Any]])
            var expected: [Int64] = []
            var at = row.parent
            while let parent = at { expected.insert(parent, at: 0); at = rows[parent]?.parent }
            XCTAssertEqual(lineage.compactMap { ($0["id"] as? NSNumber)?.int64Value }, expected, "taxon \(id)")
        }
    }

    // MARK: descendants

    /// The reference: a preorder walk of the rows, children in id order (ete4's).
    private func descendants(of id: Int64, rank: String?, in rows: [Int64: Row]) -> [Int64] {
        var children: [Int64: [Int64]] = [:]
        for (child, row) in rows { if let parent = row.parent { children[parent, default: []].append(child) } }
        for key in children.keys { children[key]!.sort() }
        var result: [Int64] = []
        var stack = (children[id] ?? []).reversed() as [Int64]
        while let node = stack.popLast() {
            if rank == nil || rows[node]!.rank == rank { result.append(node) }
            stack.append(contentsOf: (children[node] ?? []).reversed())
        }
        return result
    }

    func testDescendants_atARank_areTheSubtreesNodesOfThatRank_inPreorder() throws {
        let rows = try rows()
        for (id, rank) in [(9688, "species"), (40674, "genus"), (40674, "subgenus"), (2759, "no rank"), (7711, "clade"), (9681, nil)]
            as [(Int64, String?)] {
            let expected = descendants(of: id, rank: rank, in: rows)
            var arguments = ["descendants", String(id), "--ids"]
            if let rank { arguments += ["--rank", rank] }
            let result = try stack.client(arguments)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stdout.split(separator: "\n").compactMap { Int64($0) }, expected, "\(id) \(rank ?? "every rank")")
            if rank != nil { XCTAssertFalse(expected.isEmpty, "\(id) has descendants of rank \(rank!)") }
            // A page of it: --offset and --limit cut the same list.
            if expected.count > 3 {
                let page = try stack.client(arguments + ["--offset", "1", "--limit", "2"])
                XCTAssertEqual(page.stdout.split(separator: "\n").compactMap { Int64($0) }, Array(expected[1..<3]))
            }
        }
        // Lines name the taxon as `taxon` does; JSON counts them all.
        let text = try stack.client(["descendants", "9688", "--rank", "Species "])
        XCTAssertEqual(text.stdout.split(separator: "\n").map { $0.split(separator: "\t").first.map(String.init) ?? "" },
                       descendants(of: 9688, rank: "species", in: rows).map(String.init), "rank names ignore case and blanks")
        let answer = try json(try stack.client(["descendants", "9688", "--rank", "species", "--json", "--limit", "2"]).stdout)
        XCTAssertEqual((answer["total"] as? NSNumber)?.intValue, descendants(of: 9688, rank: "species", in: rows).count)
        XCTAssertEqual((answer["taxa"] as? [Any])?.count, 2)
    }

    func testDescendants_anotherSpellingOfTheRanksLevel_findsIt_andAnUnknownRank_listsTheRanks() throws {
        let rows = try rows()
        // NCBI spells the level of phylum "phylum" (and "division" in older releases): either finds them.
        let phyla = descendants(of: 2759, rank: "phylum", in: rows)
        XCTAssertGreaterThan(phyla.count, 3)
        for spelling in ["phylum", "division", "Division"] {
            let result = try stack.client(["descendants", "2759", "--rank", spelling, "--ids"])
            XCTAssertEqual(result.stdout.split(separator: "\n").compactMap { Int64($0) }, phyla, spelling)
        }
        let unknown = try stack.client(["descendants", "9688", "--rank", "specis"])
        XCTAssertEqual(unknown.status, 6, "INVALID_REQUEST")
        XCTAssertTrue(unknown.stderr.contains("unknown rank 'specis'") && unknown.stderr.contains("species"), unknown.stderr)
        XCTAssertEqual(unknown.stdout, "")
        XCTAssertEqual(try stack.client(["descendants", "424242424"]).status, 3, "an unknown taxon is NOT_FOUND")
        XCTAssertEqual(try stack.client(["descendants", "9688", "--limit", "0"]).status, 64)
    }

    // MARK: ids per rank

    func testFormatWithIds_putsEachPlaceholdersTaxonId_whereTheNamesFormPutsItsName() throws {
        let rows = try rows()
        let ids = rows.filter { $0.value.mainRank == "species" }.keys.sorted().prefix(40).map(String.init)
        let template = "{k};{p};{c};{o};{f};{g};{s}"
        let input = ids.joined(separator: "\n") + "\n"
        let names = try stack.client(["lineage", "--no-header", "--format", template], input: input)
        let numbers = try stack.client(["lineage", "--no-header", "--format", template, "--ids"], input: input)
        XCTAssertEqual(names.status, 0, names.stderr)
        XCTAssertEqual(numbers.status, 0, numbers.stderr)
        let nameLines = names.stdout.split(separator: "\n"), idLines = numbers.stdout.split(separator: "\n")
        XCTAssertEqual(nameLines.count, ids.count)
        var filled = 0
        for (nameLine, idLine) in zip(nameLines, idLines) {
            let nameFields = nameLine.split(separator: "\t", omittingEmptySubsequences: false).last!.split(separator: ";", omittingEmptySubsequences: false)
            let idFields = idLine.split(separator: "\t", omittingEmptySubsequences: false).last!.split(separator: ";", omittingEmptySubsequences: false)
            XCTAssertEqual(nameFields.count, idFields.count)
            for (name, id) in zip(nameFields, idFields) {
                XCTAssertEqual(name.isEmpty, id.isEmpty, "\(nameLine) / \(idLine)")
                guard let taxon = Int64(id) else { continue }
                XCTAssertEqual(rows[taxon]?.name, String(name), "\(idLine)")
                filled += 1
            }
        }
        XCTAssertGreaterThan(filled, ids.count * 5)
        let filling = try stack.client(["lineage", "--format", "{g}", "--ids", "--fill-missing"], input: "9606\n")
        XCTAssertEqual(filling.status, 64, "a fill writes names: refused with --ids")
    }

    // MARK: --column N

    /// Each line of `withColumn` is the input line and then what the command answers for
    /// the query alone (its columns after the first `echoed`); lines without the query copied.
    private func assertKeepsTheLine(_ command: [String], input: [String], queries: [String?], echoed: Int,
                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let withColumn = try stack.client(command + ["--no-header"], input: input.joined(separator: "\n") + "\n")
        let at = try XCTUnwrap(command.firstIndex(of: "--column"))
        let alone = try stack.client(Array(command[..<at] + command[(at + 2)...]) + ["--no-header"],
                                     input: queries.compactMap { $0 }.joined(separator: "\n") + "\n")
        XCTAssertEqual(withColumn.status, alone.status, withColumn.stderr, file: file, line: line)
        let out = withColumn.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        var answers = alone.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().makeIterator()
        XCTAssertEqual(out.count, input.count, withColumn.stdout, file: file, line: line)
        for (index, (got, query)) in zip(out, queries).enumerated() {
            guard query != nil else {
                XCTAssertEqual(String(got), input[index], "copied as it is", file: file, line: line)
                continue
            }
            let answer = try XCTUnwrap(answers.next())
            let rest = answer.split(separator: "\t", maxSplits: echoed, omittingEmptySubsequences: false).dropFirst(echoed)
            XCTAssertEqual(String(got), ([input[index]] + rest.map(String.init)).joined(separator: "\t"), file: file, line: line)
        }
    }

    func testColumn_keepsEveryInputLine_andAddsTheAnswerOfItsColumn_onLineageName2idAndCompare() throws {
        let lines = ["C\tread1\t9606\t150", "# a comment\twith a tab", "", "U\tread2\t0\t150", "C\tread3\tno such taxon\t9",
                     "short", "C\tread4\tPanthera leo\t1", "C\tread5\t9689\t1"]
        let queries: [String?] = ["9606", nil, nil, "0", "no such taxon", nil, "Panthera leo", "9689"]
        try assertKeepsTheLine(["lineage", "--column", "3"], input: lines, queries: queries, echoed: 1)
        try assertKeepsTheLine(["lineage", "--column", "3", "--ids", "--format", "{g}"], input: lines, queries: queries, echoed: 1)
        // Kraken 2 with --use-names writes "name (taxid N)" in its third column.
        let kraken2 = ["C\tread1\tHomo sapiens (taxid 9606)\t150", "U\tread2\tunclassified (taxid 0)\t0"]
        let named = try stack.client(["lineage", "--column", "3", "--no-header", "--ids"], input: kraken2.joined(separator: "\n") + "\n")
        XCTAssertEqual(named.status, 0, named.stderr)
        let plain = try stack.client(["lineage", "--no-header", "--ids"], input: "9606\n0\n")
        XCTAssertEqual(named.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).suffix(4) },
                       plain.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).suffix(4) },
                       "the same answers as their ids: \(named.stdout)")
        let names = ["x\tlion\tz", "y\tHomo sapiens", "", "w"]
        try assertKeepsTheLine(["name2id", "--column", "2"], input: names, queries: ["lion", "Homo sapiens", nil, nil], echoed: 1)
        let pairs = ["r1\t9606\t9598\tx", "r2\t9689\t9694", "# pairs", "r3"]
        try assertKeepsTheLine(["compare", "--batch", "--column", "2"], input: pairs,
                               queries: ["9606\t9598", "9689\t9694", nil, nil], echoed: 2)
        let json = try stack.client(["lineage", "--column", "2", "--jsonl"], input: "x\t9606\n")
        XCTAssertEqual(json.status, 64, "--column keeps TSV columns; JSON lines are refused")
        XCTAssertEqual(json.stdout, "")
    }

    // MARK: annotate

    func testAnnotate_readsAnUnquotedUnderscoreAsABlank_andAQuotedOneAsWritten() throws {
        let result = try stack.client(["annotate", "--format", "jsonl"], input: "(Panthera_leo,'Panthera_tigris',Panthera_onca);\n")
        XCTAssertEqual(result.status, 3, "the quoted label names nothing")
        let nodes = try result.stdout.split(separator: "\n").map { try json(String($0)) }
        XCTAssertEqual(nodes[1]["taxid"] as? Int, 9689)
        XCTAssertNil(nodes[2]["taxid"], "'Panthera_tigris' is quoted: its underscore is one")
        XCTAssertEqual(nodes[3]["taxid"] as? Int, 9690)
        XCTAssertEqual(nodes[1]["label"] as? String, "Panthera_leo", "the label is written back as it was")
    }

    func testAnnotate_anInnerLabelThatIsNoAncestorOfItsLeaves_isWarned_withExit3() throws {
        let rows = try rows()
        // An inner label naming a taxon beside the leaves' clade: genus Panthera above human and chimpanzee.
        XCTAssertEqual(rows[9606]?.mainParent, 9605)
        let tree = "((9606,9598)Panthera,(9689,9694)Panthera);\n"
        let result = try stack.client(["annotate", "--format", "jsonl"], input: tree)
        XCTAssertEqual(result.status, 3)
        XCTAssertTrue(result.stderr.contains("1 inner label names a taxon that is not an ancestor") && result.stderr.contains("node 1 'Panthera'"),
                      result.stderr)
        let nodes = try result.stdout.split(separator: "\n").map { try json(String($0)) }
        XCTAssertEqual(nodes[1]["taxid"] as? Int, 9688, "the label's own taxon is kept")
        XCTAssertFalse(result.stderr.contains("node 4"), "Panthera above two Panthera species is right")
        let fine = try stack.client(["annotate", "--format", "jsonl"], input: "((9689,9694)Panthera,9681)Felidae;\n")
        XCTAssertEqual(fine.status, 0, fine.stderr)
        XCTAssertFalse(fine.stderr.contains("warning"), fine.stderr)
    }
}
