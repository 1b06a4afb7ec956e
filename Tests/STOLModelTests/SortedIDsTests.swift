@testable import STOLModel
import STOLTestFixtures
import XCTest

/// The id lookups of every tree's build and query: a binary search of an ascending
/// id table, and ``IDPositions``, a table indexed by id where ids are dense (NCBI's)
/// with the binary search elsewhere. Both against a dictionary.
final class SortedIDsTests: XCTestCase {
    func testPositionOfSorted_isTheIndexOfTheId_orNilForEveryOtherId() {
        var random = SplitMix64(for: self)
        for _ in 0..<300 {
            let ids = Array(Set((0..<Int.random(in: 0...60, using: &random)).map { _ in
                TaxonID.random(in: -5...400, using: &random)
            })).sorted()
            let expected = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($0.element, $0.offset) })
            for id in TaxonID(-10)...TaxonID(410) {
                XCTAssertEqual(ids.position(ofSorted: id), expected[id], "\(id) in \(ids)")
            }
        }
        XCTAssertNil([TaxonID]().position(ofSorted: 1))
        XCTAssertEqual([TaxonID.max].position(ofSorted: .max), 0)
    }

    func testIDPositions_answerAsTheSearch_denseOrSparse() {
        var random = SplitMix64(for: self)
        for round in 0..<200 {
            let count = Int.random(in: 0...80, using: &random)
            // Dense (a table by id), sparse (ids up to 2^40: the binary search) or with negatives.
            let spread: ClosedRange<TaxonID> = [0...TaxonID(2 * count + 10), 0...(1 << 40), -50...50][round % 3]
            let ids = Array(Set((0..<count).map { _ in TaxonID.random(in: spread, using: &random) })).sorted()
            let positions = IDPositions(ids)
            var probes = ids + (0..<50).map { _ in TaxonID.random(in: spread, using: &random) }
            probes += [-1, 0, TaxonID.max, TaxonID.min, (ids.last ?? 0) + 1]
            for id in probes {
                XCTAssertEqual(positions.position(of: id), ids.position(ofSorted: id), "round \(round): \(id)")
            }
        }
    }

    /// The query path's lookup (``SortedIDLookup``, ``TaxonomyTree/index(of:)``): dense,
    /// sparse, negative and extreme ids, clusters that fill one bucket with most of the
    /// table, and probes outside every bucket, each answered as the binary search.
    func testSortedIDLookup_answersAsTheSearch_whateverTheIdsSpread() {
        var random = SplitMix64(for: self)
        let keeper = ArrayKeeper()
        for round in 0..<400 {
            let count = Int.random(in: 0...200, using: &random)
            let spread: ClosedRange<TaxonID> = [0...TaxonID(2 * count + 10), 1...(1 << 40), -50...50,
                                                TaxonID.min...TaxonID.max][round % 4]
            var ids = Set((0..<count).map { _ in TaxonID.random(in: spread, using: &random) })
            if round % 5 == 0 { ids.formUnion((0..<TaxonID(count)).map { 1_000_000 + $0 }) }  // one dense cluster
            let sorted = ids.sorted(), table = TreeArray(sorted, keptBy: keeper)
            let lookup = SortedIDLookup(table)
            var probes = sorted + (0..<100).map { _ in TaxonID.random(in: spread, using: &random) }
            probes += sorted.map { $0 &+ 1 } + sorted.map { $0 &- 1 }
            probes += [-1, 0, 1, TaxonID.max, TaxonID.min, 999_999, 1_000_000 + TaxonID(count)]
            for id in probes {
                XCTAssertEqual(lookup.position(of: id, in: table), sorted.position(ofSorted: id), "round \(round): \(id)")
            }
        }
        let empty = TreeArray<TaxonID>([], keptBy: keeper)
        XCTAssertNil(SortedIDLookup(empty).position(of: 1, in: empty))
        // Ids out of order (a damaged tree image, refused after its lookup is made): no trap.
        let unordered = TreeArray<TaxonID>([5, 900, -3, 7, 1 << 50, 2], keptBy: keeper)
        for id in unordered { _ = SortedIDLookup(unordered).position(of: id, in: unordered) }
        let largest = TreeArray<TaxonID>([.max], keptBy: keeper), extremes = TreeArray<TaxonID>([.min, .max], keptBy: keeper)
        XCTAssertEqual(SortedIDLookup(largest).position(of: .max, in: largest), 0)
        XCTAssertEqual(SortedIDLookup(extremes).position(of: .max, in: extremes), 1)
    }
}
