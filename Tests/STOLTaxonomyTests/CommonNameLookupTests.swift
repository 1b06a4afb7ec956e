import Foundation
import GRDB
import STOLProtocol
import STOLTaxonomy
import XCTest

/// Pages of taxa ask SQLite for common names only for the taxa that the
/// in-memory indexes say have one (`MemoryIndexes.commonlyNamed`); these tests
/// pin that the shortcut changes no answer.
final class CommonNameLookupTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
        harness.waitForTreeLoaded()
    }

    func testCommonlyNamed_isExactlyTheTaxaWithACommonOrVernacularName() throws {
        let database = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled)
        let set = try XCTUnwrap(database.waitForMemoryIndexes().commonlyNamed)
        let expected = try DatabaseQueue(path: harness.bundledPath).read { db in
            try Set(Int64.fetchAll(db, sql: "SELECT DISTINCT taxon_id FROM names WHERE name_type IN ('common','vernacular')"))
        }
        XCTAssertEqual(set, expected)
        let synonymOnly = try DatabaseQueue(path: harness.bundledPath).read { db in
            try Int64.fetchAll(db, sql: """
                SELECT DISTINCT taxon_id FROM names WHERE name_type = 'synonym'
                EXCEPT SELECT taxon_id FROM names WHERE name_type IN ('common','vernacular')
                """)
        }
        for id in synonymOnly { XCTAssertFalse(set.contains(id), "\(id) has only synonyms") }
    }

    func testChildren_withTheIndexesLoaded_carryTheSameCommonNamesAsSingleLookups() throws {
        // Every parent of the fixture, in languages with names, without, and unknown.
        let parents = try DatabaseQueue(path: harness.bundledPath).read { db in
            try Int64.fetchAll(db, sql: "SELECT DISTINCT parent_id FROM taxa WHERE parent_id IS NOT NULL")
        }
        XCTAssertGreaterThan(parents.count, 5)
        var named = 0
        for language in ["en", "es", "zh", "xx"] {
            for parent in parents {
                var request = Stol_V1_ChildrenRequest()
                request.taxonID = parent
                request.language = language
                guard case .children(let page) = harness.send(.children(request)).result else {
                    return XCTFail("no page for \(parent)")
                }
                for child in page.taxa {
                    guard case .taxon(let single) = harness.getTaxon(child.id, language: language).result else {
                        return XCTFail("no taxon \(child.id)")
                    }
                    XCTAssertEqual(child.commonName, single.commonName, "\(child.id) in \(language)")
                    if !child.commonName.isEmpty { named += 1 }
                }
            }
        }
        XCTAssertGreaterThan(named, 10, "the fixture has common names in these languages")
    }
}
