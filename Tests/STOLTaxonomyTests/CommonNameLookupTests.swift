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

    override func setUp() async throws {
        harness = try ServiceHarness(self)
        await harness.waitForTreeLoaded()
    }

    func testCommonlyNamed_isExactlyTheTaxaWithACommonOrVernacularName() async throws {
        let database = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled)
        let indexes = await database.loadedMemoryIndexes()
        let set = try XCTUnwrap(indexes.commonlyNamed)
        let expected = try await DatabaseQueue(path: harness.bundledPath).read { db in
            try Set(Int64.fetchAll(db, sql: "SELECT DISTINCT taxon_id FROM names WHERE name_type IN ('common','vernacular')"))
        }
        XCTAssertEqual(set, expected)
        let synonymOnly = try await DatabaseQueue(path: harness.bundledPath).read { db in
            try Int64.fetchAll(db, sql: """
                SELECT DISTINCT taxon_id FROM names WHERE name_type = 'synonym'
                EXCEPT SELECT taxon_id FROM names WHERE name_type IN ('common','vernacular')
                """)
        }
        for id in synonymOnly { XCTAssertFalse(set.contains(id), "\(id) has only synonyms") }
    }

    func testChildren_withTheIndexesLoaded_carryTheSameCommonNamesAsSingleLookups() async throws {
        // Every parent of the fixture, in languages with names, without, and unknown.
        let parents = try await DatabaseQueue(path: harness.bundledPath).read { db in
            try Int64.fetchAll(db, sql: "SELECT DISTINCT parent_id FROM taxa WHERE parent_id IS NOT NULL")
        }
        XCTAssertGreaterThan(parents.count, 5)
        var named = 0
        for language in ["en", "es", "zh", "xx"] {
            for parent in parents {
                var request = Stol_V1_ChildrenRequest()
                request.taxonID = parent
                request.language = language
                let answer = await harness.send(.children(request)).result
                if language == "xx" {
                    // No names in that language at all: refused, not answered without names.
                    guard case .error(let error) = answer, error.code == .invalidRequest else {
                        return XCTFail("an unknown language was answered: \(String(describing: answer))")
                    }
                    continue
                }
                guard case .children(let page) = answer else {
                    return XCTFail("no page for \(parent)")
                }
                for child in page.taxa {
                    guard case .taxon(let single) = await harness.getTaxon(child.id, language: language).result else {
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
