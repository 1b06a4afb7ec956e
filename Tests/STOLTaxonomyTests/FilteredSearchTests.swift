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
    func testFilteredSearch_findsExactlyTheUnfilteredHitsThatPassTheFilter() async throws {
        let harness = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        await harness.waitForTreeLoaded()
        _ = try await TaxonomyDatabase(path: harness.bundledPath, kind: .bundled).loadedMemoryIndexes()
        let queue = try DatabaseQueue(path: harness.bundledPath)
        // Queries from the database's own names: first words of scientific names at
        // every rank, words of common names, their prefixes, and two-word phrases.
        let (scientific, common) = try await queue.read { db in
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
            let unfiltered = try await hits(harness.search(text, prefix: prefix, limit: 200, fuzzy: false))
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
                let filtered = try await hits(harness.search(text, prefix: prefix, rank: rank, limit: 200, fuzzy: false))
                XCTAssertTrue(filtered.allSatisfy { $0.taxon.rank == rank }, "\(text) --rank \(rank): another rank")
                if complete {
                    check(filtered, unfiltered.filter { $0.taxon.rank == rank }, "\(text)\(prefix ? "*" : "") --rank \(rank)")
                    compared += 1
                }
            }
            for status in statuses {
                let filtered = try await hits(harness.search(text, prefix: prefix, limit: 200, conservation: [status], fuzzy: false))
                XCTAssertTrue(filtered.allSatisfy { $0.taxon.conservation == status }, "\(text) --status \(status)")
                if complete {
                    check(filtered, unfiltered.filter { $0.taxon.conservation == status }, "\(text)\(prefix ? "*" : "") --status \(status)")
                    compared += 1
                }
            }
            let both = try await hits(harness.search(text, prefix: prefix, rank: .species, limit: 200, conservation: ["EN", "CR"], fuzzy: false))
            if complete {
                check(both, unfiltered.filter { $0.taxon.rank == .species && ["EN", "CR"].contains($0.taxon.conservation) }, text)
            }
        }
        XCTAssertGreaterThan(compared, 3000)
        print("filtered search: \(queries.count) queries × 8 ranks and 7 statuses, \(compared) comparisons with the unfiltered hits")
    }

    func testFilteredSearch_withFuzzyFallback_stillFindsTheTypoOfTheRightRank() async throws {
        let harness = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        await harness.waitForTreeLoaded()
        _ = try await TaxonomyDatabase(path: harness.bundledPath, kind: .bundled).loadedMemoryIndexes()
        let search1 = await harness.search("Pantera", rank: .genus)
        XCTAssertEqual(try hits(search1).first?.taxon.id, 9688)
        let search2 = await harness.search("Pantera leo", rank: .species)
        XCTAssertEqual(try hits(search2).first?.taxon.id, 9689)
        let search3 = await harness.search("lion", conservation: ["VU"])
        XCTAssertEqual(try hits(search3).first?.taxon.id, 9689)
        let search4 = await harness.search("lion", conservation: ["EN"])
        XCTAssertEqual(try hits(search4).map(\.taxon.id).contains(9689), false)
    }
}
