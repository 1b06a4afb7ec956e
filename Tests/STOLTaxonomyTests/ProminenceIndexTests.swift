@testable import STOLTaxonomy
import STOLModel
import STOLTestFixtures
import XCTest

/// The in-memory prominence index against a brute force over the same names:
/// every prefix of one, two or more characters gets the most prominent taxa whose
/// folded name starts with it (then by id), whatever order the names came in; and
/// an abbreviation gets the binomials it abbreviates, in either spelling.
final class ProminenceIndexTests: XCTestCase {
    func testPrefixes_equalABruteForce_forNamesInAnyOrder() {
        var random = SplitMix64(for: self)
        let syllables = ["pa", "pan", "th", "era", "a", "b", "é", "ze", " ", "leo"]
        var scores: [TaxonID: Float] = [:]
        var names: [(name: String, id: TaxonID)] = []
        for id in TaxonID(1)...TaxonID(3000) {
            let name = (0..<Int.random(in: 1...4, using: &random)).map { _ in syllables.randomElement(using: &random)! }.joined()
            names.append((name, id))
            scores[id] = Float(Int.random(in: 0...20, using: &random))  // many ties: the id decides
        }
        let index = ProminenceIndex(scores: scores, names: names.shuffled(using: &random))
        var prefixes = Set(names.map { String($0.name.prefix(1)) } + names.map { String($0.name.prefix(2)) })
        prefixes.formUnion(["pan", "panth", "zz", "é", "a b"])
        for prefix in prefixes where !prefix.isEmpty {
            let expected = names.filter { $0.name.hasPrefix(prefix) }
                .sorted { scores[$0.id]! != scores[$1.id]! ? scores[$0.id]! > scores[$1.id]! : $0.id < $1.id }
                .prefix(ProminenceIndex.shortPrefixKept).map(\.id)
            XCTAssertEqual(index.prominent(withNamePrefix: prefix, limit: ProminenceIndex.shortPrefixKept), Array(expected),
                           "prefix \"\(prefix)\"")
        }
    }

    func testAbbreviations_findEachBinomial_withAndWithoutItsSpace() {
        let index = ProminenceIndex(scores: [1: 5, 2: 9, 3: 1, 4: 2],
                                    names: [("escherichia coli", 1), ("caenorhabditis elegans", 2),
                                            ("cestrum elegans", 3), ("homo sapiens neanderthalensis", 4)])
        let abbreviations = index.abbreviations()
        XCTAssertEqual(Array(abbreviations.ids(for: "e coli")), [1])
        XCTAssertEqual(Array(abbreviations.ids(for: "ecoli")), [1], "a binomial written as one word")
        XCTAssertEqual(Array(abbreviations.ids(for: "c elegans")), [2, 3], "the most prominent first")
        XCTAssertEqual(Array(abbreviations.ids(for: "h sapiens neanderthalensis")), [4])
        XCTAssertEqual(Array(abbreviations.ids(for: "hsapiensneanderthalensis")), [], "only a binomial is written as one word")
        XCTAssertEqual(Array(abbreviations.ids(for: "c elegan")), [], "a key's prefix is not the key")
    }

    func testAbbreviations_keepTheMostProminentFew_ofAKeySharedByMany() {
        let count = ProminenceIndex.abbreviationsKept + 5
        var scores: [TaxonID: Float] = [:]
        var names: [(name: String, id: TaxonID)] = []
        for id in TaxonID(1)...TaxonID(count) {
            names.append(("c\(String(repeating: "a", count: Int(id))) elegans", id))
            scores[id] = Float(id % 4)  // ties: the id decides
        }
        let expected = scores.keys.sorted { scores[$0]! != scores[$1]! ? scores[$0]! > scores[$1]! : $0 < $1 }
            .prefix(ProminenceIndex.abbreviationsKept)
        let abbreviations = ProminenceIndex(scores: scores, names: names.reversed()).abbreviations()
        XCTAssertEqual(Array(abbreviations.ids(for: "c elegans")), Array(expected))
        XCTAssertEqual(Array(abbreviations.ids(for: "celegans")), Array(expected))
    }
}
