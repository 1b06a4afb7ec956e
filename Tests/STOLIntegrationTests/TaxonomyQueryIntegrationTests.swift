import Foundation
import GRDB
import STOLModel
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import SwiftProtobuf
import XCTest

/// The read path end to end: the real `stol-taxonomyd` behind the real
/// `systemd-socket-activate`, on a database the real pipeline built from the
/// curated source, queried with the real `stol-client` (text, `--json`, exit codes).
final class TaxonomyQueryIntegrationTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.start(.taxonomy)
    }

    override func tearDown() {
        stack = nil
    }

    private func json(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let result = try stack.client(arguments + ["--json"])
        XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)", file: file, line: line)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], file: file, line: line)
    }

    /// Runs the client with `input` as its standard input.
    private func client(_ arguments: [String], input: String) throws -> StackHarness.Result {
        try stack.client(arguments, input: input)
    }

    /// Every node of the source is a taxon (schema 3): nodes outside the eight ranks,
    /// read from the database file here, answer `taxon`, `ancestors`, `lineage` and
    /// `children --ranks all` through the real client, and are favourites like any.
    func testNodesOutsideTheEightRanks_answerEveryCommand_throughTheClient() throws {
        let nodes = try DatabaseQueue(path: stack.database).read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, parent_id, rank, scientific_name FROM taxa
                WHERE main_rank IS NULL AND parent_id IS NOT NULL ORDER BY id LIMIT 5
                """).map { ($0["id"] as Int64, $0["parent_id"] as Int64, $0["rank"] as String, $0["scientific_name"] as String) }
        }
        XCTAssertFalse(nodes.isEmpty, "the curated build has nodes outside the eight ranks")
        for (id, parent, rank, name) in nodes {
            let taxon = try stack.client(["taxon", String(id)])
            XCTAssertEqual(taxon.status, 0, "\(id): \(taxon.stderr)")
            XCTAssertTrue(taxon.stdout.contains(name) && taxon.stdout.contains(rank), "\(id): \(taxon.stdout)")
            XCTAssertEqual(try stack.client(["ancestors", String(id)]).status, 0, "\(id)")
            let lineage = try client(["lineage", "--ranks", "all", "--ids"], input: "\(id)\n")
            XCTAssertEqual(lineage.status, 0, lineage.stderr)
            XCTAssertTrue(lineage.stdout.contains(";\(parent);\(id)"), "\(id): NCBI's lineage ends with its parent: \(lineage.stdout)")
            let children = try stack.client(["children", String(parent), "--ranks", "all", "--limit", "500"])
            XCTAssertEqual(children.status, 0, children.stderr)
            XCTAssertTrue(children.stdout.contains("\(id)\t\(rank)\t\(name)"), "\(id) under \(parent): \(children.stdout)")
            let tree = try stack.client(["tree", String(parent), "--ranks", "all", "--depth", "1", "--limit", "500"])
            XCTAssertEqual(tree.status, 0, tree.stderr)
            XCTAssertTrue(tree.stdout.contains("  \(id)\t\(rank)\t\(name)"), "the indented tree on NCBI's own: \(tree.stdout)")
        }
    }

    /// `lineage --ids` reads the packed form (every lineage in one array, each taxon once);
    /// its lines say what the names' lines (the compact form) and `--jsonl` (the taxa form)
    /// say: the same query, id, rank and name, the JSON's lineage ids with the taxon last, the
    /// same error lines and exit status — for every taxon of the build, names, Kraken's 0 and
    /// bad queries, in both views.
    func testLineageIds_sayWhatTheNamesLinesAndTheJSONSay_inBothViews() throws {
        let ids = try DatabaseQueue(path: stack.database).read { db in try Int64.fetchAll(db, sql: "SELECT id FROM taxa ORDER BY id") }
        XCTAssertGreaterThan(ids.count, 1000)
        let queries = ids.map(String.init) + ["Panthera leo", "lion", "0", "-3", "424242", " 9606 ", "9606.0", "Felis"]
        let input = queries.joined(separator: "\n") + "\n"
        for ranks in ["all", "main"] {
            let packed = try client(["lineage", "--ranks", ranks, "--ids", "--no-header"], input: input)
            let named = try client(["lineage", "--ranks", ranks, "--no-header"], input: input)
            let jsonl = try client(["lineage", "--ranks", ranks, "--jsonl", "--no-header"], input: input)
            XCTAssertEqual(packed.status, named.status, ranks)
            XCTAssertEqual(packed.status, 3, "some queries name nothing (\(ranks))")
            let lines = packed.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            let namedLines = named.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            let objects = jsonl.stdout.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            XCTAssertEqual(lines.count, queries.count, ranks)
            XCTAssertEqual(namedLines.count, queries.count, ranks)
            XCTAssertEqual(objects.count, queries.count, ranks)
            var found = 0
            for (position, line) in lines.enumerated() {
                let columns = line.split(separator: "\t", omittingEmptySubsequences: false)
                let namedColumns = namedLines[position].split(separator: "\t", omittingEmptySubsequences: false)
                XCTAssertEqual(Array(columns.prefix(4)), Array(namedColumns.prefix(4)), "\(queries[position]) (\(ranks))")
                guard columns.count == 5, let object = objects[position], let taxon = object["taxon"] as? [String: Any],
                      let id = (taxon["id"] as? NSNumber)?.int64Value else {
                    XCTAssertEqual(String(line), String(namedLines[position]), "an error line (\(queries[position]), \(ranks))")
                    continue
                }
                let nodes = object["lineage"] as? [[String: Any]] ?? []
                let lineage: [Int64] = nodes.compactMap { node in (node["id"] as? NSNumber)?.int64Value }
                XCTAssertEqual(lineage.count, nodes.count, "every lineage node's id (\(queries[position]))")
                // Kraken's 0 (unclassified): an empty lineage column, as the names' line.
                let expected: String = id == 0 ? "" : (lineage + [id]).map { String($0) }.joined(separator: ";")
                XCTAssertEqual(String(columns[4]), expected, "\(queries[position]) (\(ranks))")
                found += 1
            }
            XCTAssertGreaterThan(found, ids.count, "every taxon, the names too (\(ranks))")
        }
    }

    func testCompare_lionAndTiger_throughTheSocket_isGenusPantheraAtDistanceTwo() throws {
        let result = try json(["compare", "9689", "9694"])
        XCTAssertEqual((result["lca"] as? [String: Any])?["id"] as? Int, 9688)
        XCTAssertEqual(result["distance"] as? Int, 2)
        XCTAssertEqual(result["shared_clade"] as? String, "Both are in genus Panthera")
        let text = try stack.client(["compare", "9689", "9612"])
        XCTAssertTrue(text.stdout.contains("Both are in order Carnivora"), text.stdout)
        let unknown = try stack.client(["compare", "9689", "999999999"])
        XCTAssertEqual(unknown.status, 3, "not found")
        XCTAssertTrue(unknown.stderr.contains("999999999"), unknown.stderr)
    }

    func testSearch_lionLeonAndATypo_findPantheraLeo() throws {
        for query in ["lion", "león", "Panthera lep", "Pantera leo"] {
            let result = try json(["search", query])
            let first = (result["hits"] as? [[String: Any]])?.first
            XCTAssertEqual((first?["taxon"] as? [String: Any])?["id"] as? Int, 9689, query)
        }
        let typo = try stack.client(["search", "Pantera", "leo"])
        XCTAssertTrue(typo.stdout.hasPrefix("~ 9689"), "fuzzy hits are marked: \(typo.stdout)")
        let hostile = try stack.client(["search", "--", "\"lion\" NEAR(-x:*"])
        XCTAssertNotEqual(hostile.status, 1, hostile.stderr)
    }

    func testDetailRelativesTreeAndDiagnostics_printTextAndJSON() throws {
        let detail = try json(["detail", "9689", "--lang", "es"])
        XCTAssertEqual(((detail["names"] as? [[String: Any]])?.first)?["language"] as? String, "es")
        XCTAssertEqual(detail["synonyms"] as? [String], ["Felis leo"])
        let relatives = try json(["relatives", "9689", "-n", "4"])
        let ids = (relatives["relatives"] as? [[String: Any]])?.compactMap { ($0["taxon"] as? [String: Any])?["id"] as? Int }
        XCTAssertEqual(ids, [9690, 9691, 9694, 29064])
        let computed = try json(["relatives", "9689", "-n", "4", "--computed"])
        XCTAssertEqual(computed["source"] as? String, "RELATIVES_SOURCE_COMPUTED")
        XCTAssertEqual((computed["relatives"] as? [[String: Any]])?.count, 4)
        let tree = try stack.client(["tree", "9681", "--depth", "2"])
        XCTAssertEqual(tree.status, 0, tree.stderr)
        XCTAssertTrue(tree.stdout.contains("\n  ") && tree.stdout.contains("\n    "), "two indented levels: \(tree.stdout)")
        XCTAssertTrue(tree.stdout.contains("Panthera leo"), tree.stdout)
        let diagnostics = try stack.client(["diagnostics"])
        XCTAssertEqual(diagnostics.status, 0)
        XCTAssertTrue(diagnostics.stdout.contains("schema version:   \(TaxonomySchema.currentVersion)"), diagnostics.stdout)
        XCTAssertTrue(diagnostics.stdout.contains("  detail: 1"), "request counts by operation: \(diagnostics.stdout)")
        let status = try json(["status"])
        XCTAssertEqual(status["precomputed_relatives"] as? Int, 10)
        XCTAssertNotNil(status["species_count"])
    }

    func testLineage_readsIdsAndNamesFromStdin_oneLinePerQuery_inTSVAndJSONLines() throws {
        let tsv = try client(["lineage"], input: "9689\nPanthera tigris\nlion\nno such taxon\n")
        XCTAssertEqual(tsv.status, 3, "one query was not found")
        var lines = tsv.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 5, "a header and one line per query")
        // The first line names the release that answered the whole batch (the bundled
        // test database here); --no-header leaves it out.
        XCTAssertEqual(lines.first, "# release bundled · Catalogue of Life · ids col-id", tsv.stdout)
        lines.removeFirst()
        let bare = try client(["lineage", "--no-header"], input: "9689\nPanthera tigris\nlion\nno such taxon\n")
        XCTAssertEqual(bare.stdout.split(separator: "\n").map(String.init), lines, "the same lines without the header")
        XCTAssertTrue(lines[0].hasPrefix("9689\t9689\tspecies\tPanthera leo\tEukaryota;"), lines[0])
        XCTAssertTrue(lines[0].hasSuffix(";Panthera;Panthera leo"), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("Panthera tigris\t9694\t"), lines[1])
        XCTAssertTrue(lines[2].hasPrefix("lion\t9689\t"), lines[2])
        XCTAssertTrue(lines[3].hasPrefix("no such taxon\tNOT_FOUND"), lines[3])

        // Thousands of queries in one run, one JSON object per line, in order.
        let ids = try DatabaseQueue(path: stack.database).read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM taxa ORDER BY id")
        }
        let many = (0..<2500).map { String(ids[$0 % ids.count]) }
        let jsonl = try client(["lineage", "--jsonl"], input: many.joined(separator: "\n") + "\n")
        XCTAssertEqual(jsonl.status, 0, jsonl.stderr)
        let objects = jsonl.stdout.split(separator: "\n")
        XCTAssertEqual(objects.count, 2500)
        for (index, object) in objects.enumerated() where index % 250 == 0 {
            let parsed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(object.utf8)) as? [String: Any])
            XCTAssertEqual(parsed["query"] as? String, many[index])
            XCTAssertEqual((parsed["taxon"] as? [String: Any])?["id"] as? Int, Int(many[index]))
        }
    }

    /// The client writes its JSON lines itself (`ProtobufJSONWriter`; on the whole tree
    /// from the compact form): every line of `lineage --jsonl` (both trees, and as
    /// `--json`) and of `compare --batch --jsonl` is, byte for byte, swift-protobuf's JSON
    /// of the server's own answer to the same queries in the taxa form — every node of
    /// the database, names, an ambiguous name, unknown ids.
    func testJSONLines_areTheProtobufJSONOfTheServersTaxaFormAnswer() throws {
        let ids = try DatabaseQueue(path: stack.database).read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM taxa ORDER BY id")
        }
        var options = JSONEncodingOptions()
        options.preserveProtoFieldNames = true
        options.alwaysPrintInt64sAsNumbers = true
        let socket = try FrameSocket.connect(path: stack.socketPath(.taxonomy))
        socket.setReceiveTimeout(.seconds(30))
        var nextID: UInt64 = 1
        func ask(_ body: (inout Stol_V1_TaxonomyRequest) -> Void) throws -> Stol_V1_TaxonomyResponse {
            var request = Stol_V1_TaxonomyRequest()
            request.id = nextID
            nextID += 1
            body(&request)
            try socket.send(request)
            return try socket.receive(Stol_V1_TaxonomyResponse.self).message
        }
        let named = ["Panthera tigris", "lion", "no such taxon", "999999999", "Felidae"]
        for start in stride(from: 0, to: ids.count, by: 995) {
            let queries = ids[start..<min(start + 995, ids.count)].map(String.init) + named
            let input = queries.joined(separator: "\n") + "\n"
            for view in [Stol_V1_RankView.main, .all] {
                let answer = try ask { $0.lineageBatch = .with {
                    $0.queries = queries
                    $0.language = "en"
                    $0.ranks = view
                    $0.form = .taxa
                } }
                guard case .lineageBatch(let batch) = answer.result else { return XCTFail("\(answer)") }
                let expected = try batch.results.map { try $0.jsonString(options: options) }
                for flag in ["--jsonl", "--json"] {
                    let printed = try client(["lineage", "--ranks", view == .all ? "all" : "main", flag], input: input)
                    XCTAssertEqual(printed.status, 3, "some queries are not found: \(printed.stderr)")
                    let lines = printed.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
                    XCTAssertEqual(lines.count, expected.count, "\(view) \(flag)")
                    for (line, json) in zip(lines, expected) where line != json {
                        XCTFail("\(view) \(flag): the client printed\n\(line)\nthe taxa form is\n\(json)")
                        break
                    }
                }
            }
            let pairs = zip(queries, queries.reversed()).map { a, b in Stol_V1_TaxonPair.with { $0.a = a; $0.b = b } }
            for view in [Stol_V1_RankView.main, .all] {
                let answer = try ask { $0.compareBatch = .with { $0.pairs = pairs; $0.ranks = view } }
                guard case .compareBatch(let batch) = answer.result else { return XCTFail("\(answer)") }
                let expected = try batch.results.map { try $0.jsonString(options: options) }
                let printed = try client(["compare", "--batch", "--jsonl", "--ranks", view == .all ? "all" : "main"],
                                         input: pairs.map { "\($0.a)\t\($0.b)\n" }.joined())
                XCTAssertEqual(printed.stdout.split(separator: "\n").map(String.init), expected, "compare \(view)")
            }
        }
    }

    /// LCA and distance from the server agree with a parent-pointer walk over the
    /// database file, done here, for random pairs of every node (on the main ranks:
    /// the view's parents, `main_parent_id`; the distance counts the taxa of a main
    /// rank below the common ancestor), and `compare --batch` answers each pair as
    /// `compare` does.
    func testCompare_randomPairs_agreeWithAParentPointerWalkOverTheFile() throws {
        let rows = try DatabaseQueue(path: stack.database).read { db in
            try Row.fetchAll(db, sql: "SELECT id, main_parent_id AS parent_id, main_rank IS NOT NULL AS is_main FROM taxa").map {
                ($0["id"] as Int64, $0["parent_id"] as Int64?, $0["is_main"] as Bool)
            }
        }
        let parents = Dictionary(uniqueKeysWithValues: rows.map { ($0.0, $0.1) })
        let isMain = Dictionary(uniqueKeysWithValues: rows.map { ($0.0, $0.2) })
        func path(_ id: Int64) -> [Int64] {
            var path = [id]
            while let parent = parents[path.last!] ?? nil { path.append(parent) }
            return path
        }
        let ids = parents.keys.sorted()
        var state: UInt64 = 2024
        func next() -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33) % ids.count
        }
        var pairs: [(Int64, Int64)] = []
        var singles: [String] = []
        for _ in 0..<25 {
            let a = ids[next()], b = ids[next()]
            let pathA = path(a), pathB = Set(path(b))
            let result = try json(["compare", String(a), String(b)])
            if let lca = pathA.first(where: { pathB.contains($0) }) {
                XCTAssertEqual((result["lca"] as? [String: Any])?["id"] as? Int, Int(lca), "\(a) vs \(b)")
                let below = { (id: Int64) in path(id).prefix { $0 != lca }.filter { isMain[$0]! }.count }
                XCTAssertEqual(result["distance"] as? Int ?? 0, below(a) + below(b), "\(a) vs \(b)")
                XCTAssertEqual(result["distance_main"] as? Int ?? 0, below(a) + below(b), "\(a) vs \(b)")
                pairs.append((a, b))
                singles.append("\(lca)\t\(below(a) + below(b))")
            } else {
                XCTAssertEqual(result["relation"] as? String, "RELATION_UNRELATED", "\(a) vs \(b)")
            }
        }
        XCTAssertGreaterThan(pairs.count, 10)
        let batch = try client(["compare", "--batch", "--no-header"], input: pairs.map { "\($0.0)\t\($0.1)\n" }.joined())
        // a, b, lca_id, lca_rank, lca_name, distance_main, …
        let answered = batch.stdout.split(separator: "\n").map { line -> String in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            return "\(fields[2])\t\(fields[5])"
        }
        XCTAssertEqual(answered, singles, "compare --batch answers each pair as compare does")
    }
}
