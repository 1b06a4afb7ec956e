import STOLModel
import STOLPipeline
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// A service over the NCBI taxdump fixture (plus extra nodes and names), its
/// indexes loaded: built as the pipeline builds it (schema 3, every node), or with
/// `fullTree` false as a database of the main ranks only was built before schema 3
/// (schema 2 without its whole tree), which an installed reference may still be.
func ncbiFixtureHarness(_ testCase: XCTestCase, fullTree: Bool = true, extraNodes: [String] = [],
                        extraNames: [String] = []) async throws -> ServiceHarness {
    let source = try makeTemporaryDirectory(testCase)
    try TaxdumpFixture.write(to: source)
    try writeTSV(source, "nodes.dmp", TaxdumpFixture.nodes + extraNodes)
    try writeTSV(source, "names.dmp", TaxdumpFixture.names + extraNames)
    var options = TaxonomyBuilder.Options()
    options.format = .ncbi
    let harness = try ServiceHarness(testCase, bundledSource: source, options: options,
                                     legacySchema: fullTree ? nil : 2, legacyKeepsTree: false)
    await harness.waitForTreeLoaded()
    return harness
}

/// Lineages on NCBI's own tree (`ranks: RANK_VIEW_ALL`) of a database built with
/// the whole tree, beside the eight-rank view, from the NCBI taxdump fixture:
/// every node and NCBI's ranks, one root, names resolved on every node, and a name
/// that fits two taxa said so rather than picked.
final class FullTreeLineageTests: XCTestCase {
    /// The lion's lineage as NCBI has it (nodes.dmp of the fixture), root first.
    static let lionLineage: [Int64] = [1, 131567, 2759, 33208, 7711, 40674, 33554, 9681, 338153, 9688]

    private func harness(fullTree: Bool = true, extraNodes: [String] = [], extraNames: [String] = []) async throws -> ServiceHarness {
        try await ncbiFixtureHarness(self, fullTree: fullTree, extraNodes: extraNodes, extraNames: extraNames)
    }

    private func lineages(_ harness: ServiceHarness, _ queries: [String], ranks: Stol_V1_RankView,
                          form: Stol_V1_LineageForm) async throws -> [Stol_V1_LineageResult] {
        let response = await harness.send(.lineageBatch(.with { $0.queries = queries; $0.ranks = ranks; $0.form = form }))
        guard case .lineageBatch(let batch) = response.result else { throw TestSupportError("expected a batch, got \(response)") }
        return batch.results
    }

    func testAllRanks_givesNCBIsLineage_withItsRanksAndNames_inEveryForm() async throws {
        let harness = try await harness()
        let lineages1 = try await lineages(harness, ["9689"], ranks: .all, form: .compact)
        let compact = try XCTUnwrap(lineages1.first)
        XCTAssertFalse(compact.hasError, "\(compact.error)")
        XCTAssertEqual(compact.lineageIds, Self.lionLineage)
        XCTAssertEqual(compact.lineageRanks, ["no rank", "no rank", "superkingdom", "kingdom", "phylum", "class", "order",
                                              "family", "subfamily", "genus"])
        XCTAssertEqual(compact.lineageNames.prefix(3), ["root", "cellular organisms", "Eukaryota"])
        XCTAssertEqual(compact.lineageNames[8], "Pantherinae")
        XCTAssertEqual(compact.taxon.sourceRank, "species")
        XCTAssertEqual(compact.taxon.rank, .species)
        XCTAssertEqual(compact.taxon.scientificName, "Panthera leo")
        let lineages2 = try await lineages(harness, ["9689"], ranks: .all, form: .ids)
        let ids = try XCTUnwrap(lineages2.first)
        XCTAssertEqual(ids.lineageIds, Self.lionLineage)
        XCTAssertTrue(ids.lineageNames.isEmpty)
        let lineages3 = try await lineages(harness, ["9689"], ranks: .all, form: .taxa)
        let taxa = try XCTUnwrap(lineages3.first)
        XCTAssertEqual(taxa.lineage.map(\.id), Self.lionLineage)
        XCTAssertEqual(taxa.lineage[8].sourceRank, "subfamily")
        XCTAssertEqual(taxa.lineage[8].rank, .unspecified, "a subfamily has no main rank")
        XCTAssertEqual(taxa.lineage[2].rank, .domain, "superkingdom is the domain of the main view")
    }

