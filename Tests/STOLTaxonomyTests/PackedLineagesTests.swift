import Foundation
import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The packed form of `lineage_batch` (`LINEAGE_FORM_PACKED`) says what the ids form
/// says: per query its lineage with the taxon last, the taxon's id, rank and name once
/// in `nodes`, and a note for each query that failed or was merged; in both views,
/// from the whole tree, from the main ranks' tree, and from SQL before any tree.
final class PackedLineagesTests: XCTestCase {
    /// One query's answer read back from a packed response.
    private struct Unpacked: Equatable {
        var ids: [Int64]
        var taxon: Stol_V1_LineageNode?
        var error: Stol_V1_Error?
        var mergedFrom: Int64
    }

    private func unpack(_ batch: Stol_V1_LineageBatchResponse, queries: Int, file: StaticString = #filePath,
                        line: UInt = #line) -> [Unpacked] {
        XCTAssertEqual(batch.results, [], "no result per query", file: file, line: line)
        XCTAssertEqual(batch.packedLengths.count, queries, file: file, line: line)
        let nodes = Dictionary(batch.nodes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(nodes.count, batch.nodes.count, "each taxon once", file: file, line: line)
        let notes = Dictionary(batch.packedNotes.map { (Int($0.index), $0) }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(batch.packedNotes.map(\.index), batch.packedNotes.map(\.index).sorted(), "notes in order", file: file, line: line)
        var position = 0
        var answers: [Unpacked] = []
        for (index, length) in batch.packedLengths.enumerated() {
            let ids = Array(batch.packedIds[position..<position + Int(length)])
            position += Int(length)
            answers.append(Unpacked(ids: ids, taxon: ids.last.flatMap { nodes[$0] },
                                    error: notes[index].flatMap { $0.hasError ? $0.error : nil },
                                    mergedFrom: notes[index]?.mergedFrom ?? 0))
        }
        XCTAssertEqual(position, batch.packedIds.count, "the lengths add up to the ids", file: file, line: line)
        return answers
    }

    /// What the packed form must say of each result of the ids form.
    private func expected(_ results: [Stol_V1_LineageResult]) -> [Unpacked] {
        results.map { result in
            guard result.hasTaxon else { return Unpacked(ids: [], taxon: nil, error: result.error, mergedFrom: 0) }
            var node = Stol_V1_LineageNode()
            node.id = result.taxon.id
            node.rank = result.taxon.sourceRank.isEmpty ? TaxonRank(result.taxon.rank)!.rawValue : result.taxon.sourceRank
            node.name = result.taxon.scientificName
            return Unpacked(ids: result.lineageIds + [result.taxon.id], taxon: node, error: nil, mergedFrom: result.mergedFrom)
        }
    }

    func testThePackedForm_isTheIdsForm_inBothViews_withErrorsAndMergedIds() async throws {
        let queries = ["9689", "Panthera tigris", "338153", "1", "9606", "424242", "Pantherinae", "12345", "-3", "",
                       " 9689 ", "Felis leo", "9689"]
        for fullTree in [true, false] {
            let harness = try await ncbiFixtureHarness(self, fullTree: fullTree)
            for ranks in fullTree ? [Stol_V1_RankView.all, .main] : [.main] {
                func batch(_ form: Stol_V1_LineageForm) async throws -> Stol_V1_LineageBatchResponse {
                    let response = await harness.send(.lineageBatch(.with { $0.queries = queries; $0.ranks = ranks; $0.form = form }))
                    guard case .lineageBatch(let batch) = response.result else { throw TestSupportError("expected a batch, got \(response)") }
                    return batch
                }
                let ids = try await batch(.ids)
                let packed = try await batch(.packed)
                let answers = unpack(packed, queries: queries.count)
                XCTAssertEqual(answers, expected(ids.results), "\(ranks), whole tree: \(fullTree)")
                XCTAssertEqual(packed.nodes.map(\.id), ids.results.filter(\.hasTaxon).map(\.taxon.id).reduce(into: []) {
                    if !$0.contains($1) { $0.append($1) }
                }, "in the order they first occur (\(ranks))")
                XCTAssertEqual(answers[7].mergedFrom, 12345, "a merged id says so (\(ranks))")
                XCTAssertEqual(answers[5].error?.code, .notFound)
                XCTAssertEqual(answers[8].error?.code, .invalidRequest)
                XCTAssertEqual(answers[9].error?.code, .invalidRequest)
                XCTAssertEqual(answers[0].ids.last, 9689)
            }
        }
    }

    func testThePackedForm_fromSQLBeforeTheTree_isTheTreesAnswer() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/fixture.sqlite"
        try buildFixtureDatabase(at: path, in: directory)
        let sql = try TaxonomyDatabase(path: path, kind: .bundled, loadIndexes: false)
        let memory = try TaxonomyDatabase(path: path, kind: .bundled)
        XCTAssertNotNil(memory.waitForMemoryIndexes().tree)
        let ids = try LookupQueries(database: sql).sampleIDs(rank: nil, count: 10_000)
        let names = try ids.map { try LookupQueries(database: sql).taxon(id: $0, language: "en").scientificName }
        let queries = ids.map(String.init) + names + ["424242", "-3", ""]
        let fromSQL = try LineageQueries(database: sql).lineageBatch(queries, language: "en", form: .packed)
        let fromTree = try LineageQueries(database: memory).lineageBatch(queries, language: "en", form: .packed)
        XCTAssertEqual(fromSQL, fromTree)
        XCTAssertEqual(unpack(fromTree, queries: queries.count),
                       expected(try LineageQueries(database: sql).lineageBatch(queries, language: "en", form: .ids).results))
    }

    func testThePackedForm_withATemplateOrColumns_isRefused_namingTheForm() async throws {
        let harness = try await ncbiFixtureHarness(self)
        for request in [Stol_V1_LineageBatchRequest.with { $0.queries = ["9689"]; $0.form = .packed; $0.template.format = "{g}" },
                        .with { $0.queries = ["9689"]; $0.form = .packed; $0.columns = ["genus"] }] {
            let response = await harness.send(.lineageBatch(request))
            XCTAssertEqual(response.error.code, .invalidRequest)
            XCTAssertEqual(response.error.details["field"], "form")
        }
    }
}
