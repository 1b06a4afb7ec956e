import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Schema 3: every node of the source is a taxon. Ids a lab holds outside the
/// eight ranks (a subspecies, a subfamily, the root, "cellular organisms") are
/// answered by every operation, on the main ranks by default (their main-rank
/// lineage) and on NCBI's own tree with `ranks: all` — with the in-memory trees
/// loaded, and from SQL before they are.
final class EveryNodeTests: XCTestCase {
    /// The Asiatic lion, a subspecies under the lion, with its common name.
    static let subspecies = [dumpRow("9695", "9689", "subspecies", "", "2", "1", "1", "1", "2", "1", "0", "0", "")]
    static let subspeciesNames = [dumpRow("9695", "Panthera leo persica", "", "scientific name"),
                                  dumpRow("9695", "Asiatic lion", "", "genbank common name")]
    static let lionMainLineage: [Int64] = [2759, 33208, 7711, 40674, 33554, 9681, 9688]

    private func harness() async throws -> ServiceHarness {
        try await ncbiFixtureHarness(self, extraNodes: Self.subspecies, extraNames: Self.subspeciesNames)
    }

    func testTaxonAndDetail_ofASubspecies_haveItsRankParentNameAndMainLineage() async throws {
        let harness = try await harness()
        guard case .taxon(let taxon)? = await harness.getTaxon(9695).result else { return XCTFail("no taxon") }
        XCTAssertEqual(taxon.scientificName, "Panthera leo persica")
        XCTAssertEqual(taxon.rank, .unspecified, "no main rank")
        XCTAssertEqual(taxon.sourceRank, "subspecies")
        XCTAssertEqual(taxon.parentID, 9689)
        XCTAssertEqual(taxon.commonName, "Asiatic lion")
        guard case .detail(let detail)? = await harness.send(.detail(.with { $0.taxonID = 9695 })).result else {
            return XCTFail("no detail")
        }
        XCTAssertEqual(detail.lineage.map(\.id), Self.lionMainLineage + [9689], "its species closes its main-rank lineage")
        for id: Int64 in [1, 131567, 338153] {
            guard case .taxon(let node)? = await harness.getTaxon(id).result else { return XCTFail("\(id) not answered") }
            XCTAssertFalse(node.sourceRank.isEmpty, "\(id)")
        }
    }

    func testAncestors_onTheMainRanks_andOnNCBIsTree() async throws {
        let harness = try await harness()
        let main = await harness.send(.ancestors(.with { $0.taxonID = 9695 }))
        guard case .ancestors(let list)? = main.result else { return XCTFail("\(main)") }
        XCTAssertEqual(list.taxa.map(\.id), Self.lionMainLineage + [9689])
        let all = await harness.send(.ancestors(.with { $0.taxonID = 9695; $0.ranks = .all }))
        guard case .ancestors(let whole)? = all.result else { return XCTFail("\(all)") }
        XCTAssertEqual(whole.taxa.map(\.id), FullTreeLineageTests.lionLineage + [9689])
        // Nodes with no main-rank ancestor: the root and "cellular organisms".
        for id: Int64 in [1, 131567] {
            guard case .ancestors(let none)? = await harness.send(.ancestors(.with { $0.taxonID = id })).result else {
                return XCTFail("\(id) not answered")
            }
            XCTAssertEqual(none.taxa.map(\.id), [], "\(id)")
        }
    }

    func testChildren_mainViewByDefault_NCBIsOwnWithAllRanks_andAlwaysForANodeOutsideTheView() async throws {
        let harness = try await harness()
        func children(_ id: Int64, _ ranks: Stol_V1_RankView) async -> [Stol_V1_Taxon]? {
            guard case .children(let page)? = await harness.send(.children(.with { $0.taxonID = id; $0.ranks = ranks })).result
            else { return nil }
            return page.taxa
        }
        let lionMain = await children(9689, .main)
        XCTAssertEqual(lionMain?.map(\.id), [], "a species has no children in the eight-rank view")
        let lionAll = await children(9689, .all)
        XCTAssertEqual(lionAll?.map(\.id), [9695])
        XCTAssertEqual(lionAll?.first?.sourceRank, "subspecies")
        let felidaeMain = await children(9681, .main)
        XCTAssertTrue(felidaeMain?.contains { $0.id == 9688 } == true, "the view skips the subfamily")
        let felidaeAll = await children(9681, .all)
        XCTAssertTrue(felidaeAll?.contains { $0.id == 338153 } == true, "NCBI's own children include the subfamily")
        XCTAssertFalse(felidaeAll?.contains { $0.id == 9688 } == true)
        let root = await children(1, .main)
        XCTAssertEqual(root?.map(\.id), [131567], "the root lists its own children")
    }