    func testMainRanks_keepTheEightRankLineage() async throws {
        let harness = try await harness()
        let lineages4 = try await lineages(harness, ["9689"], ranks: .main, form: .compact)
        let result = try XCTUnwrap(lineages4.first)
        XCTAssertEqual(result.lineageIds, [2759, 33208, 7711, 40674, 33554, 9681, 9688])
        XCTAssertEqual(result.lineageRanks, ["domain", "kingdom", "phylum", "class", "order", "family", "genus"])
    }

    func testNodesOutsideTheMainRanks_areFoundByIdAndName_inBothViews() async throws {
        let harness = try await harness()
        let all = try await lineages(harness, ["cellular organisms", "338153", "1"], ranks: .all, form: .ids)
        XCTAssertEqual(all.map(\.taxon.id), [131567, 338153, 1])
        XCTAssertEqual(all[0].lineageIds, [1])
        XCTAssertEqual(all[2].lineageIds, [], "the root has no ancestor")
        // On the main ranks a node outside them has its nearest main-rank ancestor's
        // lineage, that ancestor included (taxonkit reformat's answer).
        for form in [Stol_V1_LineageForm.ids, .compact, .taxa] {
            let main = try await lineages(harness, ["cellular organisms", "338153", "Pantherinae", "1"], ranks: .main, form: form)
            XCTAssertEqual(main.map(\.error.code), [.unspecified, .unspecified, .unspecified, .unspecified], "\(form)")
            XCTAssertEqual(main.map(\.taxon.id), [131567, 338153, 338153, 1], "\(form)")
            XCTAssertEqual(main[1].taxon.sourceRank, "subfamily", "\(form)")
            XCTAssertEqual(main[1].taxon.rank, .unspecified, "\(form)")
            let lineage = form == .taxa ? main[1].lineage.map(\.id) : main[1].lineageIds
            XCTAssertEqual(lineage, [2759, 33208, 7711, 40674, 33554, 9681], "\(form)")
            XCTAssertEqual(form == .taxa ? main[0].lineage.map(\.id) : main[0].lineageIds, [],
                           "cellular organisms has no main-rank ancestor (\(form))")
        }
    }

    /// The nodes form: the compact form's ranks and names, each node's once per answer
    /// (in the order it first occurs), read back through the lineage ids; in both views,
    /// with a name, a node outside the main ranks, the root, an unknown id and a name of two taxa.
    func testTheNodesForm_saysWhatTheCompactFormSays_withEachNodeOnce() async throws {
        let harness = try await harness()
        let queries = ["9689", "Panthera tigris", "338153", "1", "9606", "424242", "Pantherinae", "0"]
        for ranks in [Stol_V1_RankView.all, .main] {
            let compact = try await lineages(harness, queries, ranks: ranks, form: .compact)
            let response = await harness.send(.lineageBatch(.with { $0.queries = queries; $0.ranks = ranks; $0.form = .nodes }))
            guard case .lineageBatch(let batch) = response.result else { return XCTFail("expected a batch, got \(response)") }
            let nodes = Dictionary(uniqueKeysWithValues: batch.nodes.map { ($0.id, $0) })
            XCTAssertEqual(nodes.count, batch.nodes.count, "each node once (\(ranks))")
            var firstSeen: [Int64] = []
            for (expected, result) in zip(compact, batch.results) {
                XCTAssertEqual(result.query, expected.query)
                XCTAssertEqual(result.taxon, expected.taxon, "\(result.query) (\(ranks))")
                XCTAssertEqual(result.error, expected.error, "\(result.query) (\(ranks))")
                XCTAssertEqual(result.lineageIds, expected.lineageIds, "\(result.query) (\(ranks))")
                XCTAssertEqual(result.lineageNames, [], "no name repeated in the result")
                XCTAssertEqual(result.lineageIds.map { nodes[$0]?.name }, expected.lineageNames.map { $0 }, "\(result.query) (\(ranks))")
                XCTAssertEqual(result.lineageIds.map { nodes[$0]?.rank }, expected.lineageRanks.map { $0 }, "\(result.query) (\(ranks))")
                for id in result.lineageIds where !firstSeen.contains(id) { firstSeen.append(id) }
            }
            XCTAssertEqual(batch.nodes.map(\.id), firstSeen, "in the order they first occur, and no node no lineage holds")
            XCTAssertTrue(compact.contains { $0.hasError }, "an error is among the answers")
        }
    }

