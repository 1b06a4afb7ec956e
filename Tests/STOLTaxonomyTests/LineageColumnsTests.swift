import STOLModel
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// `lineage_batch`'s `columns` (``LineageColumns``) on the NCBI taxdump fixture: each
/// column's cell is the id of the lineage's node of its rank, read through the rank table
/// (any case, a level's other spellings on the whole tree, the source's spellings of a
/// main rank on the main view); a column that names no rank of the view refuses the request.
final class LineageColumnsTests: XCTestCase {
    private func batch(_ harness: ServiceHarness, _ queries: [String], ranks: Stol_V1_RankView,
                       form: Stol_V1_LineageForm = .nodes, columns: [String],
                       template: String? = nil) async -> Stol_V1_TaxonomyResponse {
        await harness.send(.lineageBatch(.with {
            $0.queries = queries; $0.ranks = ranks; $0.form = form; $0.columns = columns
            if let template { $0.template = .with { $0.format = template } }
        }))
    }

    func testWholeTree_fillsEachColumnWithTheLowestNodeOfItsRank_orOfItsLevelsOtherSpellings() async throws {
        let harness = try await ncbiFixtureHarness(self)
        // The lion: root and cellular organisms (both no rank), Eukaryota (superkingdom), …,
        // Pantherinae (subfamily), Panthera (genus), the lion itself (species).
        let columns = ["Domain", "superkingdom ", "subfamily", "genus", "species", "strain", "no rank", "realm"]
        for form in [Stol_V1_LineageForm.nodes, .ids, .compact, .taxa] {
            let response = await batch(harness, ["9689", "Panthera", "424242", "0"], ranks: .all, form: form, columns: columns)
            guard case .lineageBatch(let answer) = response.result else { return XCTFail("\(response)") }
            XCTAssertEqual(answer.results[0].columnIds, [2759, 2759, 338153, 9688, 9689, 0, 131567, 2759],
                           "\(form): domain by superkingdom, the taxon its own species, the lowest no-rank node, "
                               + "realm on the domain's level")
            XCTAssertEqual(answer.results[1].columnIds, [2759, 2759, 338153, 9688, 0, 0, 131567, 2759], "\(form)")
            XCTAssertTrue(answer.results[2].hasError && answer.results[2].columnIds.isEmpty, "\(form): an error has none")
            XCTAssertTrue(answer.results[3].hasError && answer.results[3].columnIds.isEmpty, "\(form)")
        }
        let templated = await batch(harness, ["9689"], ranks: .all, form: .ids, columns: ["genus"], template: "{g};{s}")
        guard case .lineageBatch(let filled) = templated.result else { return XCTFail("\(templated)") }
        XCTAssertEqual(filled.results[0].formatted, "Panthera;Panthera leo")
        XCTAssertEqual(filled.results[0].columnIds, [9688], "a template and columns in one request")
    }

    func testWholeTree_prefersTheColumnsOwnSpelling_thenTheLevelsOthersInTheTablesOrder() async throws {
        // subspecies, forma specialis and pathovar are one level: the Asiatic lion (subspecies)
        // and below it a forma specialis.
        let nodes = [dumpRow("9695", "9689", "subspecies", "", "2", "1", "1", "1", "2", "1", "0", "0", ""),
                     dumpRow("9696", "9695", "forma specialis", "", "2", "1", "1", "1", "2", "1", "0", "0", "")]
        let names = [dumpRow("9695", "Panthera leo persica", "", "scientific name"),
                     dumpRow("9696", "Panthera leo persica f. sp. test", "", "scientific name")]
        let harness = try await ncbiFixtureHarness(self, extraNodes: nodes, extraNames: names)
        let columns = ["subspecies", "forma specialis", "pathovar", "species"]
        let response = await batch(harness, ["9696", "9695"], ranks: .all, columns: columns)
        guard case .lineageBatch(let answer) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(answer.results[0].columnIds, [9695, 9696, 9695, 9689],
                       "its own spelling first, though lower nodes have another; pathovar: the table's first other spelling")
        XCTAssertEqual(answer.results[1].columnIds, [9695, 9695, 9695, 9689], "no forma specialis: the level's subspecies")
        let main = await batch(harness, ["9696"], ranks: .main, columns: ["genus", "species"])
        guard case .lineageBatch(let mainAnswer) = main.result else { return XCTFail("\(main)") }
        XCTAssertEqual(mainAnswer.results[0].columnIds, [9688, 9689], "outside the main ranks: its species' lineage")
    }

