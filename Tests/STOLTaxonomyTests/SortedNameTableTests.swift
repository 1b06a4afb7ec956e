@testable import STOLTaxonomy
import STOLModel
import STOLTestFixtures
import XCTest

/// The packed table of search's name indexes against a dictionary of the same
/// (key, taxon) pairs: exact keys, prefixes (of keys, of no key, empty, non-ASCII),
/// runs in the order asked for, and at most as many as kept.
final class SortedNameTableTests: XCTestCase {
    func testLookups_equalADictionaryOfTheSamePairs_forPairsInAnyOrder() {
        var random = SplitMix64(for: self)
        let syllables = ["pa", "pan", "th", "era", "a", "b", "é", "ze", " ", "leo", "ß"]
        var pairs: [(String, TaxonID)] = []
        for _ in 0..<4000 {
            let key = (0..<Int.random(in: 1...4, using: &random)).map { _ in syllables.randomElement(using: &random)! }.joined()
            pairs.append((key, TaxonID.random(in: 1...500, using: &random)))
        }
        var builder = SortedNameTable.Builder()
        for (key, id) in pairs { builder.append(key, id) }
        let table = builder.build(by: >)
        var expected: [String: [TaxonID]] = [:]
        for (key, id) in pairs { expected[key, default: []].append(id) }
        let keys = expected.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        XCTAssertEqual(table.count, keys.count)
        XCTAssertEqual((0..<table.count).map(table.key(at:)), keys, "every key once, by its bytes")
        for key in keys {
            XCTAssertEqual(Array(table.ids(for: key)), expected[key]!.sorted(by: >), "key \"\(key)\"")
        }
        for absent in ["", "zz", "pax", "leoleoleoleoleo"] where expected[absent] == nil {
            XCTAssertEqual(Array(table.ids(for: absent)), [], "no key \"\(absent)\"")
        }
        for prefix in ["", "p", "pa", "pan", "panth", "é", "a b", "zz", "ß"] {
            let matching = keys.filter { $0.utf8.starts(with: prefix.utf8) }
            let range = table.keys(withPrefix: prefix)
            XCTAssertEqual(range.map(table.key(at:)), matching, "prefix \"\(prefix)\"")
            XCTAssertEqual(Array(table.ids(ofKeys: range)), matching.flatMap { expected[$0]!.sorted(by: >) })
        }
    }

    func testAKeysRun_keepsTheFirstFew_inTheOrderAsked_thenAsAdded() {
        var builder = SortedNameTable.Builder()
        for id: TaxonID in [5, 3, 8, 9, 3, 1, 7] { builder.append("shared", id) }
        builder.append("other", 2)
        let table = builder.build(kept: 4) { $0 % 2 == 0 && $1 % 2 != 0 }  // even before odd, else as added
        XCTAssertEqual(Array(table.ids(for: "shared")), [8, 5, 3, 9])
        XCTAssertEqual(Array(table.ids(for: "other")), [2])
        XCTAssertEqual(Array(table.ids(ofKeys: 0..<2)), [2, 8, 5, 3, 9], "keys by their bytes")
    }
}
