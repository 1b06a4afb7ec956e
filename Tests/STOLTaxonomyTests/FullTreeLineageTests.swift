import STOLPipeline
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Lineages on NCBI's own tree (`ranks: RANK_VIEW_ALL`) of a database built with
/// the whole tree, beside the eight-rank view, from the NCBI taxdump fixture:
/// every node and NCBI's ranks, one root, names resolved on every node, and a name
/// that fits two taxa said so rather than picked.
final class FullTreeLineageTests: XCTestCase {
    /// The lion's lineage as NCBI has it (nodes.dmp of the fixture), root first.
    static let lionLineage: [Int64] = [1, 131567, 2759, 33208, 7711, 40674, 33554, 9681, 338153, 9688]

    private func harness(fullTree: Bool = true, extraNodes: [String] = [], extraNames: [String] = []) throws -> ServiceHarness {
        let source = try makeTemporaryDirectory(self)
        try TaxdumpFixture.write(to: source)
        try writeTSV(source, "nodes.dmp", TaxdumpFixture.nodes + extraNodes)
        try writeTSV(source, "names.dmp", TaxdumpFixture.names + extraNames)
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        options.fullTree = fullTree
        let harness = try ServiceHarness(self, bundledSource: source, options: options)
        harness.waitForTreeLoaded()
        return harness
    }

    private func lineages(_ harness: ServiceHarness, _ queries: [String], ranks: Stol_V1_RankView,
                          form: Stol_V1_LineageForm) throws -> [Stol_V1_LineageResult] {
        let response = harness.send(.lineageBatch(.with { $0.queries = queries; $0.ranks = ranks; $0.form = form }))
        guard case .lineageBatch(let batch) = response.result else { throw XCTSkip("no batch: \(response)") }
        return batch.results
    }

    func testAllRanks_givesNCBIsLineage_withItsRanksAndNames_inEveryForm() throws {
        let harness = try harness()
        let compact = try XCTUnwrap(lineages(harness, ["9689"], ranks: .all, form: .compact).first)
        XCTAssertFalse(compact.hasError, "\(compact.error)")
        XCTAssertEqual(compact.lineageIds, Self.lionLineage)
        XCTAssertEqual(compact.lineageRanks, ["no rank", "no rank", "superkingdom", "kingdom", "phylum", "class", "order",
                                              "family", "subfamily", "genus"])
        XCTAssertEqual(compact.lineageNames.prefix(3), ["root", "cellular organisms", "Eukaryota"])
        XCTAssertEqual(compact.lineageNames[8], "Pantherinae")
        XCTAssertEqual(compact.taxon.sourceRank, "species")
        XCTAssertEqual(compact.taxon.rank, .species)
        XCTAssertEqual(compact.taxon.scientificName, "Panthera leo")
        let ids = try XCTUnwrap(lineages(harness, ["9689"], ranks: .all, form: .ids).first)
        XCTAssertEqual(ids.lineageIds, Self.lionLineage)
        XCTAssertTrue(ids.lineageNames.isEmpty)
        let taxa = try XCTUnwrap(lineages(harness, ["9689"], ranks: .all, form: .taxa).first)
        XCTAssertEqual(taxa.lineage.map(\.id), Self.lionLineage)
        XCTAssertEqual(taxa.lineage[8].sourceRank, "subfamily")
        XCTAssertEqual(taxa.lineage[8].rank, .unspecified, "a subfamily has no main rank")
        XCTAssertEqual(taxa.lineage[2].rank, .domain, "superkingdom is the domain of the main view")
    }

    func testMainRanks_keepTheEightRankLineage() throws {
        let harness = try harness()
        let result = try XCTUnwrap(lineages(harness, ["9689"], ranks: .main, form: .compact).first)
        XCTAssertEqual(result.lineageIds, [2759, 33208, 7711, 40674, 33554, 9681, 9688])
        XCTAssertEqual(result.lineageRanks, ["domain", "kingdom", "phylum", "class", "order", "family", "genus"])
    }

