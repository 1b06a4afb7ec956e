import Foundation
import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Answers that were counted or resolved in SQL (a scan of `taxa` for the roots, a
/// count of Bacteria's children, a recursive query per lineage, 6,433 rows for one
/// shared name) now come from the in-memory tree once it is loaded, so that their
/// cost no longer grows with the database (issue 33). Before the tree is loaded the
/// SQL answers still serve: the two must be the same answer.
final class InMemoryAnswersTests: XCTestCase {
    private var path = ""

    override func setUpWithError() throws {
        let directory = try makeTemporaryDirectory(self)
        path = directory + "/fixture.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
    }

    /// The fixture served twice: from SQL alone, and with its in-memory indexes built.
    private func databases() throws -> (sql: TaxonomyDatabase, memory: TaxonomyDatabase) {
        let sql = try TaxonomyDatabase(path: path, kind: .bundled, loadIndexes: false)
        let memory = try TaxonomyDatabase(path: path, kind: .bundled)
        XCTAssertNotNil(memory.waitForMemoryIndexes().tree)
        XCTAssertNil(sql.memoryIndexes?.tree, "the SQL answers are the reference")
        return (sql, memory)
    }

    func testRootsAndDetailChildCounts_fromTheTree_areTheSQLAnswers_forEveryTaxon() throws {
        let (sql, memory) = try databases()
        XCTAssertEqual(try LookupQueries(database: memory).roots(language: "en"), try LookupQueries(database: sql).roots(language: "en"))
        XCTAssertFalse(try LookupQueries(database: memory).roots(language: "en").taxa.allSatisfy { $0.childCount == 0 })
        let ids = try LookupQueries(database: sql).sampleIDs(rank: nil, count: 10_000)
        XCTAssertGreaterThan(ids.count, 20)
        for id in ids {
            for language in ["en", "de"] {
                XCTAssertEqual(try LookupQueries(database: memory).detail(of: id, language: language),
                               try LookupQueries(database: sql).detail(of: id, language: language), "detail of \(id)")
            }
        }
    }

    func testLineageBatchTaxaForm_fromTheTree_isTheSQLAnswer_forEveryIdAndScientificName() throws {
        let (sql, memory) = try databases()
        let ids = try LookupQueries(database: sql).sampleIDs(rank: nil, count: 10_000)
        let names = try ids.map { try LookupQueries(database: sql).taxon(id: $0, language: "en").scientificName }
        let queries = ids.map(String.init) + names + ["424242", "-3"]
        for language in ["en", "es"] {
            let fromTree = try LineageQueries(database: memory).lineageBatch(queries, language: language)
            let fromSQL = try LineageQueries(database: sql).lineageBatch(queries, language: language)
            XCTAssertEqual(fromTree.results.count, queries.count)
            for (tree, sql) in zip(fromTree.results, fromSQL.results) {
                XCTAssertEqual(tree, sql, "lineage of \(tree.query)")
            }
        }
    }

    func testLineageBatch_ofACommonName_beforeTheInMemoryNames_waitsForThem() throws {
        let (sql, memory) = try databases()
        XCTAssertThrowsError(try LineageQueries(database: sql).lineageBatch(["9689", "lion"], language: "en")) {
            XCTAssertEqual($0 as? TaxonomyError, .memoryIndexesLoading, "never a scan of every name")
        }
        let answer = try LineageQueries(database: memory).lineageBatch(["9689", "lion"], language: "en")
        XCTAssertEqual(answer.results.map(\.taxon.id), [9689, 9689])
    }
}
