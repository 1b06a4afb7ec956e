import STOLPipeline
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Search puts first what a person means (docs/design/queries-and-algorithms.md
/// §7): match quality first — a whole name of any class exactly as typed, then an
/// abbreviated binomial, then a common name of a kind of the thing typed or its
/// English plural, then any name with every word — and prominence within each,
/// except where one taxon is named after the other (a species before the group
/// above it that carries its name; in autocomplete a name before its own
/// extensions and a genus before the higher taxa named from it); the limit
/// applies to the ranked hits. Each test pits the taxon meant against the names
/// that beat it before (a frequent word, a name starting with the word, a lower
/// id, a more prominent group).
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
        node("6656", "33208", "phylum"), node("7459", "70987", "genus"), node("7460", "7459", "species"),
        node("109461", "6656", "species"),
        // E. coli and its strains.
        node("2", "131567", "superkingdom"), node("561", "2", "genus"), node("562", "561", "species"),
        node("83333", "562", "strain"), node("511145", "83333", "no rank"),
        // Cattle: NCBI names the genus after its best-known species, which the
        // overlay names too; two other named species make the genus the more prominent.
        node("9895", "40674", "family"), node("9903", "9895", "genus"), node("9913", "9903", "species"),
        node("9915", "9903", "species"), node("30521", "9903", "species"),
        // A species and its nominate subspecies, both "agujon needlefish" in NCBI.
        node("129071", "7711", "genus"), node("129073", "129071", "species"), node("129074", "129073", "subspecies"),
        // NCBI's "Mus sp.": unidentified mice, called "mice" like the genus.
        node("10095", "10088", "species"),
        // Oaks: the genus is "oaks" (an overlay name), its species are kinds of oak.
        node("3503", "33090", "family"), node("3511", "3503", "genus"), node("38942", "3511", "species"),
        node("3513", "3511", "species"),
        // Honey bees: the subfamily is "honey bees", the species "honey bee".
        node("70987", "6656", "subfamily"),
        // Fruit flies: the family and the tribes named after Drosophila hold it.
        node("7214", "6656", "family"), node("43845", "7214", "subfamily"), node("46877", "43845", "tribe"),
        node("7215", "46877", "genus"), node("7227", "7215", "species"), node("7220", "7215", "species"),
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
        name("9895", "Bovidae"), name("9903", "Bos"), name("9903", "cattle", "genbank common name"),
        name("9913", "Bos taurus"), name("9913", "domestic cattle", "genbank common name"),
        name("9915", "Bos indicus"), name("9915", "zebu cattle", "genbank common name"),
        name("30521", "Bos grunniens"), name("30521", "domestic yak", "genbank common name"),
        name("129071", "Tylosurus"), name("129073", "Tylosurus acus"), name("129073", "agujon needlefish", "genbank common name"),
        name("129074", "Tylosurus acus acus"), name("129074", "agujon needlefish", "genbank common name"),
        name("10088", "mice", "genbank common name"), name("10095", "Mus sp."), name("10095", "mice", "genbank common name"),
        name("3503", "Fagaceae"), name("3511", "Quercus"), name("38942", "Quercus robur"),
        name("38942", "pedunculate oak", "genbank common name"), name("3513", "Quercus alba"),
        name("3513", "white oak", "genbank common name"),
        name("70987", "Apinae"), name("70987", "honey bees", "genbank common name"),
        name("7214", "Drosophilidae"), name("7214", "pomace flies", "genbank common name"), name("43845", "Drosophilinae"),
        name("46877", "Drosophilini"), name("7215", "Drosophila"), name("7215", "fruit flies", "genbank common name"),
        name("7227", "Drosophila melanogaster"), name("7220", "Drosophila simulans"),
    ]

    /// The curated overlay's part in these rankings: "cattle" and "oaks" as names
    /// (NCBI has neither on these taxa), and E. coli curated (a trait), which makes
    /// it more prominent than its genus, as in the real databases.
    static func writeOverlay(to directory: String) throws {
        try writeTSV(directory, "NameUsage.tsv", [
            "ID\tparentID\tstatus\trank\tscientificName\tauthorship",
            "562\t561\taccepted\tspecies\tEscherichia coli\t",
            "3511\t3503\taccepted\tgenus\tQuercus\t",
            "9913\t9903\taccepted\tspecies\tBos taurus\tLinnaeus, 1758",
        ])
        try writeTSV(directory, "VernacularName.tsv", [
            "taxonID\tname\tlanguage\tpreferred", "3511\toaks\teng\ttrue", "9913\tcattle\teng\ttrue",
            // A Spanish name, so that the database has names in Spanish at all.
            "38942\troble común\tspa\ttrue",
        ])
        try writeTSV(directory, "TaxonProperty.tsv", [
            "taxonID\tproperty\tvalue\tunit\treference", "562\thabitat\thost-associated\t\t",
        ])
    }

    private var harness: ServiceHarness!

    override func setUp() async throws {
        let source = try makeTemporaryDirectory(self), overlay = try makeTemporaryDirectory(self)
        try TaxdumpFixture.write(to: source)
        try writeTSV(source, "nodes.dmp", TaxdumpFixture.nodes + Self.nodes)
        try writeTSV(source, "names.dmp", TaxdumpFixture.names + Self.names)
        try Self.writeOverlay(to: overlay)
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        options.overlayDirectory = overlay
        harness = try ServiceHarness(self, bundledSource: source, options: options)
        await harness.waitForTreeLoaded()
    }

    private func first(_ text: String, prefix: Bool = false, limit: UInt32 = 0, language: String = "") async throws -> [Int64] {
        let response = await harness.search(text, prefix: prefix, limit: limit, language: language)
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

    func testASpecies_comesBeforeTheGroupAboveItThatCarriesItsName() async throws {
        let cattle = try await first("cattle")
        XCTAssertEqual(Array(cattle.prefix(2)), [9913, 9903], "the cow, then the genus Bos named after it: \(cattle)")
        let needlefish = try await first("agujon needlefish")
        XCTAssertEqual(needlefish.first, 129073, "the species before its nominate subspecies, as before: \(needlefish)")
        let mice = try await first("mice")
        XCTAssertEqual(mice.first, 10088, "Mus sp. is a bucket of unidentified mice, no species anyone names: \(mice)")
    }

    func testAPluralCommonName_namesTheGroupOfTheThingsTyped_afterAnExactName() async throws {
        let oak = try await first("oak")
        XCTAssertEqual(oak.first, 3511, "the oaks (Quercus), not one kind of oak: \(oak)")
        XCTAssertTrue(oak.contains(38942) && oak.contains(3513), "the kinds still follow: \(oak)")
        let bee = try await first("honey bee")
        XCTAssertEqual(Array(bee.prefix(2)), [7460, 70987], "a name exactly as typed before the group in the plural: \(bee)")
        let spanish = try await first("oak", limit: 20, language: "es")
        XCTAssertNotEqual(spanish.first, 3511, "English plurals for English names only: \(spanish)")
    }

    func testAutocomplete_aNameComesBeforeTheNamesUnderItThatExtendIt() async throws {
        let escher = try await first("escher", prefix: true)
        XCTAssertEqual(Array(escher.prefix(2)), [561, 562],
                       "Escherichia is what is being typed; E. coli (more prominent, curated) goes on: \(escher)")
        let coli = try await first("escherichia co", prefix: true)
        XCTAssertEqual(coli.first, 562, "the species before its strains: \(coli)")
    }

    func testAutocomplete_aGenusComesBeforeTheHigherTaxaNamedAfterIt() async throws {
        let drosoph = try await first("drosoph", prefix: true)
        XCTAssertEqual(drosoph.first, 7215, "Drosophila, not Drosophilidae (more prominent, named from it): \(drosoph)")
        XCTAssertTrue(Set(drosoph.prefix(6)).isSuperset(of: [7214, 43845, 46877, 7227]), "the others follow: \(drosoph)")
        let felid = try await first("felid", prefix: true)
        XCTAssertEqual(felid.first, 9681, "no genus is being typed: the family: \(felid)")
    }

    func testTypeNames_areTheGenusStemWithARankEnding() {
        XCTAssertTrue(SearchEngine.isNamed("Drosophilidae", after: "Drosophila"))
        XCTAssertTrue(SearchEngine.isNamed("Drosophilini", after: "Drosophila"))
        XCTAssertTrue(SearchEngine.isNamed("Felidae", after: "Felis"))
        XCTAssertTrue(SearchEngine.isNamed("Hominidae", after: "Homo"))
        XCTAssertTrue(SearchEngine.isNamed("Rosaceae", after: "Rosa"))
        XCTAssertFalse(SearchEngine.isNamed("Arabideae", after: "Arabidopsis"), "named after Arabis")
        XCTAssertFalse(SearchEngine.isNamed("Drosophila", after: "Drosophila"))
        XCTAssertFalse(SearchEngine.isNamed("Pantherophis", after: "Panthera"), "another genus")
    }

    func testTheLimit_appliesAfterTheRanking() async throws {
        for (text, prefix) in [("panth", true), ("mouse", false), ("canis", false), ("e", true), ("drosoph", true),
                               ("escher", true), ("cattle", false), ("oak", false)] {
            let eight = try await first(text, prefix: prefix, limit: 8)
            let three = try await first(text, prefix: prefix, limit: 3)
            XCTAssertEqual(three, Array(eight.prefix(3)), "\(text): --limit 3 is not the first three of --limit 8")
        }
    }
}