    func testANameOfTwoTaxa_isAnErrorNamingBoth_inBothViews() async throws {
        // A second Panthera (a genus of moths shares names with cats in real taxonomies).
        let harness = try await harness(extraNodes: [dumpRow("999999", "9681", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", "")],
                                  extraNames: [dumpRow("999999", "Panthera", "", "scientific name")])
        for ranks in [Stol_V1_RankView.all, .main] {
            let lineages5 = try await lineages(harness, ["Panthera"], ranks: ranks, form: .ids)
            let result = try XCTUnwrap(lineages5.first)
            XCTAssertEqual(result.error.code, .invalidRequest, "\(ranks)")
            XCTAssertEqual(result.error.details["taxon_ids"], "9688,999999", "\(ranks)")
            XCTAssertTrue(result.error.message.contains("fits 2 taxa"), result.error.message)
        }
    }

    func testAllRanks_onADatabaseWithoutTheWholeTree_saysSo() async throws {
        let harness = try await harness(fullTree: false)
        let response = await harness.send(.lineageBatch(.with { $0.queries = ["9689"]; $0.ranks = .all }))
        XCTAssertEqual(response.error.code, .invalidRequest)
        XCTAssertTrue(response.error.message.contains("only the eight main ranks"), response.error.message)
        guard case .status(let status) = await harness.send(.status(.init())).result else { return XCTFail("no status") }
        XCTAssertEqual(status.fullTreeNodes, 0)
        XCTAssertFalse(status.fullTreeLoaded)
    }

    func testStatus_countsTheWholeTree() async throws {
        let harness = try await harness()
        guard case .status(let status) = await harness.send(.status(.init())).result else { return XCTFail("no status") }
        XCTAssertEqual(status.fullTreeNodes, UInt64(TaxdumpFixture.nodes.count))
        XCTAssertTrue(status.fullTreeLoaded)
    }
}

/// Common ancestors of many pairs and every taxon of a name, on the fixture's
/// whole tree and on a database of the main ranks only.
final class CompareBatchAndNameLookupTests: XCTestCase {
    private func harness(fullTree: Bool, extraNodes: [String] = [], extraNames: [String] = []) async throws -> ServiceHarness {
        try await ncbiFixtureHarness(self, fullTree: fullTree, extraNodes: extraNodes, extraNames: extraNames)
    }

    private func compare(_ harness: ServiceHarness, _ pairs: [(String, String)], ranks: Stol_V1_RankView) async throws -> [Stol_V1_CompareBatchResult] {
        let response = await harness.send(.compareBatch(.with {
            $0.pairs = pairs.map { pair in .with { $0.a = pair.0; $0.b = pair.1 } }
            $0.ranks = ranks
        }))
        guard case .compareBatch(let batch) = response.result else { throw TestSupportError("expected a batch, got \(response)") }
        return batch.results
    }

    /// A bacterium beside the fixture's eukaryotes: their common ancestor is "cellular organisms", above every domain.
    static let bacterium = [dumpRow("2", "131567", "superkingdom", "", "0", "0", "11", "0", "0", "0", "0", "0", ""),
                            dumpRow("562", "2", "species", "", "0", "1", "11", "1", "0", "1", "1", "0", "")]
    static let bacteriumNames = [dumpRow("2", "Bacteria", "", "scientific name"),
                                 dumpRow("562", "Escherichia coli", "", "scientific name")]

    func testAllRanks_givesNCBIsCommonAncestorAndBothDistances() async throws {
        let harness = try await harness(fullTree: true, extraNodes: Self.bacterium, extraNames: Self.bacteriumNames)
        let results = try await compare(harness, [("9689", "9694"), ("9689", "562"), ("Panthera leo", "Felis catus"), ("9689", "9689")],
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

    func testMainRanks_namesTheNearestMainRankAncestor_orNCBIsAboveEveryDomain() async throws {
        let harness = try await harness(fullTree: true, extraNodes: Self.bacterium, extraNames: Self.bacteriumNames)
        // Lion and Felis catus meet at Felidae either way; lion and a subfamily meet at it on NCBI's tree only.
        let results = try await compare(harness, [("9689", "9685"), ("9689", "338153"), ("9689", "562")], ranks: .main)
        XCTAssertEqual(results.map(\.lcaID), [9681, 9681, 131567])
        XCTAssertEqual(results[1].lcaRank, "family")
        XCTAssertEqual(results[2].lcaRank, "no rank")
    }

    func testOnTheMainRanksOnly_differentRootsAreUnrelated_andAllRanksIsRefused() async throws {
        let harness = try await harness(fullTree: false, extraNodes: Self.bacterium, extraNames: Self.bacteriumNames)
        let results = try await compare(harness, [("9689", "9694"), ("9689", "562"), ("9689", "424242")], ranks: .main)
        XCTAssertEqual(results[0].lcaID, 9688)
        XCTAssertEqual(results[0].distanceMain, 2)
        XCTAssertFalse(results[0].hasDistanceAll)
        XCTAssertTrue(results[1].unrelated)
        XCTAssertEqual(results[2].error.code, .notFound)
        let refused = await harness.send(.compareBatch(.with { $0.pairs = [.with { $0.a = "1"; $0.b = "2" }]; $0.ranks = .all }))
        XCTAssertEqual(refused.error.code, .invalidRequest)
    }

    func testNameLookup_givesEveryTaxonOfAName_andSaysHowItMatched() async throws {
        let harness = try await harness(fullTree: true,
                                  extraNodes: [dumpRow("999999", "9681", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", "")],
                                  extraNames: [dumpRow("999999", "Panthera", "", "scientific name")])
        let response = await harness.send(.nameLookup(.with { $0.names = ["Panthera", "cellular organisms", "lion", "panthera leo", "Nothing here"] }))
        guard case .nameLookup(let lookup) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(lookup.results.map(\.ids), [[9688, 999999], [131567], [9689], [9689], []])
        XCTAssertEqual(lookup.results[0].ranks, ["genus", "genus"])
        XCTAssertEqual(lookup.results[1].ranks, ["no rank"])
        XCTAssertEqual(lookup.results.map(\.match), [.scientific, .scientific, .common, .scientific, .unspecified])
        XCTAssertEqual(lookup.results[4].error.code, .notFound)
    }

    /// `ids_only` answers each name's ids as its whole result lists them, in order, and
    /// nothing else: on both trees, with and without a hint, for names that are
    /// ambiguous, common, capitalised, padded, repeated, blank or unknown.
    func testNameLookupIdsOnly_isEachWholeResultsIds_inOrder_withOrWithoutAHint() async throws {
        for fullTree in [true, false] {
            let harness = try await harness(fullTree: fullTree,
                                            extraNodes: [dumpRow("999999", "9681", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", "")],
                                            extraNames: [dumpRow("999999", "Panthera", "", "scientific name")])
            let names = ["Panthera", "cellular organisms", "lion", "panthera leo", "Nothing here", "", "  Felidae ", "Panthera",
                         "felis catus"]
            for within in ["", "9681", "9682"] {
                let whole = await harness.send(.nameLookup(.with { $0.names = names; $0.within = within }))
                let compact = await harness.send(.nameLookup(.with { $0.names = names; $0.within = within; $0.idsOnly = true }))
                guard case .nameLookup(let full) = whole.result, case .nameLookup(let idsOnly) = compact.result else {
                    XCTFail("\(whole) \(compact)")
                    continue
                }
                let context = "full tree \(fullTree), within '\(within)'"
                XCTAssertTrue(idsOnly.results.isEmpty, context)
                XCTAssertEqual(idsOnly.idCounts, full.results.map { UInt32($0.ids.count) }, context)
                XCTAssertEqual(idsOnly.ids, full.results.flatMap(\.ids), context)
                XCTAssertTrue(full.idCounts.isEmpty && full.ids.isEmpty, context)
                if within.isEmpty { XCTAssertGreaterThan(idsOnly.ids.count, 0, context) }
            }
        }
    }
}

/// Ids NCBI retired (the fixture's merged.dmp: 12345 → 9689, 54321 → 9685;
/// delnodes.dmp: 99999, 88888) are translated as taxonkit and ete4 do: a merged
/// id is answered as its new taxon and said so, a deleted one has its own error.
final class RetiredIDTests: XCTestCase {
    private func harness(fullTree: Bool) async throws -> ServiceHarness {
        try await ncbiFixtureHarness(self, fullTree: fullTree)
    }

    func testAMergedID_isAnsweredAsItsNewTaxon_andSaidSo_byEveryOperationWithAnID() async throws {
        let harness = try await harness(fullTree: false)
        let taxon = await harness.getTaxon(12345)
        guard case .taxon(let lion) = taxon.result else { return XCTFail("\(taxon)") }
        XCTAssertEqual(lion.id, 9689)
        XCTAssertEqual(taxon.merged.map { [$0.oldID, $0.newID] }, [[12345, 9689]])
        let compare = await harness.compare(12345, 54321)
        guard case .compare(let answer) = compare.result else { return XCTFail("\(compare)") }
        XCTAssertEqual([answer.taxonA.id, answer.taxonB.id], [9689, 9685])
        XCTAssertEqual(Set(compare.merged.map(\.oldID)), [12345, 54321])
        let ancestors1 = await harness.ancestors(12345)
        XCTAssertEqual(ancestors1.merged.first?.newID, 9689)
        let getTaxon1 = await harness.getTaxon(9689)
        XCTAssertTrue(getTaxon1.merged.isEmpty, "a current id is not marked")
    }

    func testADeletedID_isTaxonDeleted_andAnUnknownOneStillNotFound() async throws {
        let harness = try await harness(fullTree: false)
        let deleted = await harness.getTaxon(99999)
        XCTAssertEqual(deleted.error.code, .taxonDeleted)
        XCTAssertEqual(deleted.error.details["taxon_id"], "99999")
        XCTAssertTrue(deleted.error.message.contains("deleted from NCBI"), deleted.error.message)
        let compare1 = await harness.compare(9689, 88888)
        XCTAssertEqual(compare1.error.code, .taxonDeleted)
        let getTaxon2 = await harness.getTaxon(424242)
        XCTAssertEqual(getTaxon2.error.code, .notFound)
    }

    func testBatches_translateRetiredIDs_perQuery() async throws {
        for fullTree in [false, true] {
            let harness = try await harness(fullTree: fullTree)
            let ranks: Stol_V1_RankView = fullTree ? .all : .main
            let response = await harness.send(.lineageBatch(.with { $0.queries = ["12345", "99999", "424242"]; $0.ranks = ranks; $0.form = .ids }))
            guard case .lineageBatch(let batch) = response.result else { return XCTFail("\(response)") }
            XCTAssertEqual(batch.results[0].taxon.id, 9689, "full tree \(fullTree)")
            XCTAssertEqual(batch.results[0].mergedFrom, 12345)
            XCTAssertEqual(batch.results.map(\.error.code), [.unspecified, .taxonDeleted, .notFound])
        }
        let harness = try await harness(fullTree: true)
        let response = await harness.send(.compareBatch(.with { $0.pairs = [.with { $0.a = "12345"; $0.b = "9694" },
                                                                     .with { $0.a = "99999"; $0.b = "9694" }]; $0.ranks = .all }))
        guard case .compareBatch(let batch) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(batch.results[0].aID, 9689)
        XCTAssertEqual(batch.results[0].lcaID, 9688)
        XCTAssertEqual(batch.results[1].error.code, .taxonDeleted)
    }
}

/// Subtrees for drawing: preorder with depths on both trees, the size guard.
final class SubtreeTests: XCTestCase {
    func testSubtree_onBothTrees_isAPreorderWithDepths_andTooLargeIsRefusedWithItsSize() async throws {
        let harness = try await ncbiFixtureHarness(self)
        func subtree(_ id: Int64, _ ranks: Stol_V1_RankView, max: UInt32 = 0) async -> Stol_V1_TaxonomyResponse {
            await harness.send(.subtree(.with { $0.taxonID = id; $0.ranks = ranks; $0.maxTaxa = max }))
        }
        guard case .subtree(let all) = await subtree(9681, .all).result else { return XCTFail("no subtree") }
        // Felidae on NCBI's tree, children in name order as in every view: Felis (9682) with the cat,
        // Pantherinae (338153) with Panthera and its species ("Panthera sp." before "Panthera tigris"),
        // then "unclassified Felidae" (339610).
        XCTAssertEqual(all.ids, [9681, 9682, 9685, 338153, 9688, 9689, 9690, 1383299, 9694, 339610])
        XCTAssertEqual(all.depths, [0, 1, 2, 1, 2, 3, 3, 3, 3, 1])
        XCTAssertEqual(all.ranks[3], "subfamily")
        XCTAssertEqual(all.names[0], "Felidae")
        XCTAssertEqual(all.names, ["Felidae", "Felis", "Felis catus", "Pantherinae", "Panthera", "Panthera leo", "Panthera onca",
                                   "Panthera sp.", "Panthera tigris", "unclassified Felidae"], "names in the order of the ids")
        guard case .subtree(let main) = await subtree(9681, .main).result else { return XCTFail("no subtree") }
        XCTAssertEqual(main.ids.first, 9681)
        XCTAssertFalse(main.ids.contains(338153), "the subfamily is not in the eight-rank view")
        XCTAssertEqual(Set(main.ranks), ["family", "genus", "species"])
        let refused = await subtree(9681, .all, max: 3)
        XCTAssertEqual(refused.error.code, .invalidRequest)
        XCTAssertTrue(refused.error.message.contains("more than 3 taxa"), refused.error.message)
        let subtree1 = await subtree(424242, .all)
        XCTAssertEqual(subtree1.error.code, .notFound)
    }
}

/// `ancestors` and `compare` of one pair on NCBI's own tree.
final class FullTreeAncestorsAndCompareTests: XCTestCase {
    private func harness(fullTree: Bool = true) async throws -> ServiceHarness {
        try await ncbiFixtureHarness(self, fullTree: fullTree)
    }

    func testAncestors_allRanks_areNCBIs_andMainRanksTheEightRankOnes() async throws {
        let harness = try await harness()
        let all = await harness.send(.ancestors(.with { $0.taxonID = 9689; $0.ranks = .all }))
        guard case .ancestors(let list) = all.result else { return XCTFail("\(all)") }
        XCTAssertEqual(list.taxa.map(\.id), FullTreeLineageTests.lionLineage)
        XCTAssertEqual(list.taxa.map(\.sourceRank).prefix(3), ["no rank", "no rank", "superkingdom"])
        guard case .ancestors(let main) = await harness.ancestors(9689).result else { return XCTFail("no ancestors") }
        XCTAssertEqual(main.taxa.map(\.id), [2759, 33208, 7711, 40674, 33554, 9681, 9688])
    }

    func testCompare_allRanks_meetsAtNCBIsAncestor_withNCBIsDistance() async throws {
        let harness = try await harness()
        let response = await harness.send(.compare(.with { $0.taxonA = 9689; $0.taxonB = 9685; $0.ranks = .all }))
        guard case .compare(let answer) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(answer.lca.id, 9681)
        XCTAssertEqual(answer.distance, 5, "lion → Panthera → Pantherinae → Felidae ← Felis ← cat")
        XCTAssertEqual(answer.pathA.map(\.id), [9689, 9688, 338153, 9681])
        XCTAssertEqual(answer.pathB.map(\.id), [9685, 9682, 9681])
        XCTAssertEqual(answer.lcaDepth, 7)
        XCTAssertEqual(answer.relation, .related)
        XCTAssertEqual(answer.sharedClade, "Both are in family Felidae")
        XCTAssertEqual(answer.distanceAll, 5)
        XCTAssertEqual(answer.distanceMain, 4, "lion, Panthera; cat, Felis: the subfamily is no main rank")
        // On the main ranks the same pair reports its own distance and both others.
        guard case .compare(let main) = await harness.compare(9689, 9685).result else { return XCTFail("no compare") }
        XCTAssertEqual(main.distance, 4)
        XCTAssertEqual(main.distanceAll, 5)
        XCTAssertEqual(main.distanceMain, 4)
        let ancestor = await harness.send(.compare(.with { $0.taxonA = 338153; $0.taxonB = 9689; $0.ranks = .all }))
        guard case .compare(let up) = ancestor.result else { return XCTFail("\(ancestor)") }
        XCTAssertEqual(up.relation, .aAncestorOfB, "the subfamily is an ancestor on NCBI's tree")
    }

    func testRelatives_allRanks_areTheClosestNCBISpeciesInNCBIsEdges() async throws {
        let harness = try await harness()
        let response = await harness.send(.relatives(.with { $0.taxonID = 9689; $0.n = 4; $0.ranks = .all }))
        guard case .relatives(let answer) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(answer.source, .computed)
        XCTAssertEqual(answer.relatives.map(\.taxon.id), [9690, 1383299, 9694, 9685], "onca, sp., tigris (2 edges, by name), then the cat (5)")
        XCTAssertEqual(answer.relatives.map(\.distance), [2, 2, 2, 5])
        XCTAssertEqual(answer.relatives.last?.lca.id, 9681)
        let send1 = await harness.send(.relatives(.with { $0.taxonID = 9688; $0.ranks = .all }))
        XCTAssertEqual(send1.error.code, .invalidRequest,
                       "a genus has no closest species")
    }

    func testAllRanks_withoutTheWholeTree_isRefused() async throws {
        let harness = try await harness(fullTree: false)
        let send2 = await harness.send(.ancestors(.with { $0.taxonID = 9689; $0.ranks = .all }))
        XCTAssertEqual(send2.error.code, .invalidRequest)
        let send3 = await harness.send(.compare(.with { $0.taxonA = 9689; $0.taxonB = 9685; $0.ranks = .all }))
        XCTAssertEqual(send3.error.code, .invalidRequest)
    }
}
