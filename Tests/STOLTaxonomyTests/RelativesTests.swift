import Foundation
import GRDB
import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

final class RelativesTests: XCTestCase {
    private func relatives(_ harness: ServiceHarness, _ id: Int64, n: UInt32, computed: Bool = false,
                           maximumCandidates: UInt32 = 0, file: StaticString = #filePath,
                           line: UInt = #line) throws -> Stol_V1_RelativesResponse {
        let response = harness.relatives(id, n: n, computed: computed, maximumCandidates: maximumCandidates)
        guard case .relatives(let result)? = response.result else {
            XCTFail("expected relatives of \(id), got \(String(describing: response.result))", file: file, line: line)
            throw POSIXError(.EINVAL)
        }
        return result
    }

    private func rows(_ result: Stol_V1_RelativesResponse) -> [[Int64]] {
        result.relatives.map { [$0.taxon.id, $0.lca.id, Int64($0.lcaDepth), Int64($0.distance), Int64($0.rankOrder)] }
    }

    func testRelatives_ofTheLion_areTheOtherBigCatsFirst() throws {
        let harness = try ServiceHarness(self)
        let result = try relatives(harness, 9689, n: 4)
        XCTAssertEqual(result.source, .precomputed)
        XCTAssertEqual(result.relatives.map(\.taxon.id), [9690, 9691, 9694, 9685], "same genus by name, then the cat")
        XCTAssertEqual(result.relatives.map(\.distance), [2, 2, 2, 4])
        XCTAssertEqual(result.relatives.last?.lca.id, 9681)
        XCTAssertEqual(result.relatives.map(\.rankOrder), [1, 2, 3, 4])
    }

    /// The precomputed table (written by the pipeline) and the on-demand
    /// computation on the server's compact tree agree exactly, for every species
    /// of the curated database and every n the table can answer; beyond the
    /// table's N the computation agrees with ``TaxonTree`` built independently
    /// from the same rows with Swift's own name order.
    func testRelatives_precomputedAndComputed_agreeForEverySpeciesOfTheCuratedDatabase() throws {
        let harness = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        let nodes = try DatabaseQueue(path: harness.bundledPath).read { db in
            try Row.fetchAll(db, sql: "SELECT id, parent_id, rank, scientific_name FROM taxa").map {
                TaxonTree.Node(id: $0["id"], parentID: $0["parent_id"], rank: TaxonRank(rawValue: $0["rank"])!,
                               scientificName: $0["scientific_name"])
            }
        }
        let tree = try TaxonTree(nodes: nodes)
        let species = nodes.filter { $0.rank == .species }.map(\.id)
        XCTAssertGreaterThan(species.count, 300)
        let tableN = harness.status()!.precomputedRelatives
        XCTAssertEqual(tableN, 10)
        for id in species {
            for n: UInt32 in [1, 3, 10] {
                let precomputed = try relatives(harness, id, n: n)
                let computed = try relatives(harness, id, n: n, computed: true)
                XCTAssertEqual(computed.source, .computed)
                XCTAssertFalse(computed.truncated)
                XCTAssertEqual(rows(precomputed), rows(computed), "species \(id), n \(n)")
            }
            for n: UInt32 in [25, 100] {
                let computed = try relatives(harness, id, n: n)
                XCTAssertEqual(computed.source, .computed, "more than the table holds is computed")
                let expected = tree.closestRelatives(of: tree.index(of: id)!, n: Int(n)).enumerated().map {
                    [tree.nodes[$0.element.node].id, tree.nodes[$0.element.lca].id, Int64($0.element.lcaDepth),
                     Int64($0.element.distance), Int64($0.offset + 1)]
                }
                XCTAssertEqual(rows(computed), expected, "species \(id), n \(n)")
            }
        }
    }

    func testRelatives_candidateGuard_stopsTheComputationAndSaysSo() throws {
        let harness = try ServiceHarness(self)
        let guarded = try relatives(harness, 9689, n: 5, computed: true, maximumCandidates: 2)
        XCTAssertTrue(guarded.truncated)
        XCTAssertEqual(guarded.candidatesExamined, 2)
        let full = try relatives(harness, 9689, n: 5, computed: true)
        XCTAssertFalse(full.truncated)
        XCTAssertEqual(full.relatives.count, 5)
    }

    func testRelatives_ofAGenusOrWithNOutOfRange_answerInvalidRequest() throws {
        let harness = try ServiceHarness(self)
        XCTAssertEqual(errorCode(harness.relatives(9688, n: 5)), .invalidRequest)
        XCTAssertEqual(errorCode(harness.relatives(9689, n: 101)), .invalidRequest)
        XCTAssertEqual(errorCode(harness.relatives(424_242, n: 5)), .notFound)
        XCTAssertEqual(try relatives(harness, 9689, n: 0).relatives.count, 7, "0 means 10; the fixture has 7 other species")
    }
}
