import Foundation
import GRDB
import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The server reads every schema version from 1 to the current one: a reference
/// installed before schema 3 keeps being served until it is replaced, schema 1 on
/// the main ranks only, schema 2 with its nameless whole tree beside them.
final class SchemaVersionTests: XCTestCase {
    func testASchema1Database_isServed_withoutAWholeTree() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/schema1.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
        try LegacySchema.downgrade(path, to: 1)
        let database = try TaxonomyDatabase(path: path, kind: .bundled, loadIndexes: false)
        XCTAssertEqual(database.schemaVersion, 1)
        XCTAssertEqual(database.fullTreeCount, 0)
        XCTAssertEqual(try LookupQueries(database: database).taxon(id: 9689, language: "en").scientificName, "Panthera leo")
        XCTAssertThrowsError(try LookupQueries(database: database).taxon(id: 338153, language: "en"),
                             "schema 1 keeps no node outside the eight ranks")
    }

    func testASchema2Database_isServed_onTheMainRanks_withItsWholeTreeForAllRanks() async throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/schema2.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
        try LegacySchema.downgrade(path, to: 2)
        let database = try TaxonomyDatabase(path: path, kind: .bundled)
        _ = await database.loadedMemoryIndexes()
        XCTAssertEqual(database.schemaVersion, 2)
        XCTAssertEqual(database.fullTreeCount, FelidaeFixture.acceptedUsageCount)
        let queries = LookupQueries(database: database)
        let lion = try queries.taxon(id: 9689, language: "en")
        XCTAssertEqual(lion.parentID, 9688)
        XCTAssertEqual(lion.rank, .species)
        XCTAssertEqual(try queries.ancestors(of: 9689, language: "en").map(\.id), [2759, 33208, 7711, 40674, 33554, 9681, 9688])
        XCTAssertEqual(try queries.ancestorsOnFullTree(of: 9689).map(\.id).suffix(2), [338153, 9688])
        let children = try queries.children(of: 9681, offset: 0, limit: 50, language: "en", ranks: .all)
        XCTAssertTrue(children.taxa.contains { $0.id == 338153 && $0.sourceRank == "subfamily" }, "\(children.taxa)")
        XCTAssertThrowsError(try queries.taxon(id: 338153, language: "en"), "schema 2 has no row for the subfamily")
    }

    func testASchema2DatabaseWithoutItsTreeTable_isRefused_namingIt() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/lacking.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
        try LegacySchema.downgrade(path, to: 2)
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "DROP TABLE tree_nodes") }
        try queue.close()
        XCTAssertThrowsError(try TaxonomyDatabase(path: path, kind: .bundled, loadIndexes: false)) { error in
            XCTAssertTrue("\(error)".contains("tree_nodes"), "\(error)")
        }
    }

    func testASchema3DatabaseWithoutARequiredTable_isRefused_namingIt() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/lacking.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "DROP TABLE prominence") }
        try queue.close()
        XCTAssertThrowsError(try TaxonomyDatabase(path: path, kind: .bundled, loadIndexes: false)) { error in
            XCTAssertTrue("\(error)".contains("prominence"), "\(error)")
        }
    }

    func testAVersionNewerThanThisServer_isRefused() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/new.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction {
            try $0.execute(sql: "UPDATE schema_version SET version = ?", arguments: [TaxonomySchema.currentVersion + 1])
        }
        try queue.close()
        XCTAssertThrowsError(try TaxonomyDatabase(path: path, kind: .bundled, loadIndexes: false)) { error in
            XCTAssertTrue("\(error)".contains("schema version \(TaxonomySchema.currentVersion + 1)"), "\(error)")
        }
    }
}
