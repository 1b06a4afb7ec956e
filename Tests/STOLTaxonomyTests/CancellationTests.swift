import STOLProtocol
import XCTest

/// Work stops when nobody waits for it: a request whose task is cancelled (the server
/// cancels it when its client closes the connection) stops at the next item of its
/// loop and is answered `cancelled` (never sent), instead of working to the end.
/// Tried: each bulk request at its largest legal size (1000 queries, pairs, sets,
/// names or ids; a tree of 60,001 nodes), in a task cancelled before it starts, and the
/// same request in a task that is not cancelled, which is answered.
final class CancellationTests: XCTestCase {
    /// The largest legal request of each batch kind, over the fixture's taxa.
    private static let requests: [(name: String, body: Stol_V1_TaxonomyRequest.OneOf_Body)] = {
        let ids = ["9689", "9695", "9685", "562", "83334", "2697049", "9999901", "Panthera leo"]
        let queries = (0..<1000).map { ids[$0 % ids.count] }
        var depths: [UInt32] = [0], taxa: [Int64] = [0]
        for index in 0..<60_000 {
            depths.append(1)
            taxa.append([9689, 9685][index % 2])
        }
        return [
            ("lineage_batch", .lineageBatch(.with { $0.queries = queries })),
            ("lineage_batch --ranks all", .lineageBatch(.with { $0.queries = queries; $0.ranks = .all })),
            ("compare_batch", .compareBatch(.with { $0.pairs = queries.map { q in .with { $0.a = q; $0.b = "9685" } } })),
            ("lca_batch", .lcaBatch(.with { $0.sets = queries.enumerated().map { i, q in .with { $0.key = String(i); $0.members = [q, "9695"] } } })),
            ("name_lookup", .nameLookup(.with { $0.names = (0..<1000).map { ["Panthera leo", "Felis", "lion", "Nobody"][$0 % 4] } })),
            ("get_taxa", .getTaxa(.with { $0.taxonIds = (1...1000).map { Int64($0) } })),
            ("rank_filter", .rankFilter(.with { $0.queries = queries; $0.lowerThan = "genus" })),
            ("annotate_tree", .annotateTree(.with { $0.depths = depths; $0.taxonIds = taxa })),
        ]
    }()

    func testEveryBatch_inACancelledTask_stopsUnanswered_andUncancelledIsAnswered() async throws {
        let harness = try await ncbiFixtureHarness(self, fullTree: true)
        _ = await harness.getTaxon(9689)  // the in-memory indexes are loaded: the requests go straight to work
        for (name, body) in Self.requests {
            let answered = await harness.send(body)
            if case .error(let error)? = answered.result { XCTFail("\(name) uncancelled: \(error)") }
            XCTAssertEqual(answered.error.code, .unspecified, name)
            let cancelled = Task { () async -> Stol_V1_TaxonomyResponse in
                withUnsafeCurrentTask { $0?.cancel() }
                return await harness.send(body)
            }
            let response = await cancelled.value
            XCTAssertEqual(response.error.code, .unavailable, "\(name) was answered after its task was cancelled")
            XCTAssertEqual(response.error.message, "the request was cancelled", name)
        }
    }
}
