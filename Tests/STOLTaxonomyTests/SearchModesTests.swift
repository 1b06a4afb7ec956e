import Foundation
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Phrases, filters, short prefixes and the fuzzy fallback (docs/design/queries-and-algorithms.md §7).
final class SearchModesTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
    }

    /// The word indexes are built in the background; tests of what they answer wait for them.
    private func waitForIndexes() async throws {
        let database = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled)
        _ = await database.loadedMemoryIndexes()
        await harness.waitForTreeLoaded()
    }

    func testSearch_lionAndLeon_findPantheraLeoFirst() async throws {
        for query in ["lion", "león"] {
            let found = try await hits(harness.search(query))
            XCTAssertEqual(found.first?.taxon.id, 9689, query)
            XCTAssertFalse(found.first!.fuzzy)
        }
    }

    func testSearch_aOneLetterTypoOfASpeciesName_stillFindsIt() async throws {
        try await waitForIndexes()
        for typo in ["Panthera leoo", "Pantera leo", "Panthera lep", "Panthera tigirs", "Felis catsu"] {
            let found = try await hits(harness.search(typo))
            let expected: Int64 = typo.contains("ti") ? 9694 : (typo.hasPrefix("Felis") ? 9685 : 9689)
            XCTAssertEqual(found.first?.taxon.id, expected, typo)
            XCTAssertEqual(found.first?.fuzzy, true, typo)
            XCTAssertLessThanOrEqual(found.first?.editDistance ?? 9, 2, typo)
        }
    }

    func testSearch_fuzzy_allowsOneEditBelowFiveCharactersAndTwoFromFive() async throws {
        try await waitForIndexes()
        let search1 = await harness.search("lyon")
        XCTAssertEqual(try hits(search1).first?.taxon.id, 9689, "one edit from lion")
        let search2 = await harness.search("lino")
        XCTAssertFalse(try hits(search2).contains { $0.taxon.id == 9689 }, "two edits from lion, under five letters")
        let tigre = try await hits(harness.search("tigre"))
        XCTAssertEqual(tigre.first?.taxon.id, 9694, "two edits from tiger, five letters")
        XCTAssertEqual(tigre.first?.editDistance, 2)
        XCTAssertEqual(tigre.first?.matchedName, "tiger")
    }

    func testSearch_noFuzzy_returnsOnlyExactMatches() async throws {
        try await waitForIndexes()
        let search3 = await harness.search("Pantera leo", fuzzy: false)
        XCTAssertEqual(try hits(search3).count, 0)
        let search4 = await harness.search("Pantera leo", fuzzy: true)
        XCTAssertEqual(try hits(search4).first?.taxon.id, 9689)
    }

    func testSearch_phrase_requiresAdjacentWordsInOrder() async throws {
        let search5 = await harness.search("\"pedunculate oak\"", fuzzy: false)
        XCTAssertEqual(hitIDs(search5), [38942])
        let search6 = await harness.search("\"oak pedunculate\"", fuzzy: false)
        XCTAssertEqual(hitIDs(search6), [])
        let search7 = await harness.search("oak pedunculate", fuzzy: false)
        XCTAssertEqual(hitIDs(search7), [38942], "without quotes: any order")
        let search8 = await harness.search("house cat", phrase: true, fuzzy: false)
        XCTAssertEqual(hitIDs(search8), [9685])
        let search9 = await harness.search("cat house", phrase: true, fuzzy: false)
        XCTAssertEqual(hitIDs(search9), [])
    }

    func testSearch_conservationFilter_keepsOnlyThoseStatuses() async throws {
        let endangered = try await hits(harness.search("panthera", prefix: true, conservation: ["EN"]))
        XCTAssertEqual(endangered.map(\.taxon.id), [9694])
        let two = await Set(try hits(harness.search("panthera", conservation: ["EN", "VU"])).map(\.taxon.id))
        XCTAssertEqual(two, [9689, 9694], "the leopard and jaguar have no status in the fixture")
        let search10 = await harness.search("panthera", conservation: ["XX"])
        XCTAssertEqual(errorCode(search10), .invalidRequest)
    }

    func testSearch_shortPrefix_answersFromNameIndexes() async throws {
        try await waitForIndexes()
        let p = try await hits(harness.search("p", prefix: true, limit: 50))
        XCTAssertTrue(p.contains { $0.taxon.id == 9688 }, "Panthera starts with p")
        XCTAssertTrue(p.allSatisfy { hit in
            SearchQuery.words(in: hit.matchedName).contains { $0.hasPrefix("p") }
        })
        let genera = try await hits(harness.search("pa", prefix: true, rank: .genus))
        XCTAssertEqual(genera.map(\.taxon.id), [9688])
        let common = try await hits(harness.search("ja", prefix: true))
        XCTAssertEqual(common.first?.taxon.id, 9690, "jaguar, a common name")
        XCTAssertEqual(common.first?.matchType, .common)
        let twoWords = try await hits(harness.search("panthera l", prefix: true, fuzzy: false))
        XCTAssertEqual(twoWords.map(\.taxon.id), [9689], "Panthera leo \(twoWords.map(\.matchedName))")
    }

    func testSearch_exactNameRanksAboveLongerNames() async throws {
        let panthera = try await hits(harness.search("panthera"))
        XCTAssertEqual(panthera.first?.taxon.id, 9688, "the genus itself before its species")
        XCTAssertGreaterThan(panthera[0].score, panthera[1].score)
    }

    func testLevenshtein_andVocabulary_matchABruteForceScan() {
        XCTAssertEqual(Levenshtein.distance("kitten", "sitting"), 3)
        XCTAssertEqual(Levenshtein.distance("", "abc"), 3)
        XCTAssertEqual(Levenshtein.distance("león", "leon"), 1)
        var generator = SplitMix64(for: self)
        let letters = Array("abcde")
        let words = (0..<600).map { _ in String((0..<Int.random(in: 1...8, using: &generator)).map { _ in letters.randomElement(using: &generator)! }) }
        let vocabulary = FuzzyVocabulary(words: words)
        for query in ["abc", "edcba", "aaaaa", "b", "abcdeab"] {
            for distance in [1, 2] {
                let expected = Set(words.filter { Levenshtein.distance(query, $0) <= distance })
                let found = Set(vocabulary.corrections(of: query, maximumDistance: distance, limit: 10_000).map(\.word))
                XCTAssertEqual(found, expected, "\(query) within \(distance)")
            }
        }
    }
}
