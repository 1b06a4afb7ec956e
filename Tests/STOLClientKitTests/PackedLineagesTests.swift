import STOLClientKit
import STOLProtocol
import XCTest

/// The client's reading of `lineage_batch`'s packed form: each query's TSV line is the
/// line the ids form's result makes (found, merged, failed, a rank the answer leaves
/// empty), and an answer that does not add up is refused before any line is written.
final class PackedLineagesTests: XCTestCase {
    private func node(_ id: Int64, _ rank: String, _ name: String) -> Stol_V1_LineageNode {
        .with { $0.id = id; $0.rank = rank; $0.name = name }
    }

    private func packedAnswer() -> Stol_V1_LineageBatchResponse {
        .with {
            $0.packedLengths = [3, 0, 3, 2]
            $0.packedIds = [1, 9688, 9689, 1, 9688, 9689, 1, 77]
            $0.nodes = [node(9689, "species", "Panthera leo"), node(77, "", "Ranked nowhere")]
            $0.packedNotes = [.with { $0.index = 1; $0.error = .with { $0.code = .notFound; $0.message = "no taxon 424242" } },
                              .with { $0.index = 2; $0.mergedFrom = 12345 }]
        }
    }

    /// The same answer in the ids form.
    private func idsResults() -> [Stol_V1_LineageResult] {
        func found(_ query: String, _ id: Int64, _ lineage: [Int64], rank: Stol_V1_Rank, source: String, name: String,
                   merged: Int64 = 0) -> Stol_V1_LineageResult {
            .with {
                $0.query = query
                $0.taxon = .with { $0.id = id; $0.rank = rank; $0.sourceRank = source; $0.scientificName = name }
                $0.lineageIds = lineage
                $0.mergedFrom = merged
            }
        }
        return [found("9689", 9689, [1, 9688], rank: .species, source: "species", name: "Panthera leo"),
                .with { $0.query = "424242"; $0.error = .with { $0.code = .notFound; $0.message = "no taxon 424242" } },
                found("12345", 9689, [1, 9688], rank: .species, source: "species", name: "Panthera leo", merged: 12345),
                found("77", 77, [1], rank: .unspecified, source: "", name: "Ranked nowhere")]
    }

    func testEachLine_isTheIdsFormsLine_foundMergedFailedOrUnranked() throws {
        let queries = ["9689", "424242", "12345", "77"]
        let packed = try PackedLineages(packedAnswer(), queries: queries.count)
        let tsv = LineageTSV(ids: true)
        for (position, expected) in idsResults().enumerated() {
            var line: [UInt8] = []
            if let taxon = packed.taxon(position) {
                tsv.append(query: queries[position], taxon: taxon, ids: packed.ids(position), to: &line)
            } else {
                line = Array(tsv.line(packed.failure(position, query: queries[position])).utf8)
            }
            XCTAssertEqual(String(decoding: line, as: UTF8.self), tsv.line(expected), queries[position])
            XCTAssertEqual(packed.mergedFrom(position), expected.mergedFrom, queries[position])
        }
    }

    func testAnAnswerThatDoesNotAddUp_isRefused() {
        var fewer = packedAnswer()
        fewer.packedIds.removeLast()
        var unlisted = packedAnswer()
        unlisted.nodes.removeLast()
        var silent = packedAnswer()
        silent.packedNotes.removeFirst()  // query 2 has no lineage and no error
        for (answer, why) in [(fewer, "add up"), (unlisted, "not among its nodes"), (silent, "neither a lineage nor an error")] {
            XCTAssertThrowsError(try PackedLineages(answer, queries: 4)) { XCTAssertTrue("\($0)".contains(why), "\($0)") }
        }
        XCTAssertThrowsError(try PackedLineages(packedAnswer(), queries: 3)) { XCTAssertTrue("\($0)".contains("answer 3 queries"), "\($0)") }
    }
}
