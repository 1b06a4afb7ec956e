import Foundation
import GRDB
import STOLModel
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import Synchronization
import XCTest

final class RelativesTests: XCTestCase {
    private func relatives(_ harness: ServiceHarness, _ id: Int64, n: UInt32, computed: Bool = false,
                           maximumCandidates: UInt32 = 0, file: StaticString = #filePath,
                           line: UInt = #line) async throws -> Stol_V1_RelativesResponse {
        let response = await harness.relatives(id, n: n, computed: computed, maximumCandidates: maximumCandidates)
        guard case .relatives(let result)? = response.result else {
            XCTFail("expected relatives of \(id), got \(String(describing: response.result))", file: file, line: line)
            throw POSIXError(.EINVAL)
        }
        return result
    }

    private func rows(_ result: Stol_V1_RelativesResponse) -> [[Int64]] {
        result.relatives.map { [$0.taxon.id, $0.lca.id, Int64($0.lcaDepth), Int64($0.distance), Int64($0.rankOrder)] }
    }

    func testRelatives_ofTheLion_areTheOtherBigCatsFirst() async throws {
        let harness = try ServiceHarness(self)
        let result = try await relatives(harness, 9689, n: 4)
        XCTAssertEqual(result.source, .precomputed)
        XCTAssertEqual(result.relatives.map(\.taxon.id), [9690, 9691, 9694, 9685], "same genus by name, then the cat")
        XCTAssertEqual(result.relatives.map(\.distance), [2, 2, 2, 4])
        XCTAssertEqual(result.relatives.last?.lca.id, 9681)
        XCTAssertEqual(result.relatives.map(\.rankOrder), [1, 2, 3, 4])
    }

