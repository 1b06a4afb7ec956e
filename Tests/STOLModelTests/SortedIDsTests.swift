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
}
