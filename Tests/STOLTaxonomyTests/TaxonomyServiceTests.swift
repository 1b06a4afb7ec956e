import STOLModel
import Foundation
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

final class TaxonomyServiceTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
    }

    private func taxon(_ response: Stol_V1_TaxonomyResponse, file: StaticString = #filePath, line: UInt = #line) throws -> Stol_V1_Taxon {
        guard case .taxon(let taxon)? = response.result else {
            XCTFail("expected a taxon, got \(String(describing: response.result))", file: file, line: line)
            throw POSIXError(.EINVAL)
        }
        return taxon
    }

    private func page(_ response: Stol_V1_TaxonomyResponse, file: StaticString = #filePath, line: UInt = #line) throws -> Stol_V1_TaxonPage {
        switch response.result {
        case .children(let page)?, .roots(let page)?: return page
        default:
            XCTFail("expected a page, got \(String(describing: response.result))", file: file, line: line)
            throw POSIXError(.EINVAL)
        }
    }

    // MARK: get_taxon

    func testGetTaxon_returnsTheTaxonWithParentRankAuthorYearConservationAndEnglishName() async throws {
        let response = await harness.getTaxon(9689)
        XCTAssertEqual(response.id, 7, "the response echoes the request id")
        XCTAssertEqual(response.database.kind, .bundled)
        XCTAssertEqual(response.database.schemaVersion, UInt32(TaxonomySchema.currentVersion))
        let lion = try taxon(response)
        XCTAssertEqual(lion.id, 9689)
        XCTAssertEqual(lion.scientificName, "Panthera leo")
        XCTAssertTrue(lion.hasParentID)
        XCTAssertEqual(lion.parentID, 9688)
        XCTAssertEqual(lion.rank, .species)
        XCTAssertEqual(lion.author, "(Linnaeus, 1758)")
        XCTAssertEqual(lion.year, 1758)
        XCTAssertEqual(lion.status, .accepted)
        XCTAssertEqual(lion.conservation, "VU")
        XCTAssertEqual(lion.commonName, "lion")
    }

    /// The event loop's inline answer (``TaxonomyService/respondInline(to:context:)``) is
    /// the lane's answer, byte for byte; only a taxon by id of the default database is
    /// answered inline, and never by waiting for the in-memory indexes.
    func testInlineAnswer_isTheLanesAnswer_andOnlyForATaxonByIDOnceLoaded() async throws {
        await harness.waitForTreeLoaded()
        for id: Int64 in [9689, 9606, 999_999_999, -1] {
            let request = Stol_V1_TaxonomyRequest.with { $0.id = 7; $0.getTaxon = .with { $0.taxonID = id } }
            let inline = try XCTUnwrap(harness.service.respondInline(to: request, context: ServiceHarness.context))
            let lane = await harness.service.respond(to: request, context: ServiceHarness.context)
            XCTAssertEqual(try inline.serializedBytes() as [UInt8], try lane.serializedBytes() as [UInt8], "taxon \(id)")
        }
        let search = Stol_V1_TaxonomyRequest.with { $0.id = 8; $0.search = .with { $0.query = "lion" } }
        XCTAssertNil(harness.service.respondInline(to: search, context: ServiceHarness.context))
        let pinned = Stol_V1_TaxonomyRequest.with { $0.id = 9; $0.release = "bundled"; $0.getTaxon = .with { $0.taxonID = 9689 } }
        XCTAssertNil(harness.service.respondInline(to: pinned, context: ServiceHarness.context))

        // While the indexes load, a request that needs them is not answered inline (it would
        // wait); one that does not is, as the lane answers it meanwhile.
        let (loading, _) = try harness.serviceHoldingTheIndexes(self)
        for ranks in [Stol_V1_RankView.main, .all] {
            let lion = Stol_V1_TaxonomyRequest.with { $0.id = 10; $0.getTaxon = .with { $0.taxonID = 9689; $0.ranks = ranks } }
            guard let inline = loading.respondInline(to: lion, context: ServiceHarness.context) else { continue }
            let lane = await loading.respond(to: lion, context: ServiceHarness.context)
            XCTAssertEqual(try inline.serializedBytes() as [UInt8], try lane.serializedBytes() as [UInt8], "ranks \(ranks)")
        }
    }

    func testGetTaxon_withLanguage_returnsThePreferredNameInThatLanguage() async throws {
        let getTaxon1 = await harness.getTaxon(9689, language: "es")
        XCTAssertEqual(try taxon(getTaxon1).commonName, "león")
        let getTaxon2 = await harness.getTaxon(9689, language: "zh")
        XCTAssertEqual(try taxon(getTaxon2).commonName, "狮")
        let getTaxon3 = await harness.getTaxon(38942)
        XCTAssertEqual(try taxon(getTaxon3).commonName, "pedunculate oak")
        let getTaxon4 = await harness.getTaxon(9606)
        XCTAssertEqual(try taxon(getTaxon4).commonName, "human")
        // A language the database has no names in is refused, naming those it has,
        // rather than answered without a common name.
        let getTaxon5 = await harness.getTaxon(9689, language: "ja")
        guard case .error(let error) = getTaxon5.result else { return XCTFail("ja answered \(getTaxon5)") }
        XCTAssertEqual(error.code, .invalidRequest)
        XCTAssertTrue(error.message.contains("no names in language 'ja'") && error.message.contains("es, "), error.message)
    }

    func testGetTaxon_forARoot_hasNoParentAndDomainRank() async throws {
        let eukaryota = try await taxon(harness.getTaxon(2759))
        XCTAssertFalse(eukaryota.hasParentID)
        XCTAssertEqual(eukaryota.rank, .domain)
        XCTAssertFalse(eukaryota.hasYear)
    }

    func testGetTaxon_whenUnknown_answersNotFoundWithTheID() async throws {
        let response = await harness.getTaxon(123_456_789)
        guard case .error(let error)? = response.result else { return XCTFail("expected an error") }
        XCTAssertEqual(error.code, .notFound)
        XCTAssertEqual(error.details["taxon_id"], "123456789")
        XCTAssertEqual(response.database.kind, .bundled, "errors carry the database identity too")
    }

    func testGetTaxon_ofANodeOutsideTheEightRanks_isAnsweredWithItsOwnRankAndParent() async throws {
        // The subfamily Pantherinae: no main rank; its NCBI rank, its NCBI parent (Felidae).
        guard case .taxon(let subfamily)? = await harness.getTaxon(338153).result else { return XCTFail("no answer") }
        XCTAssertEqual(subfamily.scientificName, "Pantherinae")
        XCTAssertEqual(subfamily.rank, .unspecified)
        XCTAssertEqual(subfamily.sourceRank, "subfamily")
        XCTAssertEqual(subfamily.parentID, 9681)
        XCTAssertEqual(subfamily.commonName, "pantherines", "names attach to any node")
        // A taxon of the view keeps its main rank, its view parent, and no source rank.
        guard case .taxon(let genus)? = await harness.getTaxon(9688).result else { return XCTFail("no answer") }
        XCTAssertEqual(genus.rank, .genus)
        XCTAssertEqual(genus.parentID, 9681, "the view's parent, past the subfamily")
        XCTAssertEqual(genus.sourceRank, "")
    }

    func testGetTaxon_whenIDIsNotPositive_answersInvalidRequest() async {
        let getTaxon7 = await harness.getTaxon(0)
        XCTAssertEqual(errorCode(getTaxon7), .invalidRequest)
        let getTaxon8 = await harness.getTaxon(-9689)
        XCTAssertEqual(errorCode(getTaxon8), .invalidRequest)
        let children1 = await harness.children(0)
        XCTAssertEqual(errorCode(children1), .invalidRequest)
        let ancestors1 = await harness.ancestors(-1)
        XCTAssertEqual(errorCode(ancestors1), .invalidRequest)
    }

    // MARK: children and roots

    func testChildren_areSortedByScientificNameWithTotalAndChildCounts() async throws {
        let panthera = try await page(harness.children(9688))
        XCTAssertEqual(panthera.total, 4)
        XCTAssertEqual(panthera.offset, 0)
        XCTAssertEqual(panthera.taxa.map(\.scientificName),
                       ["Panthera leo", "Panthera onca", "Panthera pardus", "Panthera tigris"])
        XCTAssertEqual(panthera.taxa.map(\.childCount), [0, 0, 0, 0])
        XCTAssertEqual(panthera.taxa.map(\.commonName), ["lion", "jaguar", "leopard", "tiger"])

        let felidae = try await page(harness.children(9681))
        XCTAssertEqual(felidae.taxa.map(\.id), [9682, 9688], "the genera hang directly under the family")
        XCTAssertEqual(felidae.taxa.map(\.childCount), [1, 4])
    }

    func testChildren_pagesWithOffsetAndLimitKeepingTheTotal() async throws {
        let second = try await page(harness.children(9688, offset: 1, limit: 2))
        XCTAssertEqual(second.total, 4)
        XCTAssertEqual(second.offset, 1)
        XCTAssertEqual(second.taxa.map(\.id), [9690, 9691])
        let last = try await page(harness.children(9688, offset: 3, limit: 2))
        XCTAssertEqual(last.taxa.map(\.id), [9694])
        let beyond = try await page(harness.children(9688, offset: 10, limit: 2))
        XCTAssertEqual(beyond.total, 4)
        XCTAssertEqual(beyond.taxa, [])
        let leaf = try await page(harness.children(9689))
        XCTAssertEqual(leaf.total, 0)
        XCTAssertEqual(leaf.taxa, [])
    }

    func testChildren_limitAbove500_answersInvalidRequestAnd500IsAccepted() async throws {
        let children2 = await harness.children(9688, limit: 501)
        XCTAssertEqual(errorCode(children2), .invalidRequest)
        let children3 = await harness.children(9688, limit: 500)
        XCTAssertEqual(try page(children3).taxa.count, 4)
    }

    func testChildren_whenParentUnknown_answersNotFound() async {
        let children4 = await harness.children(424_242)
        XCTAssertEqual(errorCode(children4), .notFound)
    }

    func testRoots_listsTheDomainsSortedWithChildCounts() async throws {
        let roots = try await page(harness.send(.roots(Stol_V1_RootsRequest())))
        XCTAssertEqual(roots.taxa.map(\.scientificName), ["Bacteria", "Eukaryota"])
        XCTAssertEqual(roots.total, 2)
        XCTAssertEqual(roots.taxa.map(\.childCount), [1, 2])
        XCTAssertTrue(roots.taxa.allSatisfy { $0.rank == .domain && !$0.hasParentID })
    }

    // MARK: ancestors

    func testAncestors_areRootFirstWithoutTheTaxonItself() async throws {
        guard case .ancestors(let list)? = await harness.ancestors(9689).result else { return XCTFail("expected ancestors") }
        XCTAssertEqual(list.taxa.map(\.id), [2759, 33208, 7711, 40674, 33554, 9681, 9688])
        XCTAssertEqual(list.taxa.map(\.rank), [.domain, .kingdom, .phylum, .class, .order, .family, .genus])
        XCTAssertEqual(list.taxa.last?.commonName, "")
        XCTAssertEqual(list.taxa[5].commonName, "cats")
    }

    func testAncestors_ofARoot_isEmptyAndOfAnUnknownTaxonIsNotFound() async throws {
        guard case .ancestors(let list)? = await harness.ancestors(2).result else { return XCTFail("expected ancestors") }
        XCTAssertEqual(list.taxa, [])
        let ancestors2 = await harness.ancestors(99_999_999)
        XCTAssertEqual(errorCode(ancestors2), .notFound)
    }

    // MARK: Requests the server does not answer

    func testDetailCompareAndRelatives_withoutATaxonID_answerInvalidRequest() async {
        let send1 = await harness.send(.detail(Stol_V1_TaxonDetailRequest()))
        XCTAssertEqual(errorCode(send1), .invalidRequest)
        let send2 = await harness.send(.compare(Stol_V1_CompareRequest()))
        XCTAssertEqual(errorCode(send2), .invalidRequest)
        let send3 = await harness.send(.relatives(Stol_V1_RelativesRequest()))
        XCTAssertEqual(errorCode(send3), .invalidRequest)
    }

    func testRequestWithoutBody_answersInvalidRequest() async {
        let response = await harness.send(nil, id: 99)
        XCTAssertEqual(errorCode(response), .invalidRequest)
        XCTAssertEqual(response.id, 99)
    }

    // MARK: The committed curated source

    func testCuratedDatabase_answersLionOakAndSpanishName() async throws {
        let curated = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        let lion = try await taxon(curated.getTaxon(9689, language: "es"))
        XCTAssertEqual(lion.scientificName, "Panthera leo")
        XCTAssertEqual(lion.parentID, 9688)
        XCTAssertEqual(lion.commonName, "león")
        let genus = try await taxon(curated.getTaxon(9688))
        XCTAssertEqual(genus.scientificName, "Panthera")
        XCTAssertEqual(genus.rank, .genus)
        let getTaxon9 = await curated.getTaxon(38942)
        XCTAssertEqual(try taxon(getTaxon9).scientificName, "Quercus robur")
        let panthera = try await page(curated.children(9688))
        XCTAssertEqual(panthera.total, 5)
        XCTAssertEqual(panthera.taxa.first?.scientificName, "Panthera leo")
        guard case .ancestors(let list)? = await curated.ancestors(9689).result else { return XCTFail("expected ancestors") }
        XCTAssertEqual(list.taxa.first?.scientificName, "Eukaryota")
        XCTAssertEqual(list.taxa.last?.id, 9688)
        XCTAssertEqual(list.taxa.map(\.rank), [.domain, .kingdom, .phylum, .class, .order, .family, .genus])
        let search = try await hits(curated.search("leon", language: "es"))
        XCTAssertTrue(search.contains { $0.taxon.id == 9689 && $0.matchedName == "león" && $0.matchType == .common })
    }
}
