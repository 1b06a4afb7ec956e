import STOLPipeline
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// `name_lookup` with a higher taxon to tell homonyms apart (`name2id --within`), and the
/// match kind, confidence and kingdom flag of every answer (issue 24), on an NCBI
/// fixture where "Bacteria" is both the domain and a stick insect genus, as in NCBI.
final class NameLookupContextTests: XCTestCase {
    private static func node(_ id: String, _ parent: String, _ rank: String) -> String {
        dumpRow(id, parent, rank, "", "2", "1", "1", "1", "2", "1", "0", "0", "")
    }

    private static func name(_ id: String, _ text: String, _ nameClass: String = "scientific name") -> String {
        dumpRow(id, text, "", nameClass)
    }

    private var harness: ServiceHarness!

    override func setUp() async throws {
        let source = try makeTemporaryDirectory(self)
        try TaxdumpFixture.write(to: source)
        let nodes = [Self.node("2", "131567", "superkingdom"), Self.node("6656", "33208", "phylum"),
                     Self.node("50557", "6656", "class"), Self.node("7000001", "50557", "genus"),
                     Self.node("7000002", "7000001", "species")]
        let names = [Self.name("2", "Bacteria"), Self.name("6656", "Arthropoda"), Self.name("50557", "Insecta"),
                     Self.name("7000001", "Bacteria"), Self.name("7000002", "Bacteria sanctus")]
        try writeTSV(source, "nodes.dmp", TaxdumpFixture.nodes + nodes)
        try writeTSV(source, "names.dmp", TaxdumpFixture.names + names)
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        harness = try ServiceHarness(self, bundledSource: source, options: options)
        await harness.waitForTreeLoaded()
    }

    private func lookUp(_ names: [String], within: String = "") async throws -> [Stol_V1_NameLookupResult] {
        let response = await harness.send(.nameLookup(.with { $0.names = names; $0.within = within }))
        guard case .nameLookup(let answer) = response.result else { throw TestSupportError("answered \(response)") }
        return answer.results
    }

    func testAHomonymAcrossKingdoms_isFlagged_withItsConfidenceShared() async throws {
        let bacteria = try await lookUp(["Bacteria"])[0]
        XCTAssertEqual(bacteria.ids, [2, 7000001])
        XCTAssertTrue(bacteria.severalKingdoms, "a domain and an insect genus")
        XCTAssertEqual(bacteria.kind, .exact)
        XCTAssertEqual(bacteria.confidence, 50)
        let single = try await lookUp(["Bacteria sanctus", "bacteria sanctus"])
        XCTAssertEqual(single.map(\.confidence), [100, 90])
        XCTAssertEqual(single.map(\.kind), [.exact, .capitalised])
        XCTAssertFalse(single[0].severalKingdoms)
    }

    func testWithin_keepsTheTaxaUnderTheHint_andListsTheOthers() async throws {
        let insect = try await lookUp(["Bacteria"], within: "Insecta")[0]
        XCTAssertEqual(insect.ids, [7000001])
        XCTAssertEqual(insect.outsideIds, [2])
        XCTAssertEqual(insect.confidence, 100)
        XCTAssertFalse(insect.severalKingdoms)
        let byID = try await lookUp(["Bacteria"], within: "2759")[0]
        XCTAssertEqual(byID.ids, [7000001], "a hint by id: Eukaryota holds the insect, not the domain")
        let both = try await lookUp(["Bacteria"], within: "131567")[0]
        XCTAssertEqual(both.ids, [2, 7000001], "cellular organisms hold both")
        XCTAssertTrue(both.severalKingdoms)
        let nowhere = try await lookUp(["Bacteria sanctus"], within: "2")[0]
        XCTAssertEqual(nowhere.error.code, .notFound)
        XCTAssertTrue(nowhere.error.message.contains("1 elsewhere"), nowhere.error.message)
        XCTAssertEqual(nowhere.outsideIds, [7000002])
    }

    func testAHintThatNamesNoSingleTaxon_isRefused() async throws {
        let response = await harness.send(.nameLookup(.with { $0.names = ["Insecta"]; $0.within = "Bacteria" }))
        XCTAssertEqual(response.error.code, .invalidRequest, "an ambiguous hint: \(response)")
        let unknown = await harness.send(.nameLookup(.with { $0.names = ["Insecta"]; $0.within = "Nowhere at all" }))
        XCTAssertEqual(unknown.error.code, .notFound)
    }
}
