import STOLModel
import STOLPipeline
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The names of a taxon that are neither its common names nor its synonyms
/// (NCBI acronyms, misspellings, authorities, included groups) find it: search
/// matches them as synonyms, and an exact one resolves in lineage batches and
/// name lookups. The detail page does not list them as common names.
final class OtherNamesTests: XCTestCase {
    /// HIV-1 under Viruses, known by its GenBank acronym.
    static let virusNodes = [
        dumpRow("10239", "1", "superkingdom", "", "9", "0", "1", "0", "0", "0", "0", "0", ""),
        dumpRow("11676", "10239", "species", "", "9", "1", "1", "1", "0", "1", "1", "0", ""),
    ]
    static let virusNames = [
        dumpRow("10239", "Viruses", "", "scientific name"),
        dumpRow("11676", "Human immunodeficiency virus 1", "", "scientific name"),
        dumpRow("11676", "HIV-1", "", "genbank acronym"),
    ]

    private func harness() async throws -> ServiceHarness {
        try await ncbiFixtureHarness(self, extraNodes: Self.virusNodes, extraNames: Self.virusNames)
    }

    func testSearch_anAcronym_findsItsTaxonFirst_matchedAsASynonym() async throws {
        let harness = try await harness()
        let found = try hits(await harness.search("HIV-1", fuzzy: false))
        let first = try XCTUnwrap(found.first, "no hit for the acronym")
        XCTAssertEqual(first.taxon.id, 11676)
        XCTAssertEqual(first.matchedName, "HIV-1")
        XCTAssertEqual(first.matchType, .synonym, "an acronym is not a common name")
        XCTAssertFalse(first.fuzzy)
    }

    func testSearch_aRecordedMisspelling_matchesExactly() async throws {
        let harness = try await harness()
        let found = try hits(await harness.search("Pantera leo", fuzzy: false))
        XCTAssertEqual(found.first?.taxon.id, 9689, "NCBI records 'Pantera leo' as a misspelling of the lion")
        XCTAssertEqual(found.first?.matchType, .synonym)
    }

    /// With a status filter, search matches the names of the taxa with a status in
    /// memory (``MemoryIndexes``): there too every name `fts_taxa` holds is
    /// searchable, and a misspelling matches as a synonym.
    func testSearch_withAStatusFilter_matchesARecordedMisspellingInMemory() async throws {
        let source = try makeTemporaryDirectory(self)
        try TaxdumpFixture.write(to: source)
        let overlay = try FelidaeFixture.write(to: try makeTemporaryDirectory(self))  // the lion is VU
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        options.overlayDirectory = overlay
        let harness = try ServiceHarness(self, bundledSource: source, options: options)
        await harness.waitForTreeLoaded()
        let found = try hits(await harness.search("Pantera leo", conservation: ["VU"], fuzzy: false))
        XCTAssertEqual(found.first?.taxon.id, 9689)
        XCTAssertEqual(found.first?.matchedName, "Pantera leo")
        XCTAssertEqual(found.first?.matchType, .synonym)
    }

    func testLineageBatchAndNameLookup_resolveAnExactAcronym() async throws {
        let harness = try await harness()
        guard case .lineageBatch(let batch)? = await harness.lineageBatch(["HIV-1", "hiv-1"]).result else {
            return XCTFail("no lineage batch")
        }
        XCTAssertEqual(batch.results.map(\.taxon.id), [11676, 11676])
        XCTAssertEqual(batch.results.first?.lineage.map(\.id), [10239])
        let lookup = await harness.send(.nameLookup(.with { $0.names = ["HIV-1"] }))
        guard case .nameLookup(let names)? = lookup.result else { return XCTFail("\(lookup)") }
        XCTAssertEqual(names.results.map(\.ids), [[11676]])
    }

    func testDetail_listsOnlyCommonNamesByLanguage_notAcronymsAuthoritiesOrMisspellings() async throws {
        let harness = try await harness()
        guard case .detail(let detail)? = await harness.detail(9689).result else { return XCTFail("no detail") }
        let listed = detail.names.flatMap(\.names)
        XCTAssertEqual(Set(listed.map(\.name)), ["lion", "African lion"])
        XCTAssertEqual(detail.names.map(\.language), ["en"])
        XCTAssertEqual(Set(detail.synonyms), ["Felis leo", "Leo leo"])
    }
}
