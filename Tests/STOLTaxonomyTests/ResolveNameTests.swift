import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// What a person typed to name one taxon (`resolve_name`, what `fav add NAME` needs):
/// digits as an id, an exact scientific or common name, all its words, the last as a
/// prefix; several taxa ambiguous and listed, never picked; suggestions when none
/// carries it; typed refusals; over ``DomainRulesFixture`` with a second genus
/// Panthera and a dozen taxa sharing a name.
final class ResolveNameTests: XCTestCase {
    static let extraNodes: [String] = [dumpRow("999999", "9681", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", "")]
        + (0..<12).map { dumpRow(String(990100 + $0), "9681", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", "") }
        + oakNodes
    /// A genus named "oaks" in English and two kinds of oak under it.
    static let oakNodes: [String] = [("880001", "9681", "genus"), ("880002", "880001", "species"), ("880003", "880001", "species")]
        .map { id, parent, rank in dumpRow(id, parent, rank, "", "2", "1", "1", "1", "2", "1", "0", "0", "") }
    static let oakNames: [String] = [("880001", "Quercusia", "scientific name"), ("880001", "oaks", "genbank common name"),
                                     ("880002", "Quercusia rubra", "scientific name"), ("880002", "red oak", "genbank common name"),
                                     ("880003", "Quercusia alba", "scientific name"), ("880003", "white oak", "genbank common name")]
        .map { id, name, kind in dumpRow(id, name, "", kind) }
    static let extraNames: [String] = [dumpRow("999999", "Panthera", "", "scientific name")]
        + (0..<12).map { dumpRow(String(990100 + $0), "Felinae group \($0)", "", "scientific name") }
        + (0..<12).map { dumpRow(String(990100 + $0), "shared cat", "", "common name") }
        + oakNames

    private func harness() async throws -> ServiceHarness {
        try await DomainRulesFixture.harness(self, extraNodes: Self.extraNodes, extraNames: Self.extraNames)
    }

    private func resolve(_ harness: ServiceHarness, _ text: String, rank: Stol_V1_Rank = .unspecified,
                         language: String = "") async -> Stol_V1_TaxonomyResponse {
        await harness.send(.resolveName(.with { $0.text = text; $0.rank = rank; $0.language = language }))
    }

    private func resolved(_ harness: ServiceHarness, _ text: String, rank: Stol_V1_Rank = .unspecified) async throws -> Stol_V1_ResolveNameResponse {
        let response = await resolve(harness, text, rank: rank)
        guard case .resolveName(let answer)? = response.result else { throw TestSupportError("expected a resolution, got \(response)") }
        return answer
    }

    func testAnExactNameOrAllItsWords_namesOneTaxon_scientificCommonOrSynonym() async throws {
        let harness = try await harness()
        for (text, id) in [("lion", Int64(9689)), ("Panthera leo", 9689), ("  panthera   LEO ", 9689), ("cat", 9685),
                           ("Felis domesticus", 9685), ("Asiatic lion", 9695), ("Escherichia coli K-12", 83333),
                           ("sars cov 2", 2697049), ("Escherichia coli O157", 83334), ("panthera tig", 9694)] {
            let answer = try await resolved(harness, text)
            XCTAssertEqual(answer.resolution, .one, text)
            XCTAssertEqual(answer.taxonID, id, text)
            XCTAssertEqual(answer.taxon.id, id, text)
            XCTAssertTrue(answer.candidates.isEmpty, text)
        }
        let lion = try await resolved(harness, "lion")
        XCTAssertEqual(lion.taxon.scientificName, "Panthera leo")
        XCTAssertEqual(lion.taxon.commonName, "lion")
    }

    func testDigits_areTheIdAsTyped_withTheTaxonWhenTheDatabaseHasIt() async throws {
        let harness = try await harness()
        let lion = try await resolved(harness, " 9689 ")
        XCTAssertEqual(lion.resolution, .one)
        XCTAssertEqual(lion.taxonID, 9689)
        XCTAssertEqual(lion.taxon.scientificName, "Panthera leo")
        let elsewhere = try await resolved(harness, "424242")
        XCTAssertEqual(elsewhere.resolution, .one)
        XCTAssertEqual(elsewhere.taxonID, 424242)
        XCTAssertFalse(elsewhere.hasTaxon, "a favourite may name a taxon of another database")
    }

    func testSeveralTaxa_areAmbiguous_listed_neverPicked() async throws {
        let harness = try await harness()
        let genera = try await resolved(harness, "Panthera")
        XCTAssertEqual(genera.resolution, .ambiguous)
        XCTAssertEqual(Set(genera.candidates.map(\.id)), [9688, 999999])
        XCTAssertEqual(genera.totalCandidates, 2)
        XCTAssertEqual(genera.taxonID, 0)
        let words = try await resolved(harness, "leo panthera")
        XCTAssertEqual(words.resolution, .ambiguous, "both the lion and the Asiatic lion have both words")
        XCTAssertEqual(Set(words.candidates.map(\.id)), [9689, 9695])
        let many = try await resolved(harness, "shared cat")
        XCTAssertEqual(many.resolution, .ambiguous)
        XCTAssertEqual(many.candidates.count, 10, "at most 10 listed")
        XCTAssertEqual(many.totalCandidates, 12, "and how many there were")
    }

    /// Issue 34: `fav add oak` listed the kinds of oak but not the oaks themselves, the genus
    /// whose English name is the plural; it is a candidate now, never picked on its own.
    func testAnEnglishNameInThePlural_namesItsGroup_amongTheCandidates() async throws {
        let harness = try await harness()
        let answer = try await resolved(harness, "oak")
        XCTAssertEqual(answer.resolution, .ambiguous, "\(answer)")
        XCTAssertEqual(Set(answer.candidates.map(\.id)), [880001, 880002, 880003], "\(answer.candidates.map(\.scientificName))")
        let genus = try await resolved(harness, "oaks")
        XCTAssertEqual([genus.resolution == .one ? 1 : 0, Int(genus.taxonID)], [1, 880001], "the plural itself is exact")
    }

    func testAMainRank_narrowsTheName() async throws {
        let harness = try await harness()
        let family = try await resolved(harness, "Felidae", rank: .family)
        XCTAssertEqual(family.resolution, .one)
        XCTAssertEqual(family.taxonID, 9681)
        let genus = try await resolved(harness, "Felidae", rank: .genus)
        XCTAssertNotEqual(genus.resolution, .one, "no genus is named Felidae")
    }

    func testANameNoTaxonCarries_isNotFound_withApproximateSuggestions() async throws {
        let harness = try await harness()
        let typo = try await resolved(harness, "Panthera tigrus")
        XCTAssertEqual(typo.resolution, .notFound, "an approximate match is never taken on its own")
        XCTAssertTrue(typo.candidates.map(\.id).contains(9694), "\(typo.candidates.map(\.id))")
        XCTAssertEqual(typo.totalCandidates, UInt32(typo.candidates.count))
        XCTAssertEqual(typo.taxonID, 0)
        let nothing = try await resolved(harness, "zzqqxxvv")
        XCTAssertEqual(nothing.resolution, .notFound)
        XCTAssertTrue(nothing.candidates.isEmpty)
    }

    func testEmptyTextNoLettersHugeDigitsAndUnknownLanguages_areRefused_typed() async throws {
        let harness = try await harness()
        for (text, language, message) in [("", "", "name a taxon by id"), ("   ", "", "name a taxon by id"),
                                          ("!!!", "", "no letters or digits"),
                                          ("99999999999999999999", "", "out of range"),
                                          (String(repeating: "a", count: 513), "", "longer than 512 bytes"),
                                          ("lion", "xx", "no names in language")] {
            let response = await resolve(harness, text, language: language)
            guard case .error(let error)? = response.result else { XCTFail("\(text): answered"); continue }
            XCTAssertEqual(error.code, .invalidRequest, text)
            XCTAssertTrue(error.message.contains(message), error.message)
        }
    }
}
