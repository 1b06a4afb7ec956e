import Foundation
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// A GBIF Backbone Taxonomy export in its exact layout: `Taxon.tsv` with the
/// backbone's 23 columns in the backbone's order, unquoted fields that contain
/// `"`, every synonym status, a doubtful name, a row without canonicalName;
/// `VernacularName.tsv` with empty languages and duplicate names.
enum GBIFFixture {
    static let taxonHeader = row(
        "taxonID", "datasetID", "parentNameUsageID", "acceptedNameUsageID", "originalNameUsageID", "scientificName",
        "scientificNameAuthorship", "canonicalName", "genericName", "specificEpithet", "infraspecificEpithet",
        "taxonRank", "nameAccordingTo", "namePublishedIn", "taxonomicStatus", "nomenclaturalStatus", "taxonRemarks",
        "kingdom", "phylum", "class", "order", "family", "genus")

    /// One `Taxon.tsv` row from the columns the reader uses; the others are filled like the backbone's.
    static func taxon(_ id: String, parent: String, accepted: String = "", name: String, author: String,
                      canonical: String, rank: String, status: String, publishedIn: String = "") -> String {
        let scientificName = author.isEmpty ? name : name + " " + author
        return row(id, "7ddf754f-d193-4cc9-b351-99906754a03b", parent, accepted, "", scientificName, author,
                   canonical, canonical.split(separator: " ").first.map(String.init) ?? "", "", "", rank, "",
                   publishedIn, status, "", "", "Animalia", "Chordata", "Mammalia", "Carnivora", "Felidae", "")
    }

    static let taxa = [
        taxonHeader,
        taxon("1", parent: "", name: "Animalia", author: "", canonical: "Animalia", rank: "kingdom", status: "accepted"),
        taxon("44", parent: "1", name: "Chordata", author: "", canonical: "Chordata", rank: "phylum", status: "accepted"),
        taxon("359", parent: "44", name: "Mammalia", author: "", canonical: "Mammalia", rank: "class", status: "accepted"),
        taxon("732", parent: "359", name: "Carnivora", author: "", canonical: "Carnivora", rank: "order", status: "accepted"),
        // No canonicalName: the name is scientificName without its authorship.
        taxon("9703", parent: "732", name: "Felidae", author: "Fischer de Waldheim, 1817", canonical: "",
              rank: "family", status: "accepted"),
        taxon("2435194", parent: "9703", name: "Panthera", author: "Oken, 1816", canonical: "Panthera",
              rank: "genus", status: "accepted"),
        taxon("5219404", parent: "2435194", name: "Panthera leo", author: "(Linnaeus, 1758)", canonical: "Panthera leo",
              rank: "species", status: "accepted", publishedIn: "Linnaeus, C. (1758). \"Systema Naturae\" ed. 10"),
        taxon("5219416", parent: "2435194", name: "Panthera tigris", author: "(Linnaeus, 1758)",
              canonical: "Panthera tigris", rank: "species", status: "accepted"),
        taxon("8014530", parent: "2435194", name: "Panthera \"youngi\"", author: "Pei, 1934",
              canonical: "Panthera youngi", rank: "species", status: "doubtful"),
        taxon("7193927", parent: "2435194", accepted: "5219404", name: "Felis leo", author: "Linnaeus, 1758",
              canonical: "Felis leo", rank: "species", status: "homotypic synonym"),
        taxon("4970489", parent: "2435194", accepted: "5219404", name: "Leo leo", author: "(Linnaeus, 1758)",
              canonical: "Leo leo", rank: "species", status: "synonym"),
        taxon("7193928", parent: "2435194", accepted: "5219404", name: "Felis barbarus", author: "Fischer, 1817",
              canonical: "Felis barbarus", rank: "species", status: "heterotypic synonym"),
        taxon("6164603", parent: "2435194", accepted: "5219416", name: "Tigris regalis", author: "Gray, 1867",
              canonical: "Tigris regalis", rank: "species", status: "proparte synonym"),
    ]

