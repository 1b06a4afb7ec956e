import Foundation
import GRDB
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Search with rank and IUCN filters, answered from memory (`FilteredSearchIndex`)
/// or driven by FTS5, gives what an unfiltered search gives, filtered: checked on
/// the curated database for words, prefixes and phrases taken from its own names,
/// with every rank and every status.
final class FilteredSearchTests: XCTestCase {
    func testFilteredSearch_findsExactlyTheUnfilteredHitsThatPassTheFilter() throws {
        let harness = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        harness.waitForTreeLoaded()
        _ = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled).waitForMemoryIndexes()
        let queue = try DatabaseQueue(path: harness.bundledPath)
        // Queries from the database's own names: first words of scientific names at
        // every rank, words of common names, their prefixes, and two-word phrases.
        let (scientific, common) = try queue.read { db in
            (try String.fetchAll(db, sql: "SELECT scientific_name FROM taxa ORDER BY id % 97, id LIMIT 120"),
             try String.fetchAll(db, sql: "SELECT name FROM names WHERE lang = 'en' ORDER BY id % 89, id LIMIT 80"))
        }
        var queries: [(text: String, prefix: Bool)] = []
        for name in scientific + common {
            let words = name.lowercased().split { !$0.isLetter }.map(String.init).filter { $0.count >= 3 }
            guard let first = words.first else { continue }
            queries.append((first, false))
            queries.append((String(first.prefix(3)), true))
            if words.count >= 2 { queries.append(("\"\(words[0]) \(words[1])\"", false)) }
        }
        let ranks: [Stol_V1_Rank] = [.domain, .kingdom, .phylum, .class, .order, .family, .genus, .species]
        let statuses = ["LC", "NT", "VU", "EN", "CR", "EX", "DD"]
        var compared = 0
        for (text, prefix) in queries {
            let unfiltered = try hits(harness.search(text, prefix: prefix, limit: 200, fuzzy: false))
            let complete = unfiltered.count < 200
            // Autocomplete gathers a few candidates per source, so its unfiltered hits are
            // not all there are: a filtered one may find more (never fewer).
            func check(_ filtered: [Stol_V1_SearchHit], _ expected: [Stol_V1_SearchHit], _ what: String) {
                let found = Set(filtered.map(\.taxon.id)), wanted = Set(expected.map(\.taxon.id))
                if prefix {
                    XCTAssertTrue(wanted.isSubset(of: found), "\(what): missing \(wanted.subtracting(found))")
                } else {
                    XCTAssertEqual(found, wanted, what)
                }
            }
            for rank in ranks {
                let filtered = try hits(harness.search(text, prefix: prefix, rank: rank, limit: 200, fuzzy: false))
                XCTAssertTrue(filtered.allSatisfy { $0.taxon.rank == rank }, "\(text) --rank \(rank): another rank")
                if complete {
                    check(filtered, unfiltered.filter { $0.taxon.rank == rank }, "\(text)\(prefix ? "*" : "") --rank \(rank)")
                    compared += 1
                }
            }
            for status in statuses {
                let filtered = try hits(harness.search(text, prefix: prefix, limit: 200, conservation: [status], fuzzy: false))
                XCTAssertTrue(filtered.allSatisfy { $0.taxon.conservation == status }, "\(text) --status \(status)")
                if complete {
                    check(filtered, unfiltered.filter { $0.taxon.conservation == status }, "\(text)\(prefix ? "*" : "") --status \(status)")
                    compared += 1
                }
            }
            let both = try hits(harness.search(text, prefix: prefix, rank: .species, limit: 200, conservation: ["EN", "CR"], fuzzy: false))
            if complete {
                check(both, unfiltered.filter { $0.taxon.rank == .species && ["EN", "CR"].contains($0.taxon.conservation) }, text)
            }
        }
        XCTAssertGreaterThan(compared, 3000)
        print("filtered search: \(queries.count) queries × 8 ranks and 7 statuses, \(compared) comparisons with the unfiltered hits")
    }

    func testFilteredSearch_withFuzzyFallback_stillFindsTheTypoOfTheRightRank() throws {
        let harness = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        harness.waitForTreeLoaded()
        _ = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled).waitForMemoryIndexes()
        XCTAssertEqual(try hits(harness.search("Pantera", rank: .genus)).first?.taxon.id, 9688)
        XCTAssertEqual(try hits(harness.search("Pantera leo", rank: .species)).first?.taxon.id, 9689)
        XCTAssertEqual(try hits(harness.search("lion", conservation: ["VU"])).first?.taxon.id, 9689)
        XCTAssertEqual(try hits(harness.search("lion", conservation: ["EN"])).map(\.taxon.id).contains(9689), false)
    }
}