    /// The precomputed table (written by the pipeline) and the on-demand
    /// computation on the server's compact tree agree exactly, for every species
    /// of the curated database and every n the table can answer; beyond the
    /// table's N the computation agrees with a brute force over every species
    /// (``NaiveTree``, which shares no code with the server's tree).
    func testRelatives_precomputedAndComputed_agreeForEverySpeciesOfTheCuratedDatabase() async throws {
        let harness = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        let nodes = try await DatabaseQueue(path: harness.bundledPath).read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, main_parent_id AS parent_id, main_rank AS rank, scientific_name FROM taxa WHERE main_rank IS NOT NULL
                """).map {
                TreeNode(id: $0["id"], parentID: $0["parent_id"], rank: TaxonRank(rawValue: $0["rank"])!,
                         scientificName: $0["scientific_name"])
            }
        }
        let naive = NaiveTree(nodes)
        let species = nodes.filter { $0.rank == .species }.map(\.id)
        XCTAssertGreaterThan(species.count, 300)
        let tableN = await harness.status()!.precomputedRelatives
        XCTAssertEqual(tableN, 10)
        for id in species {
            for n: UInt32 in [1, 3, 10] {
                let precomputed = try await relatives(harness, id, n: n)
                let computed = try await relatives(harness, id, n: n, computed: true)
                XCTAssertEqual(computed.source, .computed)
                XCTAssertFalse(computed.truncated)
                XCTAssertEqual(rows(precomputed), rows(computed), "species \(id), n \(n)")
            }
            for n: UInt32 in [25, 100] {
                let computed = try await relatives(harness, id, n: n)
                XCTAssertEqual(computed.source, .computed, "more than the table holds is computed")
                let expected = naive.ranking(of: id).prefix(Int(n)).enumerated().map {
                    [$0.element.id, $0.element.lca, Int64(naive.depth($0.element.lca)), Int64($0.element.distance), Int64($0.offset + 1)]
                }
                XCTAssertEqual(rows(computed), expected, "species \(id), n \(n)")
            }
        }
    }

    func testRelatives_candidateGuard_stopsTheComputationAndSaysSo() async throws {
        let harness = try ServiceHarness(self)
        let guarded = try await relatives(harness, 9689, n: 5, computed: true, maximumCandidates: 2)
        XCTAssertTrue(guarded.truncated)
        XCTAssertEqual(guarded.candidatesExamined, 2)
        let full = try await relatives(harness, 9689, n: 5, computed: true)
        XCTAssertFalse(full.truncated)
        XCTAssertEqual(full.relatives.count, 5)
    }

    func testRelatives_ofAGenusOrWithNOutOfRange_answerInvalidRequest() async throws {
        let harness = try ServiceHarness(self)
        let relatives1 = await harness.relatives(9688, n: 5)
        XCTAssertEqual(errorCode(relatives1), .invalidRequest)
        let relatives2 = await harness.relatives(9689, n: 101)
        XCTAssertEqual(errorCode(relatives2), .invalidRequest)
        let relatives3 = await harness.relatives(424_242, n: 5)
        XCTAssertEqual(errorCode(relatives3), .notFound)
        let relatives4 = try await relatives(harness, 9689, n: 0)
        XCTAssertEqual(relatives4.relatives.count, 7, "0 means 10; the fixture has 7 other species")
    }

    /// Computed relatives need the in-memory tree, built in the background after
    /// a start. Held back here until the test starts the build: more requests
    /// for computed relatives than the cooperative pool has threads wait for it
    /// suspended, so a lookup sent after them is still answered (were they
    /// blocking their threads, it would find none). Once built, each waiting
    /// request gets the exact computed answer.
    func testComputedRelatives_whileTheTreeIsBuilt_waitHoldingNoThread_andOtherRequestsAreAnswered() throws {
        let (service, database) = try ServiceHarness(self).serviceHoldingTheIndexes(self)
        XCTAssertNil(database.memoryIndexes)
        let context = ServiceHarness.context
        var computedRequest = Stol_V1_TaxonomyRequest(), tableRequest = Stol_V1_TaxonomyRequest()
        computedRequest.relatives = Stol_V1_RelativesRequest.with { $0.taxonID = 9689; $0.n = 5; $0.computed = true }
        tableRequest.relatives = Stol_V1_RelativesRequest.with { $0.taxonID = 9689; $0.n = 5 }
        let computedRelatives = computedRequest, tableRelatives = tableRequest

        let waiting = ProcessInfo.processInfo.activeProcessorCount * 4 + 4
        let computed = Mutex<[Stol_V1_TaxonomyResponse]>([])
        let allComputed = expectation(description: "every computed answer")
        allComputed.expectedFulfillmentCount = waiting
        for _ in 0..<waiting {
            Task { @Sendable in
                let response = await service.respond(to: computedRelatives, context: context)
                computed.withLock { $0.append(response) }
                allComputed.fulfill()
            }
        }
        let others = Mutex<[Stol_V1_TaxonomyResponse]>([])
        let othersAnswered = expectation(description: "requests answered while the tree is built")
        Task {
            var lion = Stol_V1_TaxonomyRequest()
            lion.getTaxon = Stol_V1_GetTaxonRequest.with { $0.taxonID = 9689 }
            let taxon = await service.respond(to: lion, context: context)
            // From the table, which needs no tree: not kept waiting either.
            let precomputed = await service.respond(to: tableRelatives, context: context)
            // The synchronous path never waits: it says to come back.
            let synchronous = service.respondNow(to: computedRelatives, context: context)
            others.withLock { $0 = [taxon, precomputed, synchronous] }
            othersAnswered.fulfill()
        }
        XCTAssertEqual(XCTWaiter().wait(for: [othersAnswered], timeout: 120), .completed,
                       "the waiting relatives requests held the pool's threads")
        XCTAssertEqual(computed.withLock { $0.count }, 0, "nothing computed before the tree is built")
        let answered = others.withLock { $0 }
        guard answered.count == 3 else { return XCTFail("expected three answers, got \(answered)") }
        if case .taxon(let taxon)? = answered[0].result {
            XCTAssertEqual(taxon.scientificName, "Panthera leo")
        } else {
            XCTFail("expected the lion, got \(answered[0])")
        }
        guard case .relatives(let table)? = answered[1].result else { return XCTFail("expected relatives, got \(answered[1])") }
        XCTAssertEqual(table.source, .precomputed)
        XCTAssertEqual(errorCode(answered[2]), .unavailable)

        database.startLoadingMemoryIndexes()
        wait(for: [allComputed], timeout: 120)
        for response in computed.withLock({ $0 }) {
            guard case .relatives(let result)? = response.result else { return XCTFail("expected relatives, got \(response)") }
            XCTAssertEqual(result.source, .computed)
            XCTAssertEqual(rows(result), rows(table), "the computed answer is the table's")
        }
    }
}
