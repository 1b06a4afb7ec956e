import Foundation
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Phrases, filters, short prefixes and the fuzzy fallback (seeds/000 §8).
final class SearchModesTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
    }

    /// The word indexes are built in the background; tests of what they answer wait for them.
    private func waitForIndexes() throws {
        let database = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled)
        _ = database.waitForMemoryIndexes()
        harness.waitForTreeLoaded()
    }

    func testSearch_lionAndLeon_findPantheraLeoFirst() throws {
        for query in ["lion", "león"] {
            let found = try hits(harness.search(query))
            XCTAssertEqual(found.first?.taxon.id, 9689, query)
            XCTAssertFalse(found.first!.fuzzy)
        }
    }

    func testSearch_aOneLetterTypoOfASpeciesName_stillFindsIt() throws {
        try waitForIndexes()
        for typo in ["Panthera leoo", "Pantera leo", "Panthera lep", "Panthera tigirs", "Felis catsu"] {
            let found = try hits(harness.search(typo))
            let expected: Int64 = typo.contains("ti") ? 9694 : (typo.hasPrefix("Felis") ? 9685 : 9689)
            XCTAssertEqual(found.first?.taxon.id, expected, typo)
            XCTAssertEqual(found.first?.fuzzy, true, typo)
            XCTAssertLessThanOrEqual(found.first?.editDistance ?? 9, 2, typo)
        }
    }

    func testSearch_fuzzy_allowsOneEditBelowFiveCharactersAndTwoFromFive() throws {
        try waitForIndexes()
        XCTAssertEqual(try hits(harness.search("lyon")).first?.taxon.id, 9689, "one edit from lion")
        XCTAssertFalse(try hits(harness.search("lino")).contains { $0.taxon.id == 9689 }, "two edits from lion, under five letters")
        let tigre = try hits(harness.search("tigre"))
        XCTAssertEqual(tigre.first?.taxon.id, 9694, "two edits from tiger, five letters")
        XCTAssertEqual(tigre.first?.editDistance, 2)
        XCTAssertEqual(tigre.first?.matchedName, "tiger")
    }

    func testSearch_noFuzzy_returnsOnlyExactMatches() throws {
        try waitForIndexes()
        XCTAssertEqual(try hits(harness.search("Pantera leo", fuzzy: false)).count, 0)
        XCTAssertEqual(try hits(harness.search("Pantera leo", fuzzy: true)).first?.taxon.id, 9689)
    }

    func testSearch_phrase_requiresAdjacentWordsInOrder() throws {
        XCTAssertEqual(hitIDs(harness.search("\"pedunculate oak\"", fuzzy: false)), [38942])
        XCTAssertEqual(hitIDs(harness.search("\"oak pedunculate\"", fuzzy: false)), [])
        XCTAssertEqual(hitIDs(harness.search("oak pedunculate", fuzzy: false)), [38942], "without quotes: any order")
        XCTAssertEqual(hitIDs(harness.search("house cat", phrase: true, fuzzy: false)), [9685])
        XCTAssertEqual(hitIDs(harness.search("cat house", phrase: true, fuzzy: false)), [])
    }

    func testSearch_conservationFilter_keepsOnlyThoseStatuses() throws {
        let endangered = try hits(harness.search("panthera", prefix: true, conservation: ["EN"]))
        XCTAssertEqual(endangered.map(\.taxon.id), [9694])
        let two = Set(try hits(harness.search("panthera", conservation: ["EN", "VU"])).map(\.taxon.id))
        XCTAssertEqual(two, [9689, 9694], "the leopard and jaguar have no status in the fixture")
        XCTAssertEqual(errorCode(harness.search("panthera", conservation: ["XX"])), .invalidRequest)
    }

    func testSearch_shortPrefix_answersFromNameIndexes() throws {
        try waitForIndexes()
        let p = try hits(harness.search("p", prefix: true, limit: 50))
        XCTAssertTrue(p.contains { $0.taxon.id == 9688 }, "Panthera starts with p")
        XCTAssertTrue(p.allSatisfy { hit in
            SearchQuery.words(in: hit.matchedName).contains { $0.hasPrefix("p") }
        })
        let genera = try hits(harness.search("pa", prefix: true, rank: .genus))
        XCTAssertEqual(genera.map(\.taxon.id), [9688])
        let common = try hits(harness.search("ja", prefix: true))
        XCTAssertEqual(common.first?.taxon.id, 9690, "jaguar, a common name")
        XCTAssertEqual(common.first?.matchType, .common)
        let twoWords = try hits(harness.search("panthera l", prefix: true, fuzzy: false))
        XCTAssertEqual(twoWords.map(\.taxon.id), [9689], "Panthera leo \(twoWords.map(\.matchedName))")
    }

    func testSearch_exactNameRanksAboveLongerNames() throws {
        let panthera = try hits(harness.search("panthera"))
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