    static let vernacular = [
        row("taxonID", "vernacularName", "source", "language", "country", "countryCode", "sex", "lifeStage"),
        row("5219404", "Lion", "Catalogue of Life", "en", "", "", "", ""),
        row("5219404", "lion", "Integrated Taxonomic Information System (ITIS)", "en", "", "", "", ""),
        row("5219404", "León", "Catalogue of Life", "es", "", "", "", ""),
        row("5219404", "Löwe", "Catalogue of Life", "de", "Germany", "DE", "", ""),
        row("5219404", "simba", "Some \"checklist\"", "", "Tanzania", "TZ", "", ""),
        row("5219416", "Tiger", "Catalogue of Life", "en", "", "", "", ""),
        row("5219416", "", "Catalogue of Life", "en", "", "", "", ""),
    ]

    @discardableResult
    static func write(to directory: String, lineEnding: String = "\n") throws -> String {
        try writeTSV(directory, "Taxon.tsv", taxa, lineEnding: lineEnding)
        try writeTSV(directory, "VernacularName.tsv", vernacular, lineEnding: lineEnding)
        try writeTSV(directory, "Distribution.tsv", [row("taxonID", "locality", "countryCode"),
                                                      row("5219404", "Africa", "")], lineEnding: lineEnding)
        return directory
    }
}

final class GBIFReaderTests: XCTestCase {
    private func readFixture(lineEnding: String = "\n") throws -> SourceTaxonomy {
        try GBIFReader().read(directory: try GBIFFixture.write(to: try makeTemporaryDirectory(self), lineEnding: lineEnding))
    }

    func testRead_acceptedAndDoubtfulUsagesAreTaxa_withCanonicalNameAndSeparateAuthorship() throws {
        let source = try readFixture()
        XCTAssertEqual(source.usages.map(\.id), [1, 44, 359, 732, 9703, 2435194, 5219404, 5219416, 8014530])
        let byID = Dictionary(uniqueKeysWithValues: source.usages.map { ($0.id, $0) })
        XCTAssertNil(byID[1]?.parentID)
        XCTAssertEqual(byID[5219404]?.parentID, 2435194)
        XCTAssertEqual(byID[5219404]?.scientificName, "Panthera leo")
        XCTAssertEqual(byID[5219404]?.authorship, "(Linnaeus, 1758)")
        XCTAssertEqual(byID[5219404]?.rank, "species")
        XCTAssertEqual(byID[5219404]?.status, .accepted)
        XCTAssertEqual(byID[8014530]?.status, .doubtful)
        XCTAssertEqual(byID[8014530]?.scientificName, "Panthera youngi")
    }

    func testRead_withoutCanonicalName_stripsTheAuthorshipFromScientificName() throws {
        let felidae = try XCTUnwrap(try readFixture().usages.first { $0.id == 9703 })
        XCTAssertEqual(felidae.scientificName, "Felidae")
        XCTAssertEqual(felidae.authorship, "Fischer de Waldheim, 1817")
    }

    func testRead_everySynonymStatusBecomesASynonymOfItsAcceptedName() throws {
        let source = try readFixture()
        XCTAssertEqual(source.synonyms.map(\.name), ["Felis leo", "Leo leo", "Felis barbarus", "Tigris regalis"])
        XCTAssertEqual(source.synonyms.map(\.acceptedID), [5219404, 5219404, 5219404, 5219416])
        XCTAssertEqual(source.synonyms.first?.authorship, "Linnaeus, 1758")
        XCTAssertFalse(source.usages.contains { $0.scientificName == "Felis leo" })
    }

    func testRead_vernacularNames_mapLanguagesAndDropDuplicatesIgnoringCase() throws {
        let source = try readFixture()
        let lion = source.vernacularNames.filter { $0.taxonID == 5219404 }
        XCTAssertEqual(lion.map(\.name), ["Lion", "León", "Löwe", "simba"])
        XCTAssertEqual(lion.map(\.language), ["en", "es", "de", "und"])
        XCTAssertEqual(source.readStatistics.duplicateRows, 1)
        XCTAssertEqual(source.vernacularNames.filter { $0.taxonID == 5219416 }.map(\.name), ["Tiger"])
    }

    func testRead_quotesAreOrdinaryCharacters() throws {
        let source = try readFixture()
        XCTAssertEqual(source.usages.count, 9, "a quote in namePublishedIn does not swallow the following rows")
        XCTAssertTrue(source.vernacularNames.contains { $0.name == "simba" })
    }

