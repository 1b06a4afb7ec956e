import Foundation
import GRDB
import Logging
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// Schema 2: a build with `--full-tree` keeps NCBI's whole tree (every node, its
/// rank verbatim, one root) beside the unchanged eight-rank `taxa`, and every
/// build keeps the source's merged and deleted ids.
final class FullTreeBuildTests: XCTestCase {
    private let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    private func build(fullTree: Bool, edit: (String) throws -> Void = { _ in }) throws -> String {
        let directory = try makeTemporaryDirectory(self)
        let source = try TaxdumpFixture.write(to: directory)
        try edit(source)
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        options.fullTree = fullTree
        let output = directory + "/taxonomy.sqlite"
        _ = try TaxonomyBuilder(options: options, logger: quiet).build(source: source, output: output)
        return output
    }

    private func read<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    func testFullTreeBuild_keepsEveryNodeWithItsNCBIRankAndParent_underOneRoot() throws {
        let path = try build(fullTree: true)
        try read(path) { db in
            let rows = try Row.fetchAll(db, sql: "SELECT id, parent_id, rank, scientific_name FROM tree_nodes ORDER BY id")
            XCTAssertEqual(rows.count, TaxdumpFixture.nodes.count, "not every node of nodes.dmp is kept")
            let byID = Dictionary(uniqueKeysWithValues: rows.map { (($0["id"] as Int64), $0) })
            XCTAssertEqual(rows.filter { ($0["parent_id"] as Int64?) == nil }.map { $0["id"] as Int64 }, [1], "not one root")
            XCTAssertEqual(byID[131567]?["rank"], "no rank")
            XCTAssertEqual(byID[131567]?["parent_id"], 1 as Int64)
            XCTAssertEqual(byID[131567]?["scientific_name"], "cellular organisms")
            XCTAssertEqual(byID[2759]?["rank"], "superkingdom", "the rank must be NCBI's, verbatim")
            XCTAssertEqual(byID[338153]?["rank"], "subfamily")
            XCTAssertEqual(byID[9688]?["parent_id"], 338153 as Int64, "the genus hangs under its subfamily, not collapsed")
            XCTAssertEqual(try String.fetchOne(db, sql: "PRAGMA foreign_key_check(tree_nodes)"), nil)
        }
    }

    func testFullTreeBuild_leavesTheEightRankViewAsWithoutIt() throws {
        let withTree = try build(fullTree: true), without = try build(fullTree: false)
        let query = "SELECT id, parent_id, rank, scientific_name FROM taxa ORDER BY id"
        let a = try read(withTree) { try Row.fetchAll($0, sql: query) }
        let b = try read(without) { try Row.fetchAll($0, sql: query) }
        XCTAssertEqual(a, b)
        XCTAssertFalse(a.contains { ($0["id"] as Int64) == 338153 }, "the subfamily entered the eight-rank view")
        XCTAssertEqual(try read(without) { try Int.fetchOne($0, sql: "SELECT count(*) FROM tree_nodes") }, 0,
                       "a build without --full-tree keeps the tree")
    }

    func testRetiredIDs_keptInEveryBuild_mergedOnlyIntoATaxonTheDatabaseHolds() throws {
        let path = try build(fullTree: false) { source in
            // 777 went to a taxon this source does not have; 9685 is both merged and alive (kept alive).
            try writeTSV(source, "merged.dmp", TaxdumpFixture.merged + [dumpRow("777", "424242"), dumpRow("9685", "9689")])
            try writeTSV(source, "delnodes.dmp", TaxdumpFixture.deleted + [dumpRow("9689")])
        }
        try read(path) { db in
            let merged = try Row.fetchAll(db, sql: "SELECT old_id, new_id FROM merged_ids ORDER BY old_id")
                .map { [$0["old_id"] as Int64, $0["new_id"] as Int64] }
            XCTAssertEqual(merged, [[12345, 9689], [54321, 9685]])
            XCTAssertEqual(try Int64.fetchAll(db, sql: "SELECT id FROM deleted_ids ORDER BY id"), [88888, 99999],
                           "a deleted id that is still a taxon must not be listed")
        }
    }
}
