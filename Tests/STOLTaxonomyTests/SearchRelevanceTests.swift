import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Search puts first what a person means (docs/design/queries-and-algorithms.md
/// §7): match quality first — a whole name of any class exactly as typed, then an
/// abbreviated binomial, then a common name of a kind of the thing typed, then any
/// name with every word — and prominence within each; the limit applies to the
/// ranked hits. Each test pits the taxon meant against the names that beat it
/// before (a frequent word, a name starting with the word, a lower id).
final class SearchRelevanceTests: XCTestCase {
    private static func node(_ id: String, _ parent: String, _ rank: String) -> String {
        dumpRow(id, parent, rank, "", "2", "1", "1", "1", "2", "1", "0", "0", "")
    }

    private static func name(_ id: String, _ text: String, _ nameClass: String = "scientific name") -> String {
        dumpRow(id, text, "", nameClass)
    }

    static let nodes = [
        // Dogs and wolves, and names that contain theirs.
        node("9608", "33554", "family"), node("9611", "9608", "genus"), node("9612", "9611", "species"),
        node("9615", "9612", "subspecies"), node("10239", "1", "superkingdom"), node("1239565", "10239", "species"),
        node("2847170", "10239", "species"), node("1000001", "9611", "species"),
        // Mice, mouse lemurs and a mouse virus.
        node("9989", "40674", "order"), node("10066", "9989", "family"), node("10088", "10066", "genus"),
        node("10090", "10088", "species"), node("9443", "40674", "order"), node("30615", "9443", "family"),
        node("1000002", "10239", "species"),
        // Two species called "elegans" with a C, the nematode with a strain below it.
        node("6231", "33208", "phylum"), node("6237", "6231", "genus"), node("6239", "6237", "species"),
        node("1000003", "6239", "strain"), node("33090", "2759", "kingdom"), node("33112", "33090", "genus"),
        node("1000004", "33112", "species"),
        // Bees and a bee mite.
        node("6656", "33208", "phylum"), node("7459", "6656", "genus"), node("7460", "7459", "species"),
        node("109461", "6656", "species"),
        // E. coli and its strains.
        node("2", "131567", "superkingdom"), node("561", "2", "genus"), node("562", "561", "species"),
        node("83333", "562", "strain"), node("511145", "83333", "no rank"),
    ]

    static let names = [
        name("9608", "Canidae"), name("9611", "Canis"), name("9612", "Canis lupus"), name("9612", "gray wolf", "genbank common name"),
        name("9615", "Canis lupus familiaris"), name("9615", "dog", "genbank common name"),
        name("10239", "Viruses"), name("1239565", "Dog astrovirus"), name("2847170", "Wolbachia endosymbiont of Canis lupus familiaris"),
        name("1000001", "Canis lupus familiaris x Lycalopex gymnocercus"),
        name("9989", "Rodentia"), name("10066", "Muridae"), name("10088", "Mus"), name("10090", "Mus musculus"),
        name("10090", "house mouse", "genbank common name"), name("9443", "Primates"), name("30615", "Cheirogaleidae"),
        name("30615", "dwarf and mouse lemurs", "genbank common name"), name("1000002", "Mouse coronavirus"),
        name("6231", "Nematoda"), name("6237", "Caenorhabditis"), name("6239", "Caenorhabditis elegans"),
        name("1000003", "Caenorhabditis elegans Bristol N2"), name("33090", "Viridiplantae"), name("33112", "Cestrum"),
        name("1000004", "Cestrum elegans"),
        name("6656", "Arthropoda"), name("7459", "Apis"), name("7460", "Apis mellifera"),
        name("7460", "honey bee", "genbank common name"), name("109461", "Varroa destructor"),
        name("109461", "honeybee mite", "genbank common name"),
        name("2", "Bacteria"), name("561", "Escherichia"), name("562", "Escherichia coli"),
        name("83333", "Escherichia coli K-12"), name("511145", "Escherichia coli str. K-12 substr. MG1655"),
    ]

    private var harness: ServiceHarness!

    override func setUp() async throws {
        harness = try await ncbiFixtureHarness(self, extraNodes: Self.nodes, extraNames: Self.names)
    }

    private func first(_ text: String, prefix: Bool = false, limit: UInt32 = 0) async throws -> [Int64] {
        let response = await harness.search(text, prefix: prefix, limit: limit)
        guard case .search(let search)? = response.result else { throw TestSupportError("no search answer: \(response)") }
        return search.hits.map(\.taxon.id)
    }

    func testAnExactName_ofAnyClass_beatsNamesThatOnlyContainIt() async throws {
        let dog = try await first("dog")
        XCTAssertEqual(dog.first, 9615, "the dog, not Dog astrovirus: \(dog)")
        let binomial = try await first("Canis lupus familiaris")
        XCTAssertEqual(binomial.first, 9615, "not the hybrid or the Wolbachia named after it: \(binomial)")
        let lowercase = try await first("canis lupus familiaris")
        XCTAssertEqual(lowercase.first, 9615, "typed in lower case: \(lowercase)")
    }

    func testACommonNameEndingWithTheWord_isAKindOfIt_beforeNamesWhereTheWordDescribesSomethingElse() async throws {
        let mouse = try await first("mouse")
        XCTAssertEqual(mouse.first, 10090, "house mouse, not mouse lemurs or Mouse coronavirus: \(mouse)")
        XCTAssertTrue(mouse.contains(30615) && mouse.contains(1000002), "the others are still found: \(mouse)")
    }

    func testAnAbbreviatedBinomial_resolvesToTheMostProminentTaxonItAbbreviates() async throws {
        for text in ["C. elegans", "c elegans", "C.elegans"] {
            let found = try await first(text)
            XCTAssertEqual(found.first, 6239, "\(text): the nematode (a strain below it), not Cestrum elegans: \(found)")
        }
        let coli = try await first("E. coli")
        XCTAssertEqual(coli.first, 562)
        let oneWord = try await first("ecoli")
        XCTAssertEqual(oneWord.first, 562, "a binomial written as one word")
        let strain = try await first("E. coli MG1655")
        XCTAssertEqual(strain.first, 511145, "an abbreviated binomial with a strain: \(strain)")
    }

    func testANameWrittenWithoutItsSpace_isTheSameName() async throws {
        let honeybee = try await first("honeybee")
        XCTAssertEqual(honeybee.first, 7460, "honey bee, not honeybee mite: \(honeybee)")
    }

    func testTheLimit_appliesAfterTheRanking() async throws {
        for (text, prefix) in [("panth", true), ("mouse", false), ("canis", false), ("e", true)] {
            let eight = try await first(text, prefix: prefix, limit: 8)
            let three = try await first(text, prefix: prefix, limit: 3)
            XCTAssertEqual(three, Array(eight.prefix(3)), "\(text): --limit 3 is not the first three of --limit 8")
        }
    }
}