    func testNodesOutsideTheMainRanks_areFoundByIdAndName_onlyWithAllRanks() throws {
        let harness = try harness()
        let all = try lineages(harness, ["cellular organisms", "338153", "1"], ranks: .all, form: .ids)
        XCTAssertEqual(all.map(\.taxon.id), [131567, 338153, 1])
        XCTAssertEqual(all[0].lineageIds, [1])
        XCTAssertEqual(all[2].lineageIds, [], "the root has no ancestor")
        let main = try lineages(harness, ["cellular organisms", "338153"], ranks: .main, form: .ids)
        XCTAssertEqual(main.map(\.error.code), [.notFound, .notFound])
    }

    func testANameOfTwoTaxa_isAnErrorNamingBoth_inBothViews() throws {
        // A second Panthera (a genus of moths shares names with cats in real taxonomies).
        let harness = try harness(extraNodes: [dumpRow("999999", "9681", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", "")],
                                  extraNames: [dumpRow("999999", "Panthera", "", "scientific name")])
        for ranks in [Stol_V1_RankView.all, .main] {
            let result = try XCTUnwrap(lineages(harness, ["Panthera"], ranks: ranks, form: .ids).first)
            XCTAssertEqual(result.error.code, .invalidRequest, "\(ranks)")
            XCTAssertEqual(result.error.details["taxon_ids"], "9688,999999", "\(ranks)")
            XCTAssertTrue(result.error.message.contains("fits 2 taxa"), result.error.message)
        }
    }

    func testAllRanks_onADatabaseWithoutTheWholeTree_saysSo() throws {
        let harness = try harness(fullTree: false)
        let response = harness.send(.lineageBatch(.with { $0.queries = ["9689"]; $0.ranks = .all }))
        XCTAssertEqual(response.error.code, .invalidRequest)
        XCTAssertTrue(response.error.message.contains("only the eight main ranks"), response.error.message)
        guard case .status(let status) = harness.send(.status(.init())).result else { return XCTFail("no status") }
        XCTAssertEqual(status.fullTreeNodes, 0)
        XCTAssertFalse(status.fullTreeLoaded)
    }

    func testStatus_countsTheWholeTree() throws {
        let harness = try harness()
        guard case .status(let status) = harness.send(.status(.init())).result else { return XCTFail("no status") }
        XCTAssertEqual(status.fullTreeNodes, UInt64(TaxdumpFixture.nodes.count))
        XCTAssertTrue(status.fullTreeLoaded)
    }
}

/// Common ancestors of many pairs and every taxon of a name, on the fixture's
/// whole tree and on a database of the main ranks only.
final class CompareBatchAndNameLookupTests: XCTestCase {
    private func harness(fullTree: Bool, extraNodes: [String] = [], extraNames: [String] = []) throws -> ServiceHarness {
        let source = try makeTemporaryDirectory(self)
        try TaxdumpFixture.write(to: source)
        try writeTSV(source, "nodes.dmp", TaxdumpFixture.nodes + extraNodes)
        try writeTSV(source, "names.dmp", TaxdumpFixture.names + extraNames)
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        options.fullTree = fullTree
        let harness = try ServiceHarness(self, bundledSource: source, options: options)
        harness.waitForTreeLoaded()
        return harness
    }

    private func compare(_ harness: ServiceHarness, _ pairs: [(String, String)], ranks: Stol_V1_RankView) throws -> [Stol_V1_CompareBatchResult] {
        let response = harness.send(.compareBatch(.with {
            $0.pairs = pairs.map { pair in .with { $0.a = pair.0; $0.b = pair.1 } }
            $0.ranks = ranks
        }))
        guard case .compareBatch(let batch) = response.result else { throw XCTSkip("no batch: \(response)") }
        return batch.results
    }

    /// A bacterium beside the fixture's eukaryotes: their common ancestor is "cellular organisms", above every domain.
    static let bacterium = [dumpRow("2", "131567", "superkingdom", "", "0", "0", "11", "0", "0", "0", "0", "0", ""),
                            dumpRow("562", "2", "species", "", "0", "1", "11", "1", "0", "1", "1", "0", "")]
    static let bacteriumNames = [dumpRow("2", "Bacteria", "", "scientific name"),
                                 dumpRow("562", "Escherichia coli", "", "scientific name")]

    func testAllRanks_givesNCBIsCommonAncestorAndBothDistances() throws {
        let harness = try harness(fullTree: true, extraNodes: Self.bacterium, extraNames: Self.bacteriumNames)
        let results = try compare(harness, [("9689", "9694"), ("9689", "562"), ("Panthera leo", "Felis catus"), ("9689", "9689")],
                                  ranks: .all)
        XCTAssertEqual(results.map(\.lcaID), [9688, 131567, 9681, 9689])
        XCTAssertEqual(results[0].lcaRank, "genus")
        XCTAssertEqual(results.map(\.distanceAll), [2, 9 + 2, 3 + 2, 0])
        // Main-rank taxa below the ancestor: lion (species) + genus Panthera on one side, cat + Felis on the other.
        XCTAssertEqual(results[2].distanceMain, 4)
        XCTAssertEqual(results[1].lcaName, "cellular organisms")
        XCTAssertEqual(results[1].lcaRank, "no rank")
        XCTAssertFalse(results.contains(where: \.unrelated), "with the whole tree every pair has a common ancestor")
    }

    func testMainRanks_namesTheNearestMainRankAncestor_orNCBIsAboveEveryDomain() throws {
        let harness = try harness(fullTree: true, extraNodes: Self.bacterium, extraNames: Self.bacteriumNames)
        // Lion and Felis catus meet at Felidae either way; lion and a subfamily meet at it on NCBI's tree only.
        let results = try compare(harness, [("9689", "9685"), ("9689", "338153"), ("9689", "562")], ranks: .main)
        XCTAssertEqual(results.map(\.lcaID), [9681, 9681, 131567])
        XCTAssertEqual(results[1].lcaRank, "family")
        XCTAssertEqual(results[2].lcaRank, "no rank")
    }

    func testOnTheMainRanksOnly_differentRootsAreUnrelated_andAllRanksIsRefused() throws {
        let harness = try harness(fullTree: false, extraNodes: Self.bacterium, extraNames: Self.bacteriumNames)
        let results = try compare(harness, [("9689", "9694"), ("9689", "562"), ("9689", "424242")], ranks: .main)
        XCTAssertEqual(results[0].lcaID, 9688)
        XCTAssertEqual(results[0].distanceMain, 2)
        XCTAssertFalse(results[0].hasDistanceAll)
        XCTAssertTrue(results[1].unrelated)
        XCTAssertEqual(results[2].error.code, .notFound)
        let refused = harness.send(.compareBatch(.with { $0.pairs = [.with { $0.a = "1"; $0.b = "2" }]; $0.ranks = .all }))
        XCTAssertEqual(refused.error.code, .invalidRequest)
    }

    func testNameLookup_givesEveryTaxonOfAName_andSaysHowItMatched() throws {
        let harness = try harness(fullTree: true,
                                  extraNodes: [dumpRow("999999", "9681", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", "")],
                                  extraNames: [dumpRow("999999", "Panthera", "", "scientific name")])
        let response = harness.send(.nameLookup(.with { $0.names = ["Panthera", "cellular organisms", "lion", "panthera leo", "Nothing here"] }))
        guard case .nameLookup(let lookup) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(lookup.results.map(\.ids), [[9688, 999999], [131567], [9689], [9689], []])
        XCTAssertEqual(lookup.results[0].ranks, ["genus", "genus"])
        XCTAssertEqual(lookup.results[1].ranks, ["no rank"])
        XCTAssertEqual(lookup.results.map(\.match), [.scientific, .scientific, .common, .scientific, .unspecified])
        XCTAssertEqual(lookup.results[4].error.code, .notFound)
    }
}
