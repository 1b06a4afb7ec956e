import STOLProtocol
import XCTest

/// `get_taxa`: many taxa by id in one request (favourites listing). Each id is
/// answered once, in request order; a merged id as its new taxon (listed in the
/// envelope's `merged`); an id with no taxon (unknown or deleted) in
/// `missing_ids`, never an error; the batch limit and id range are typed errors.
final class GetTaxaTests: XCTestCase {
    private func getTaxa(_ harness: ServiceHarness, _ ids: [Int64], language: String = "") async -> Stol_V1_TaxonomyResponse {
        await harness.send(.getTaxa(.with { $0.taxonIds = ids; $0.language = language }))
    }

    func testTaxa_comeOncePerId_inRequestOrder_withUnknownIdsListedAsMissing() async throws {
        let harness = try await ncbiFixtureHarness(self, fullTree: false)
        let response = await getTaxa(harness, [9685, 9689, 424242, 9689, 9685], language: "en")
        guard case .taxa(let answer) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(answer.taxa.map(\.id), [9685, 9689])
        XCTAssertEqual(answer.missingIds, [424242])
        XCTAssertTrue(response.merged.isEmpty)
        // The same taxa as one get_taxon each (names, ranks, parents).
        for taxon in answer.taxa {
            guard case .taxon(let single) = await harness.getTaxon(taxon.id, language: "en").result else { return XCTFail() }
            XCTAssertEqual(taxon, single)
        }
    }

    func testMergedIds_areAnsweredAsTheirNewTaxa_andDeletedOnesAreMissing() async throws {
        let harness = try await ncbiFixtureHarness(self, fullTree: false)
        // 12345 was merged into 9689 and 54321 into 9685; 99999 was deleted.
        let response = await getTaxa(harness, [12345, 99999, 54321, 9689])
        guard case .taxa(let answer) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(answer.taxa.map(\.id), [9689, 9685], "9689 is answered once, for 12345 and for itself")
        XCTAssertEqual(answer.missingIds, [99999])
        XCTAssertEqual(response.merged.map { [$0.oldID, $0.newID] }, [[12345, 9689], [54321, 9685]])
    }

    func testMoreThanTheLimit_orAnIdBelowOne_isInvalidRequest() async throws {
        let harness = try await ncbiFixtureHarness(self, fullTree: false)
        for tooMany in [Array(Int64(1)...1001), [9689, 0], [-5]] {
            let refused = await getTaxa(harness, tooMany)
            XCTAssertEqual(refused.error.code, .invalidRequest, "\(tooMany.count) ids")
        }
        let allowed = await getTaxa(harness, Array(1...1000))
        guard case .taxa(let answer) = allowed.result else { return XCTFail("1000 ids are allowed") }
        XCTAssertEqual(answer.taxa.count + answer.missingIds.count, 1000)
    }

    func testNoIds_isAnEmptyAnswer() async throws {
        let harness = try await ncbiFixtureHarness(self, fullTree: false)
        let empty = await getTaxa(harness, [])
        guard case .taxa(let answer) = empty.result else { return XCTFail() }
        XCTAssertTrue(answer.taxa.isEmpty && answer.missingIds.isEmpty)
    }
}
