import Foundation
import GRDB
import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The server reads every schema version from 1 to the current one: a reference
/// installed before schema 2 keeps being served, on the main ranks only.
final class SchemaVersionTests: XCTestCase {
    func testASchema1Database_isServed_withoutAWholeTree() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/schema1.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: """
                DROP TABLE tree_nodes; DROP TABLE merged_ids; DROP TABLE deleted_ids;
                UPDATE schema_version SET version = 1
                """)
        }
        try queue.close()
        let database = try TaxonomyDatabase(path: path, kind: .bundled, loadIndexes: false)
        XCTAssertEqual(database.schemaVersion, 1)
        XCTAssertEqual(database.fullTreeCount, 0)
        XCTAssertEqual(try TaxonomyQueries(database: database).taxon(id: 9689, language: "en").scientificName, "Panthera leo")
    }

    func testASchema2DatabaseWithoutItsTreeTable_isRefused_namingIt() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/lacking.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "DROP TABLE tree_nodes") }
        try queue.close()
        XCTAssertThrowsError(try TaxonomyDatabase(path: path, kind: .bundled, loadIndexes: false)) { error in
            XCTAssertTrue("\(error)".contains("tree_nodes"), "\(error)")
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