    func testRead_whenLinesEndInCRLF_readsTheSameAsLF() throws {
        let lf = try readFixture(lineEnding: "\n")
        let crlf = try readFixture(lineEnding: "\r\n")
        XCTAssertEqual(lf.usages, crlf.usages)
        XCTAssertEqual(lf.synonyms, crlf.synonyms)
        XCTAssertEqual(lf.vernacularNames, crlf.vernacularNames)
    }

    func testRead_whenATaxonIDIsNotAnInteger_throwsBadValueNamingFileAndLine() throws {
        let directory = try GBIFFixture.write(to: try makeTemporaryDirectory(self))
        var taxa = GBIFFixture.taxa
        taxa[3] = GBIFFixture.taxon("3x59", parent: "44", name: "Mammalia", author: "", canonical: "Mammalia",
                                    rank: "class", status: "accepted")
        try writeTSV(directory, "Taxon.tsv", taxa)
        XCTAssertThrowsError(try GBIFReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError,
                           .badValue(file: directory + "/Taxon.tsv", line: 4, column: "taxonID", value: "3x59"))
        }
    }

    func testRead_whenAStatusIsUnknown_throwsBadValue() throws {
        let directory = try GBIFFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "Taxon.tsv", GBIFFixture.taxa + [
            GBIFFixture.taxon("99", parent: "1", name: "Foo", author: "", canonical: "Foo", rank: "genus", status: "maybe"),
        ])
        XCTAssertThrowsError(try GBIFReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .badValue(file: directory + "/Taxon.tsv", line: GBIFFixture.taxa.count + 1,
                                                            column: "taxonomicStatus", value: "maybe"))
        }
    }

    func testRead_whenASynonymHasNoAcceptedID_throwsBadValue() throws {
        let directory = try GBIFFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "Taxon.tsv", GBIFFixture.taxa + [
            GBIFFixture.taxon("98", parent: "1", name: "Bar", author: "", canonical: "Bar", rank: "genus", status: "synonym"),
        ])
        XCTAssertThrowsError(try GBIFReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .badValue(file: directory + "/Taxon.tsv", line: GBIFFixture.taxa.count + 1,
                                                            column: "acceptedNameUsageID", value: ""))
        }
    }

    func testRead_whenAVernacularTaxonIDIsBad_throwsBadValueNamingThatFile() throws {
        let directory = try GBIFFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "VernacularName.tsv", GBIFFixture.vernacular + [row("lion", "Lion", "", "en")])
        XCTAssertThrowsError(try GBIFReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .badValue(file: directory + "/VernacularName.tsv",
                                                            line: GBIFFixture.vernacular.count + 1,
                                                            column: "taxonID", value: "lion"))
        }
    }

    func testRead_whenARequiredColumnIsMissing_throwsMissingColumn() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "Taxon.tsv", [row("taxonID", "parentNameUsageID", "scientificName", "taxonRank"),
                                              row("1", "", "Animalia", "kingdom")])
        XCTAssertThrowsError(try GBIFReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .missingColumn(file: directory + "/Taxon.tsv", column: "acceptedNameUsageID"))
        }
    }

    func testRead_whenTaxonTsvIsMissing_throwsMissingFile() throws {
        let directory = try makeTemporaryDirectory(self)
        XCTAssertThrowsError(try GBIFReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .missingFile(directory + "/Taxon.tsv"))
        }
    }

    func testBuild_gbifFormat_writesDoubtfulStatusAndSynonyms() throws {
        let directory = try GBIFFixture.write(to: try makeTemporaryDirectory(self))
        var options = TaxonomyBuilder.Options()
        options.format = .gbif
        options.topN = 3
        let normalized = TaxonomyNormalizer().normalize(
            try TaxonomyBuilder(options: options, logger: quietLogger).read(directory: directory))
        let byID = Dictionary(uniqueKeysWithValues: normalized.taxa.map { ($0.id, $0) })
        XCTAssertEqual(byID[8014530]?.status, .doubtful)
        XCTAssertEqual(byID[1]?.rank, .kingdom)
        XCTAssertEqual(byID[5219404]?.year, 1758)
        XCTAssertEqual(normalized.names.filter { $0.taxonID == 5219404 && $0.type == .synonym }.count, 3)
        XCTAssertEqual(normalized.names.filter { $0.taxonID == 5219404 && $0.type == .common && $0.preferred }
            .map(\.language).sorted(), ["de", "en", "es", "und"])
    }
}
