import Foundation
import GRDB
import STOLPipeline
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Known answers of the prominence signal: among equally good matches, search
/// puts first the taxon most users mean (the one with more of the tree and more
/// named taxa under it, or curated), never before a better match.
final class ProminenceTests: XCTestCase {
    /// Two genera whose names start like Panthera's, with unnamed species; flies, two of them called "fruit fly".
    static let extraUsages = [
        row("6340", "33208", "accepted", "phylum", "Annelida", ""),
        row("900001", "6340", "accepted", "genus", "Panthalis", ""),
        row("900002", "900001", "accepted", "species", "Panthalis oerstedi", ""),
        row("6656", "33208", "accepted", "phylum", "Arthropoda", ""),
        row("50557", "6656", "accepted", "class", "Insecta", ""),
        row("7088", "50557", "accepted", "order", "Lepidoptera", ""),
        row("7100", "7088", "accepted", "family", "Noctuidae", ""),
        row("900003", "7100", "accepted", "genus", "Panthea", ""),
        row("900004", "900003", "accepted", "species", "Panthea coenobita", ""),
        row("900005", "900003", "accepted", "species", "Panthea acronyctoides", ""),
        row("7147", "50557", "accepted", "order", "Diptera", ""),
        row("7214", "7147", "accepted", "family", "Drosophilidae", ""),
        row("7215", "7214", "accepted", "genus", "Drosophila", ""),
        row("7227", "7215", "accepted", "species", "Drosophila melanogaster", "Meigen, 1830"),
        row("30030", "7215", "accepted", "species", "Drosophila gunungcola", ""),
    ]

    private func harness() async throws -> ServiceHarness {
        let source = try makeTemporaryDirectory(self)
        try FelidaeFixture.write(to: source, extraUsages: Self.extraUsages)
        try writeTSV(source, "VernacularName.tsv", FelidaeFixture.vernacularName + [
            // As in NCBI: "fruit fly" is D. gunungcola's preferred name and only another name of D. melanogaster.
            row("7227", "common fruit fly", "eng", "true"), row("7227", "fruit fly", "eng", ""),
            row("30030", "fruit fly", "eng", "true"),
        ])
        try writeTSV(source, "TaxonProperty.tsv", FelidaeFixture.taxonProperty + [row("7227", "genome_size", "143.7", "Mb", "")])
        let harness = try ServiceHarness(self, bundledSource: source)
        await harness.waitForTreeLoaded()
        return harness
    }

    private func ids(_ response: Stol_V1_TaxonomyResponse) throws -> [Int64] {
        guard case .search(let search) = response.result else { throw TestSupportError("expected a search answer, got \(response)") }
        return search.hits.map(\.taxon.id)
    }

    func testPrefix_putsThePantherasGenusBeforeGeneraThatComeFirstInNameOrder() async throws {
        let harness = try await harness()
        let found = try await ids(harness.search("panth", prefix: true, fuzzy: false))
        XCTAssertEqual(found.first, 9688, "Panthera (lion, tiger, leopard, jaguar under it) must come first: \(found)")
        // Every hit matches as well (a word starting with "panth"): by prominence, the
        // curated lion (6) and tiger before the subfamily Pantherinae (named, curated,
        // half weight outside the eight ranks: 5.9), then Panthea (2 species) before
        // Panthalis (1), which come first in name order.
        XCTAssertEqual(Array(found.prefix(4)), [9688, 9689, 9694, 338153])
        let panthea = try XCTUnwrap(found.firstIndex(of: 900003)), panthalis = try XCTUnwrap(found.firstIndex(of: 900001))
        XCTAssertLessThan(panthea, panthalis)
        // One and two characters come from the precomputed short-prefix lists: the same order.
        let search1 = await harness.search("pa", prefix: true, fuzzy: false)
        XCTAssertEqual(try ids(search1).prefix(4), [9688, 9689, 9694, 338153])
        let search2 = await harness.search("p", prefix: true, fuzzy: false)
        XCTAssertEqual(try ids(search2).first, 9688)
    }

    func testEquallyGoodCommonNames_putTheCuratedFlyFirst() async throws {
        let harness = try await harness()
        let search3 = await harness.search("fruit fly")
        XCTAssertEqual(try ids(search3).prefix(2), [7227, 30030],
                       "Drosophila melanogaster (curated) before D. gunungcola, which name order and the preferred name put first")
    }

    func testProminence_neverBeatsABetterMatch() async throws {
        let harness = try await harness()
        // "Panthera leo" is an exact scientific name: it wins over the far more prominent genus.
        let search4 = await harness.search("panthera leo")
        XCTAssertEqual(try ids(search4).first, 9689)
    }

    func testTheSignal_isTheDocumentedFormula() async throws {
        let harness = try await harness()
        let queue = try DatabaseQueue(path: harness.bundledPath)
        defer { try? queue.close() }
        let scores = try await queue.read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT taxon_id, score FROM prominence")
                .map { ($0[0] as Int64, $0[1] as Double) })
        }
        // Jaguar: no descendants, itself named, not curated: 2·log2(2) = 2.
        XCTAssertEqual(scores[9690] ?? -1, 2, accuracy: 0.001)
        // Lion: named and curated (VU, traits): 2 + 4.
        XCTAssertEqual(scores[9689] ?? -1, 6, accuracy: 0.001)
        // Panthera: 4 species, 4 of them named: log2(5) + 2·log2(5).
        XCTAssertEqual(scores[9688] ?? -1, 3 * log2(5.0), accuracy: 0.001)
        XCTAssertNil(scores[900002], "a species without a name, trait or status has no row")
        // Pantherinae, outside the eight ranks: its whole-tree subtree (Panthera and its 4
        // species, the 4 named, plus its own name "pantherines") and curated (a trait), at half weight.
        XCTAssertEqual(scores[338153] ?? -1, 0.5 * (log2(6.0) + 2 * log2(6.0) + 4), accuracy: 0.001)
    }
}
