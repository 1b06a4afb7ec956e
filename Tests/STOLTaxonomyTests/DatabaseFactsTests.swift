import Foundation
import GRDB
import STOLModel
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The server reads a database's facts by the rules the verifier and the
/// coordinator read them with (``DatabaseFacts``): a database that breaks them is
/// refused as unusable, naming the rule, and never served with half its facts.
final class DatabaseFactsTests: XCTestCase {
    private var directory = ""
    private var built = ""

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        built = directory + "/built.sqlite"
        try buildFixtureDatabase(at: built, in: directory)
    }

    /// A copy of the fixture after `edit`.
    private func edited(_ edit: (Database) throws -> Void) throws -> String {
        let path = directory + "/edited-\(UUID().uuidString).sqlite"
        try FileManager.default.copyItem(atPath: built, toPath: path)
        let queue = try DatabaseQueue(path: path)
        try queue.write(edit)
        try queue.close()
        return path
    }

    private func unusableReason(_ path: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            _ = try TaxonomyDatabase(path: path, kind: .reference, loadIndexes: false)
            XCTFail("\(path) was opened", file: file, line: line)
            return ""
        } catch {
            guard case .databaseUnusable(_, let reason) = error else {
                XCTFail("expected databaseUnusable, got \(error)", file: file, line: line)
                return ""
            }
            return reason
        }
    }

    func testABuiltDatabase_isServedWithItsFactsAndCounts() throws {
        let database = try TaxonomyDatabase(path: built, kind: .reference, loadIndexes: false)
        XCTAssertEqual(database.schemaVersion, TaxonomySchema.currentVersion)
        XCTAssertFalse(database.buildTime.isEmpty)
        let provenance = try XCTUnwrap(database.provenance)
        XCTAssertEqual(database.release, provenance.release)
        XCTAssertTrue(ReleaseName.isValid(database.release))
        let counts = try DatabaseQueue(path: built).read { db in
            try [Int.fetchOne(db, sql: "SELECT count(*) FROM taxa"), Int.fetchOne(db, sql: "SELECT count(*) FROM names"),
                 Int.fetchOne(db, sql: "SELECT count(*) FROM taxa WHERE main_rank = 'species'")]
        }
        XCTAssertEqual([database.taxaCount, database.namesCount, database.speciesCount], counts)
        XCTAssertEqual(database.fullTreeCount, database.taxaCount, "schema 3's whole tree is taxa")
        XCTAssertGreaterThan(database.speciesCount, 0)
    }

    /// A batch's first request is a `status`: its species count is the loaded tree's
    /// (a pass over a byte per node), SQL's only while no tree is in memory. The tree
    /// handed over here is a copy's with one species fewer, so the two counts differ.
    func testTheSpeciesCount_isTheLoadedTreesCount_andTheRowsCountWithoutATree() throws {
        let sql = "SELECT count(*) FROM taxa WHERE main_rank = 'species'"
        let truth = try XCTUnwrap(try DatabaseQueue(path: built).read { try Int.fetchOne($0, sql: sql) })
        let fewer = try edited { db in
            try db.execute(sql: "UPDATE taxa SET main_rank = 'genus' WHERE id = (SELECT min(id) FROM taxa WHERE main_rank = 'species')")
        }
        let edited = try TaxonomyDatabase(path: fewer, kind: .reference)
        edited.waitForBackgroundWork()
        let tree = try XCTUnwrap(edited.memoryIndexes?.wholeTree)
        XCTAssertEqual(tree.count(ofMainRank: .species), truth - 1)

        let withoutTree = try TaxonomyDatabase(path: built, kind: .reference, indexLoading: .onRequest)
        XCTAssertEqual(withoutTree.speciesCount, truth)
        let withTree = try TaxonomyDatabase(path: built, kind: .reference, indexLoading: .onRequest)
        withTree.publishTreeOnly(tree)
        XCTAssertEqual(withTree.speciesCount, truth - 1, "counted in the tree in memory, not in the rows")
    }

    func testAProvenanceTableThatLacksAKey_isUnusable_namingTheKey() throws {
        let path = try edited { try $0.execute(sql: "DELETE FROM provenance WHERE key = 'citation'") }
        let reason = unusableReason(path)
        XCTAssertTrue(reason.contains("provenance table lacks citation"), reason)
    }

    func testAProvenanceReleaseThatCannotNameAFile_isUnusable() throws {
        for release in ["bundled", "../etc", ""] {
            let path = try edited { try $0.execute(sql: "UPDATE provenance SET value = ? WHERE key = 'release'", arguments: [release]) }
            let reason = unusableReason(path)
            XCTAssertTrue(reason.contains("cannot name an installed release"), "\(release): \(reason)")
        }
    }

    func testASchemaVersionTableWithoutExactlyOneIntegerRow_isUnusable() throws {
        let twoRows = try edited { try $0.execute(sql: "INSERT INTO schema_version (version) VALUES (1)") }
        XCTAssertTrue(unusableReason(twoRows).contains("exactly one row, it holds 2"), unusableReason(twoRows))
        let none = try edited { try $0.execute(sql: "DELETE FROM schema_version") }
        XCTAssertTrue(unusableReason(none).contains("exactly one row, it holds 0"), unusableReason(none))
        // The pipeline's table keys the version (an integer); a file made elsewhere need not.
        let text = try edited { db in
            try db.execute(sql: """
                DROP TABLE schema_version; CREATE TABLE schema_version (version, applied_at TEXT);
                INSERT INTO schema_version VALUES ('three', '2026-01-01T00:00:00Z')
                """)
        }
        XCTAssertTrue(unusableReason(text).contains("is not an integer"), unusableReason(text))
    }

    /// A database built before the provenance table is served without one.
    func testADatabaseWithoutAProvenanceTable_isServedWithoutProvenance() throws {
        let path = try edited { try $0.execute(sql: "DROP TABLE provenance") }
        let database = try TaxonomyDatabase(path: path, kind: .reference, loadIndexes: false)
        XCTAssertNil(database.provenance)
        XCTAssertEqual(database.release, ReleaseName.of(nil))
    }
}
