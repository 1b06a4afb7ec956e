import STOLProtocol
import XCTest

/// `get_taxa`: many taxa by id in one request (favourites listing). Each id is
/// answered once, in request order; a merged id as its new taxon (listed in the
/// envelope's `merged`); an id with no taxon (unknown or deleted) in
/// `missing_ids`, never an error; the batch limit and id range are typed errors.
final class GetTaxaTests: XCTestCase {
    private func getTaxa(_ harness: ServiceHarness, _ ids: [Int64], language: String = "") -> Stol_V1_TaxonomyResponse {
        harness.send(.getTaxa(.with { $0.taxonIds = ids; $0.language = language }))
    }

    func testTaxa_comeOncePerId_inRequestOrder_withUnknownIdsListedAsMissing() throws {
        let harness = try ncbiFixtureHarness(self, fullTree: false)
        let response = getTaxa(harness, [9685, 9689, 424242, 9689, 9685], language: "en")
        guard case .taxa(let answer) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(answer.taxa.map(\.id), [9685, 9689])
        XCTAssertEqual(answer.missingIds, [424242])
        XCTAssertTrue(response.merged.isEmpty)
        // The same taxa as one get_taxon each (names, ranks, parents).
        for taxon in answer.taxa {
            guard case .taxon(let single) = harness.getTaxon(taxon.id, language: "en").result else { return XCTFail() }
            XCTAssertEqual(taxon, single)
        }
    }

    func testMergedIds_areAnsweredAsTheirNewTaxa_andDeletedOnesAreMissing() throws {
        let harness = try ncbiFixtureHarness(self, fullTree: false)
        // 12345 was merged into 9689 and 54321 into 9685; 99999 was deleted.
        let response = getTaxa(harness, [12345, 99999, 54321, 9689])
        guard case .taxa(let answer) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(answer.taxa.map(\.id), [9689, 9685], "9689 is answered once, for 12345 and for itself")
        XCTAssertEqual(answer.missingIds, [99999])
        XCTAssertEqual(response.merged.map { [$0.oldID, $0.newID] }, [[12345, 9689], [54321, 9685]])
    }

    func testMoreThanTheLimit_orAnIdBelowOne_isInvalidRequest() throws {
        let harness = try ncbiFixtureHarness(self, fullTree: false)
        XCTAssertEqual(getTaxa(harness, Array(1...1001)).error.code, .invalidRequest)
        XCTAssertEqual(getTaxa(harness, [9689, 0]).error.code, .invalidRequest)
        XCTAssertEqual(getTaxa(harness, [-5]).error.code, .invalidRequest)
        guard case .taxa(let answer) = getTaxa(harness, Array(1...1000)).result else { return XCTFail("1000 ids are allowed") }
        XCTAssertEqual(answer.taxa.count + answer.missingIds.count, 1000)
    }

    func testNoIds_isAnEmptyAnswer() throws {
        let harness = try ncbiFixtureHarness(self, fullTree: false)
        guard case .taxa(let answer) = getTaxa(harness, []).result else { return XCTFail() }
        XCTAssertTrue(answer.taxa.isEmpty && answer.missingIds.isEmpty)
    }
}