    func testMainView_readsTheSourcesSpellingsOfAMainRank_andNoOtherRank() async throws {
        let harness = try await ncbiFixtureHarness(self)
        let response = await batch(harness, ["9689", "338153"], ranks: .main, columns: ["superkingdom", "Genus", "species", "family"])
        guard case .lineageBatch(let answer) = response.result else { return XCTFail("\(response)") }
        XCTAssertEqual(answer.results[0].columnIds, [2759, 9688, 9689, 9681])
        XCTAssertEqual(answer.results[1].columnIds, [2759, 0, 0, 9681],
                       "Pantherinae, outside the main ranks: its nearest main-rank ancestor's lineage; a subfamily fills no column")
    }

    func testAColumnThatNamesNoRankOfTheView_refusesTheRequest_namingItAndListingTheValidOnes() async throws {
        let harness = try await ncbiFixtureHarness(self)
        for (ranks, columns, bad, listed) in [(Stol_V1_RankView.main, ["genus", "strain"], "strain", "domain, kingdom, phylum"),
                                              (.main, ["Genuss"], "Genuss", "superkingdom"),
                                              (.all, ["genus", "famly"], "famly", "domain=superkingdom=realm=empire"),
                                              (.all, [""], "", "no rank, clade")] {
            let response = await batch(harness, ["9689"], ranks: ranks, columns: columns)
            guard case .error(let error)? = response.result else { XCTFail("\(columns): \(response)"); continue }
            XCTAssertEqual(error.code, .invalidRequest, "\(columns)")
            XCTAssertEqual(error.details["column"], bad, "\(columns)")
            XCTAssertTrue(error.message.contains(listed), "\(columns): \(error.message)")
        }
        let many = await batch(harness, ["9689"], ranks: .all, columns: Array(repeating: "genus", count: LineageColumns.limit + 1))
        guard case .error(let error)? = many.result else { return XCTFail("\(many)") }
        XCTAssertEqual(error.code, .invalidRequest)
        XCTAssertTrue(error.message.contains("at most \(LineageColumns.limit) columns"), error.message)
        XCTAssertEqual(error.details["column"], "genus", "the first column past the limit")
        let some = await batch(harness, ["9689"], ranks: .all, columns: Array(repeating: "genus", count: LineageColumns.limit))
        guard case .lineageBatch(let answer) = some.result else { return XCTFail("\(some)") }
        XCTAssertEqual(answer.results[0].columnIds, Array(repeating: 9688, count: LineageColumns.limit))
    }

    func testBeforeTheInMemoryTree_theMainViewsColumnsAreTheSame() async throws {
        let harness = try await ncbiFixtureHarness(self)
        let database = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled, loadIndexes: false)
        XCTAssertNil(database.memoryIndexes?.tree, "answered by SQL, not by the tree")
        let columns = ["superkingdom", "Genus", "species", "family"]
        let answer = try LineageQueries(database: database).lineageBatch(["9689", "Panthera", "424242"], language: "en",
                                                                          ranks: .main, form: .compact, columns: columns)
        XCTAssertEqual(answer.results[0].columnIds, [2759, 9688, 9689, 9681])
        XCTAssertEqual(answer.results[1].columnIds, [2759, 9688, 0, 9681])
        XCTAssertTrue(answer.results[2].hasError && answer.results[2].columnIds.isEmpty)
    }
}