    func testCompareRelativesLineageAndSubtree_acceptANodeOutsideTheView() async throws {
        let harness = try await harness()
        guard case .compare(let compare)? = await harness.compare(9695, 9694).result else { return XCTFail("no compare") }
        XCTAssertEqual(compare.lca.id, 9688, "the Asiatic lion and the tiger meet at Panthera")
        XCTAssertEqual(compare.pathA.map(\.id), [9695, 9689, 9688], "the subspecies, then its main-rank ancestors")
        XCTAssertEqual(compare.distanceMain, 2, "lion and tiger below Panthera; the subspecies is of no main rank")
        XCTAssertEqual(compare.distance, 2, "the main ranks' distance")
        XCTAssertEqual(compare.distanceAll, 3, "subspecies → lion → Panthera ← tiger")
        guard case .compare(let own)? = await harness.compare(9695, 9689).result else { return XCTFail("no compare") }
        XCTAssertEqual(own.relation, .bAncestorOfA)
        XCTAssertEqual(own.distanceMain, 0, "a subspecies and its species are 0 main-rank taxa apart")
        XCTAssertEqual(own.distanceAll, 1)
        let relatives = await harness.send(.relatives(.with { $0.taxonID = 9695; $0.n = 10 }))
        guard case .relatives(let answer)? = relatives.result else { return XCTFail("\(relatives)") }
        XCTAssertEqual(answer.taxon.id, 9689, "answered for its species")
        XCTAssertTrue(answer.relatives.contains { $0.taxon.id == 9694 })
        let subfamily = await harness.send(.relatives(.with { $0.taxonID = 338153 }))
        XCTAssertEqual(subfamily.protocolError?.code, .invalidRequest)
        XCTAssertTrue(subfamily.protocolError?.message.contains("subfamily") == true, "\(String(describing: subfamily.protocolError))")
        let lineage = await harness.send(.lineageBatch(.with { $0.queries = ["9695", "Panthera leo persica", "Asiatic lion"] }))
        guard case .lineageBatch(let batch)? = lineage.result else { return XCTFail("\(lineage)") }
        XCTAssertEqual(batch.results.map(\.taxon.id), [9695, 9695, 9695])
        XCTAssertEqual(batch.results[0].lineage.map(\.id), Self.lionMainLineage + [9689])
        let subtree = await harness.send(.subtree(.with { $0.taxonID = 338153 }))
        guard case .subtree(let tree)? = subtree.result else { return XCTFail("\(subtree)") }
        XCTAssertEqual(tree.ids.first, 338153)
        XCTAssertTrue(tree.ids.contains(9695), "its own (NCBI) subtree, down to the subspecies")
        let taxa = await harness.send(.getTaxa(.with { $0.taxonIds = [9695, 131567, 424242] }))
        guard case .taxa(let found)? = taxa.result else { return XCTFail("\(taxa)") }
        XCTAssertEqual(found.taxa.map(\.id), [9695, 131567])
        XCTAssertEqual(found.missingIds, [424242])
    }

    func testSearchAndNameLookup_findANodeOutsideTheViewByItsNames() async throws {
        let harness = try await harness()
        guard case .search(let search)? = await harness.search("Asiatic lion").result else { return XCTFail("no search") }
        XCTAssertEqual(search.hits.first?.taxon.id, 9695)
        let lookup = await harness.send(.nameLookup(.with { $0.names = ["Panthera leo persica", "Pantherinae"] }))
        guard case .nameLookup(let names)? = lookup.result else { return XCTFail("\(lookup)") }
        XCTAssertEqual(names.results.map(\.ids), [[9695], [338153]])
    }

