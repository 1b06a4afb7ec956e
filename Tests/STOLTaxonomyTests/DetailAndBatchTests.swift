import STOLModel
import Foundation
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

final class DetailAndBatchTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
    }

    private func detail(_ id: Int64, language: String = "") async throws -> Stol_V1_TaxonDetail {
        guard case .detail(let detail)? = await harness.detail(id, language: language).result else {
            XCTFail("expected a detail of \(id)")
            throw POSIXError(.EINVAL)
        }
        return detail
    }

    func testDetail_groupsNamesByLanguage_requestedLanguageFirst_preferredFirst() async throws {
        let lion = try await detail(9689, language: "es")
        XCTAssertEqual(lion.names.first?.language, "es")
        XCTAssertEqual(lion.names.first?.names.first?.name, "león")
        XCTAssertEqual(lion.names.map(\.language), ["es", "de", "en", "zh"], "then by language tag")
        XCTAssertEqual(lion.names.first { $0.language == "de" }?.names.map(\.name), ["Löwe"])
        XCTAssertEqual(lion.taxon.commonName, "león")
        let human = try await detail(9606)
        let english = human.names.first { $0.language == "en" }!
        XCTAssertEqual(english.names.map(\.name).sorted(), ["human", "man"])
        XCTAssertTrue(english.names.first!.preferred)
    }

    func testDetail_hasSynonymsTraitsReferencesConservationAndLineage() async throws {
        let tiger = try await detail(9694)
        XCTAssertEqual(tiger.synonyms, ["Felis tigris"])
        XCTAssertEqual(tiger.taxon.conservation, "EN")
        XCTAssertEqual(tiger.lineage.map(\.id), [2759, 33208, 7711, 40674, 33554, 9681, 9688])
        let lion = try await detail(9689)
        XCTAssertEqual(lion.traits.map { "\($0.key)=\($0.value) \($0.unit)" }, ["body_length=2.0 m", "habitat=savanna "])
        XCTAssertEqual(lion.references.map(\.refType), ["conservation"])
        XCTAssertTrue(lion.references.first!.citation.hasPrefix("IUCN. 2024"))
        XCTAssertEqual(lion.references.first?.url, "https://www.iucnredlist.org")
        let genus = try await detail(9688)
        XCTAssertEqual(genus.taxon.childCount, 4)
    }

    func testDetail_ofAnUnknownTaxon_answersNotFound() async {
        let detail1 = await harness.detail(424_242)
        XCTAssertEqual(errorCode(detail1), .notFound)
        let detail2 = await harness.detail(-1)
        XCTAssertEqual(errorCode(detail2), .invalidRequest)
    }

    func testLineageBatch_resolvesIdsAndExactNames_andReportsEachMissOnItsOwn() async throws {
        guard case .lineageBatch(let batch)? = await harness.lineageBatch(
            ["9689", "Panthera tigris", "panthera tigris", "lion", "LEÓN", "Homo nonexistens", "0", "424242"]).result
        else { return XCTFail("expected a batch answer") }
        XCTAssertEqual(batch.results.count, 8)
        XCTAssertEqual(batch.results.map(\.query).first, "9689")
        XCTAssertEqual(batch.results[0].taxon.id, 9689)
        XCTAssertEqual(batch.results[0].lineage.map(\.id), [2759, 33208, 7711, 40674, 33554, 9681, 9688])
        XCTAssertEqual(batch.results[1].taxon.id, 9694)
        XCTAssertEqual(batch.results[2].taxon.id, 9694, "the first letter's case does not matter")
        XCTAssertEqual(batch.results[3].taxon.id, 9689, "a common name")
        XCTAssertEqual(batch.results[4].taxon.id, 9689, "case and accents are folded for common names")
        XCTAssertEqual(batch.results[5].error.code, .notFound)
        XCTAssertFalse(batch.results[5].hasTaxon)
        XCTAssertEqual(batch.results[6].error.code, .invalidRequest)
        XCTAssertEqual(batch.results[7].error.code, .notFound)
    }

    func testLineageBatch_over1000Queries_answersInvalidRequest() async {
        let lineageBatch1 = await harness.lineageBatch(Array(repeating: "9689", count: 1001))
        XCTAssertEqual(errorCode(lineageBatch1), .invalidRequest)
        let lineageBatch2 = await harness.lineageBatch(Array(repeating: "9689", count: 1000))
        XCTAssertNil(errorCode(lineageBatch2))
    }

    func testStatus_reportsCountsSizesAndThePrecomputedRelatives() async throws {
        let statusAnswer1 = await harness.status()
        let status = try XCTUnwrap(statusAnswer1)
        XCTAssertEqual(status.speciesCount, 9)
        XCTAssertGreaterThan(status.namesCount, 20)
        XCTAssertEqual(status.bundledPath, harness.bundledPath)
        XCTAssertEqual(status.bundledSizeBytes, status.sizeBytes)
        XCTAssertEqual(status.referenceSizeBytes, 0)
        XCTAssertEqual(status.precomputedRelatives, 7, "the pipeline's top 10, capped by the 7 other species of the same root")
    }

    func testDiagnostics_countsRequestsAndErrors_withoutQueryTextOrIds() async throws {
        _ = await harness.search("secretquerytext")
        _ = await harness.getTaxon(987_654_321)
        _ = await harness.getTaxon(9689)
        guard case .diagnostics(let diagnostics)? = await harness.send(.diagnostics(Stol_V1_DiagnosticsRequest())).result else {
            return XCTFail("expected diagnostics")
        }
        let report = diagnostics.report
        XCTAssertTrue(report.contains("schema version:   \(TaxonomySchema.currentVersion)"), report)
        XCTAssertTrue(report.contains("get_taxon: 2"), report)
        XCTAssertTrue(report.contains("search: 1"), report)
        XCTAssertTrue(report.contains("NOT_FOUND: 1"), report)
        XCTAssertTrue(report.contains("species 9"), report)
        XCTAssertFalse(report.contains("secretquerytext"))
        XCTAssertFalse(report.contains("987654321"))
        XCTAssertFalse(report.contains("uid"))
    }
}
