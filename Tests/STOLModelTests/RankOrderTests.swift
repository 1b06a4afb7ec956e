import STOLModel
import XCTest

/// ``RankOrder``, the one table of rank rules: the main ranks' spellings lie on the
/// order's levels, top down, and are exactly what ``TaxonRank/init(sourceRank:)`` maps
/// (the pipeline's main view) and what the lineage templates' placeholders fill from.
final class RankOrderTests: XCTestCase {
    /// TaxonRank's spellings are the table's: each on a level of the order, each main
    /// rank's above the next one's, and TaxonRank(sourceRank:) maps exactly them.
    func testMainRankSpellings_areOnTheOrdersLevels_topDown_andAreWhatTaxonRankMaps() {
        var previousDeepest = -1
        for (rank, spellings) in RankOrder.mainRankSpellings {
            let levels = spellings.map { RankOrder.level(of: $0) }
            XCTAssertFalse(levels.contains(nil), "\(rank): every spelling is ordered")
            XCTAssertGreaterThan(levels.compactMap { $0 }.min() ?? -1, previousDeepest, "\(rank) is below the rank above it")
            previousDeepest = levels.compactMap { $0 }.max() ?? previousDeepest
            for spelling in spellings {
                XCTAssertEqual(TaxonRank(sourceRank: spelling), rank, spelling)
                XCTAssertEqual(TaxonRank(sourceRank: " \(spelling.uppercased())\t"), rank, "case and blanks around do not matter")
            }
        }
        XCTAssertEqual(RankOrder.mainRankSpellings.map(\.rank), TaxonRank.allCases)
        for rank in RankOrder.levels.joined() where !RankOrder.mainRankSpellings.contains(where: { $0.spellings.contains(rank) }) {
            XCTAssertNil(TaxonRank(sourceRank: rank), "\(rank) is no main rank")
        }
        for rank in RankOrder.unordered + ["subfamily", "strain", "cellular root", "realm"] {
            XCTAssertNil(TaxonRank(sourceRank: rank), rank)
        }
    }

    func testTheMainRanksPlaceholders_fillFromEverySpellingOfTheirRank() {
        for (rank, spellings) in RankOrder.mainRankSpellings {
            let placeholder = LineageFormat.all.first { $0.name == rank.rawValue }
            XCTAssertEqual(placeholder?.ranks, spellings, "\(rank)")
            for spelling in spellings { XCTAssertEqual(LineageFormat.slot(ofRank: spelling).map { LineageFormat.all[$0].name }, rank.rawValue) }
        }
    }
}