    /// A name many nodes carry ("environmental samples": 6,433 in NCBI 2024) lists
    /// the first 100 and says how many there are: the answer is bounded before it is
    /// built, from memory and from SQL alike.
    func testNameLookup_ofANameOfManyNodes_listsAtMost100_andSaysHowMany() async throws {
        let shared = (0..<150).map { 800_000 + Int64($0) }
        let harness = try await ncbiFixtureHarness(
            self, extraNodes: shared.map { dumpRow(String($0), "9681", "no rank", "", "2", "1", "1", "1", "2", "1", "0", "0", "") },
            extraNames: shared.map { dumpRow(String($0), "environmental samples", "", "scientific name") })
        let response = await harness.send(.nameLookup(.with { $0.names = ["environmental samples", "Panthera"] }))
        guard case .nameLookup(let lookup)? = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(lookup.results[0].ids, Array(shared.prefix(100)))
        XCTAssertEqual(lookup.results[0].ranks.count, 100)
        XCTAssertEqual(lookup.results[0].total, 150)
        XCTAssertEqual(lookup.results[1].ids, [9688])
        XCTAssertEqual(lookup.results[1].total, 0, "a complete list has no total")
        // The same bound from SQL, before the in-memory trees exist.
        let database = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled, loadIndexes: false)
        let fromSQL = try NameQueries(database: database).lookUpNames(["environmental samples"])
        XCTAssertEqual(fromSQL.results[0].ids, Array(shared.prefix(100)))
        XCTAssertEqual(fromSQL.results[0].total, 150)
    }

    /// A rank filter finds the few taxa of that rank with a word that thousands of
    /// nodes outside the eight ranks also carry ("unclassified"): the nodes of no
    /// rank are skipped, however many come first.
    func testARankFilteredSearch_findsTheSpeciesAmongManyNodesOfNoRankWithTheWord() async throws {
        let buckets = (0..<400).map { 810_000 + Int64($0) }
        let harness = try await ncbiFixtureHarness(
            self,
            extraNodes: buckets.map { dumpRow(String($0), "9681", "no rank", "", "2", "1", "1", "1", "2", "1", "0", "0", "") }
                + [dumpRow("899999", "9688", "species", "", "2", "1", "1", "1", "2", "1", "0", "0", "")],
            extraNames: buckets.map { dumpRow(String($0), "unclassified Felidae \($0)", "", "scientific name") }
                + [dumpRow("899999", "Panthera unclassified", "", "scientific name")])
        let species = await harness.search("unclassified", rank: .species, limit: 20)
        guard case .search(let found)? = species.result else { return XCTFail("\(species)") }
        XCTAssertEqual(found.hits.map(\.taxon.id), [899999])
        let genera = await harness.search("unclassified", rank: .genus)
        guard case .search(let none)? = genera.result else { return XCTFail("\(genera)") }
        XCTAssertEqual(none.hits.filter { !$0.fuzzy }.map(\.taxon.id), [])
    }

    /// Before the in-memory trees are built (the first seconds after a start), the
    /// same answers come from SQL on the one table.
    func testWithoutTheInMemoryTrees_sqlAnswersTheSame() async throws {
        let harness = try await harness()
        let database = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled, loadIndexes: false)
        XCTAssertNil(database.memoryIndexes?.tree)
        let queries = LookupQueries(database: database)
        XCTAssertEqual(try queries.taxon(id: 9695, language: "en").sourceRank, "subspecies")
        XCTAssertEqual(try queries.ancestors(of: 9695, language: "en").map(\.id), Self.lionMainLineage + [9689])
        XCTAssertEqual(try queries.children(of: 9689, offset: 0, limit: 50, language: "en").taxa.map(\.id), [])
        let all = try queries.children(of: 9689, offset: 0, limit: 50, language: "en", ranks: .all)
        XCTAssertEqual(all.taxa.map(\.id), [9695])
        XCTAssertEqual(all.taxa.first?.sourceRank, "subspecies")
        XCTAssertEqual(try queries.children(of: 1, offset: 0, limit: 50, language: "en").taxa.map(\.id), [131567])
        XCTAssertEqual(try queries.roots(language: "en").taxa.map(\.id), [2759], "roots are the view's domains")
    }
}
