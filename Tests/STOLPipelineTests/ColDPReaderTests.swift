import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

final class ColDPReaderTests: XCTestCase {
    /// An export with every quirk at once: Windows line ends, `col:`-prefixed
    /// headers in a different column order, kebab-case file names, synonyms,
    /// ISO 639-3 codes and a `preferred` column with assorted spellings.
    private func writeQuirkyExport(lineEnding: String = "\r\n") throws -> String {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "name-usage.tsv", [
            row("col:ID", "col:status", "col:parentID", "col:rank", "col:scientificName", "col:authorship"),
            row("2157", "accepted", "", "Superkingdom", "Archaea", ""),
            row("28890", "accepted", "2157", "phylum", "Euryarchaeota", ""),
            row("2242", "provisionally accepted", "28890", "species", "Halobacterium salinarum",
                "(Harrison & Kennedy, 1922) Elazari-Volcani, 1957"),
            row("s-1", "synonym", "2242", "species", "Pseudomonas salinaria", "Harrison & Kennedy, 1922"),
            row("s-2", "ambiguous synonym", "2242", "species", "Halobacterium halobium", ""),
        ], lineEnding: lineEnding)
        try writeTSV(directory, "vernacular-name.tsv", [
            row("col:taxonID", "col:name", "col:language", "col:preferred"),
            row("2242", "halobacterium", "eng", ""),
            row("2242", "halobacteria", "spa", "true"),
            row("2242", "嗜盐菌", "zho", "1"),
            row("2242", "Halobakterium", "de", "yes"),
            row("2242", "salt archaeon", "English", "false"),
            row("2242", "halobactéria", "pt-br", ""),
            row("2242", "mystery", "qqq", ""),
        ], lineEnding: lineEnding)
        try writeTSV(directory, "taxon-property.tsv", [
            row("col:taxonID", "col:property", "col:value", "col:unit", "col:referenceID"),
            row("2242", "Habitat", "saline", "", "r1"),
        ], lineEnding: lineEnding)
        try writeTSV(directory, "reference.tsv", [
            row("col:ID", "col:citation", "col:link", "col:type"),
            row("r1", "Oren A. 2002. Halophilic microorganisms.", "https://example.org/oren", "Ecology"),
        ], lineEnding: lineEnding)
        return directory
    }

    func testRead_whenExportHasCRLFPrefixedHeadersAndKebabNames_readsEveryFile() throws {
        let source = try ColDPReader().read(directory: try writeQuirkyExport())
        XCTAssertEqual(source.usages.map(\.id), [2157, 28890, 2242])
        guard source.usages.count == 3 else { return }
        XCTAssertEqual(source.usages.map(\.parentID), [nil, 2157, 28890])
        XCTAssertEqual(source.usages.map(\.rank), ["Superkingdom", "phylum", "species"])
        XCTAssertEqual(source.usages.map(\.scientificName), ["Archaea", "Euryarchaeota", "Halobacterium salinarum"])
        // No stray carriage return survives in the last column.
        XCTAssertEqual(source.usages[2].authorship, "(Harrison & Kennedy, 1922) Elazari-Volcani, 1957")
        XCTAssertNil(source.usages[0].authorship)
        XCTAssertEqual(source.usages.map(\.status), [.accepted, .accepted, .doubtful])
        XCTAssertEqual(source.vernacularNames.count, 7)
        XCTAssertEqual(source.properties.count, 1)
        XCTAssertEqual(source.properties.first?.key, "habitat")
        XCTAssertEqual(source.properties.first?.referenceID, "r1")
        XCTAssertEqual(source.references.map(\.id), ["r1"])
        XCTAssertEqual(source.references.first?.type, "ecology")
        XCTAssertEqual(source.references.first?.link, "https://example.org/oren")
    }

    func testRead_whenLineEndsAreCRLF_readsTheSameAsLF() throws {
        let crlf = try ColDPReader().read(directory: try writeQuirkyExport(lineEnding: "\r\n"))
        let lf = try ColDPReader().read(directory: try writeQuirkyExport(lineEnding: "\n"))
        XCTAssertEqual(crlf.usages, lf.usages)
        XCTAssertEqual(crlf.synonyms, lf.synonyms)
        XCTAssertEqual(crlf.vernacularNames, lf.vernacularNames)
        XCTAssertEqual(crlf.properties, lf.properties)
        XCTAssertEqual(crlf.references, lf.references)
    }

    func testRead_whenCRLFFileHasBlankLines_skipsThemLikeLF() throws {
        for lineEnding in ["\n", "\r\n"] {
            let directory = try makeTemporaryDirectory(self)
            try writeTSV(directory, "NameUsage.tsv", [
                row("ID", "parentID", "status", "rank", "scientificName"),
                row("1", "", "accepted", "domain", "Bacteria"),
                "",
                row("2", "1", "accepted", "phylum", "Bacillota"),
                "",
            ], lineEnding: lineEnding)
            let source = try ColDPReader().read(directory: directory)
            XCTAssertEqual(source.usages.map(\.id), [1, 2], "line ending \(lineEnding.debugDescription)")
        }
    }

    /// `OtherName.tsv`, STOL's addition to ColDP: names filed by NCBI's class, as the
    /// taxdump reader files them; a class that is no such name is refused, naming it.
    func testRead_otherNames_areAcronymsOrSynonymsByTheirNCBIClass_andAnUnknownClassIsRefused() throws {
        let directory = try writeQuirkyExport(lineEnding: "\n")
        try writeTSV(directory, "OtherName.tsv", [row("taxonID", "name", "class", "source"),
                                                  row("2242", "HSAL", "acronym", "x"),
                                                  row("2242", "Hbt. salinarum", "equivalent name", "x"),
                                                  row("2242", "Halobacterium salinarium", "misspelling", "x")])
        let source = try ColDPReader().read(directory: directory)
        XCTAssertEqual(source.otherNames.map { [$0.name, $0.type.rawValue, $0.nameClass] },
                       [["HSAL", "acronym", "acronym"], ["Halobacterium salinarium", "misspelling", "misspelling"]])
        XCTAssertTrue(source.synonyms.contains { $0.acceptedID == 2242 && $0.name == "Hbt. salinarum" && $0.nameClass == "equivalent name" })
        for bad in ["common name", "scientific name", "acronyms", ""] {
            try writeTSV(directory, "OtherName.tsv", [row("taxonID", "name", "class", "source"), row("2242", "X", bad, "x")])
            XCTAssertThrowsError(try ColDPReader().read(directory: directory), bad) { error in
                guard case .badValue(_, 2, "class", bad) = error as? SourceError else { return XCTFail("\(error)") }
            }
        }
    }

    func testRead_attachesSynonymsToTheirAcceptedUsage() throws {
        let source = try ColDPReader().read(directory: try writeQuirkyExport())
        XCTAssertEqual(source.synonyms.map(\.acceptedID), [2242, 2242])
        XCTAssertEqual(source.synonyms.map(\.name), ["Pseudomonas salinaria", "Halobacterium halobium"])
        XCTAssertEqual(source.synonyms.first?.authorship, "Harrison & Kennedy, 1922")
        // Synonyms are names, not taxa, even though their ids are not integers.
        XCTAssertFalse(source.usages.contains { $0.scientificName == "Pseudomonas salinaria" })
    }

    func testRead_mapsLanguageCodesToBCP47AndReadsPreferred() throws {
        let source = try ColDPReader().read(directory: try writeQuirkyExport())
        let byName = Dictionary(uniqueKeysWithValues: source.vernacularNames.map { ($0.name, $0) })
        XCTAssertEqual(byName["halobacterium"]?.language, "en")
        XCTAssertEqual(byName["halobacteria"]?.language, "es")
        XCTAssertEqual(byName["嗜盐菌"]?.language, "zh")
        XCTAssertEqual(byName["Halobakterium"]?.language, "de")
        XCTAssertEqual(byName["salt archaeon"]?.language, "en")
        XCTAssertEqual(byName["halobactéria"]?.language, "pt-BR")
        XCTAssertEqual(byName["mystery"]?.language, "und")
        XCTAssertEqual(byName["halobacterium"]?.preferred, false)
        XCTAssertEqual(byName["halobacteria"]?.preferred, true)
        XCTAssertEqual(byName["嗜盐菌"]?.preferred, true)
        XCTAssertEqual(byName["Halobakterium"]?.preferred, true)
        XCTAssertEqual(byName["salt archaeon"]?.preferred, false)
        XCTAssertEqual(source.vernacularNames.map(\.taxonID), Array(repeating: 2242, count: 7))
    }

    func testLanguageTags_mapsISO639_3AndPassesBCP47Through() {
        XCTAssertEqual(LanguageTags.bcp47("spa"), "es")
        XCTAssertEqual(LanguageTags.bcp47("zho"), "zh")
        XCTAssertEqual(LanguageTags.bcp47("ENG"), "en")
        XCTAssertEqual(LanguageTags.bcp47("fr"), "fr")
        XCTAssertEqual(LanguageTags.bcp47("zh-hans"), "zh-Hans")
        XCTAssertEqual(LanguageTags.bcp47("zho-Hans"), "zh-Hans")
        XCTAssertEqual(LanguageTags.bcp47("pt-br"), "pt-BR")
        XCTAssertNil(LanguageTags.bcp47(""))
        XCTAssertNil(LanguageTags.bcp47("klingon"))
    }

    // Text ids. Expected values are computed independently with Python's hashlib
    // (see StableTaxonIDMapTests): 2**40 + int.from_bytes(sha256(b"coldp:" + id)[:8], "big") % (2**53 - 2**40).

    func testRead_whenAnIDIsNotAnInteger_mapsItToItsStableHashedID() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("1", "", "accepted", "domain", "Bacteria"),
            row("12a", "1", "accepted", "phylum", "Bacillota"),
        ])
        let source = try ColDPReader().read(directory: directory)
        XCTAssertEqual(source.usages.map(\.id), [1, 3_447_015_319_322_567])
        XCTAssertEqual(source.usages.map(\.parentID), [nil, 1])
    }

    func testRead_whenAParentIDIsText_mapsItWithTheSameFunctionAsIDs() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("one", "", "accepted", "domain", "Bacteria"),
            row("2", "one", "accepted", "phylum", "Bacillota"),
        ])
        let source = try ColDPReader().read(directory: directory)
        XCTAssertEqual(source.usages.map(\.id), [1_677_762_667_535_301, 2])
        XCTAssertEqual(source.usages.last?.parentID, 1_677_762_667_535_301)
    }

    func testRead_whenSynonymVernacularAndPropertyRowsNameTextIDs_mapsEveryOneToItsTaxon() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("x1", "", "accepted", "genus", "Nanger"),
            row("x1SYN", "x1", "synonym", "", "Gazella"),
        ])
        try writeTSV(directory, "VernacularName.tsv", [row("taxonID", "name", "language"), row("x1", "gazelles", "eng")])
        try writeTSV(directory, "TaxonProperty.tsv", [row("taxonID", "property", "value"), row("x1", "CITES", "Appendix I")])
        let source = try ColDPReader().read(directory: directory)
        let x1: TaxonID = 3_169_439_836_184_771
        XCTAssertEqual(source.usages.map(\.id), [x1])
        XCTAssertEqual(source.synonyms.map(\.acceptedID), [x1])
        XCTAssertEqual(source.vernacularNames.map(\.taxonID), [x1])
        XCTAssertEqual(source.properties.map(\.taxonID), [x1])
    }

    /// `c14463178` and `c59775577` have the same SHA-256 prefix under the policy
    /// (a real collision, see StableTaxonIDMapTests).
    func testRead_whenTextIDsCollide_failsNamingBothIDs() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("c14463178", "", "accepted", "domain", "Bacteria"),
            row("c59775577", "c14463178", "accepted", "phylum", "Bacillota"),
        ])
        XCTAssertThrowsError(try ColDPReader().read(directory: directory)) { error in
            guard case .malformedLine(let file, let line, let detail)? = error as? SourceError else {
                return XCTFail("expected malformedLine, got \(error)")
            }
            XCTAssertEqual(file, directory + "/NameUsage.tsv")
            XCTAssertEqual(line, 3)
            XCTAssertTrue(detail.contains("'c14463178'") && detail.contains("'c59775577'"), detail)
            XCTAssertTrue(detail.contains("3700373707059085"), detail)
        }
    }

    func testRead_whenAVernacularTextIDCollidesWithAUsageID_failsInThatFile() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [row("ID", "parentID", "status", "rank", "scientificName"),
                                                   row("c139897255", "", "accepted", "domain", "Bacteria")])
        try writeTSV(directory, "vernacular-name.tsv", [row("taxonID", "name", "language"),
                                                         row("c139897255", "bacteria", "eng"),
                                                         row("c150695828", "not bacteria", "eng")])
        XCTAssertThrowsError(try ColDPReader().read(directory: directory)) { error in
            guard case .malformedLine(let file, 3, let detail)? = error as? SourceError else {
                return XCTFail("expected malformedLine at line 3, got \(error)")
            }
            XCTAssertEqual(file, directory + "/vernacular-name.tsv")
            XCTAssertTrue(detail.contains("'c139897255'") && detail.contains("'c150695828'"), detail)
        }
    }

    func testRead_whenAnAcceptedUsageHasNoID_throwsBadValueNamingFileAndLine() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("1", "", "accepted", "domain", "Bacteria"),
            row("", "1", "accepted", "phylum", "Bacillota"),
        ])
        do {
            _ = try ColDPReader().read(directory: directory)
            XCTFail("expected badValue")
        } catch {
            XCTAssertEqual(error, .badValue(file: directory + "/NameUsage.tsv", line: 3, column: "ID", value: ""))
            XCTAssertTrue(error.description.contains("NameUsage.tsv:3"), error.description)
        }
    }

    func testRead_whenASynonymHasNoParentID_throwsBadValue() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("1", "", "accepted", "domain", "Bacteria"),
            row("s1", "", "synonym", "", "Eubacteria"),
        ])
        XCTAssertThrowsError(try ColDPReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError,
                           .badValue(file: directory + "/NameUsage.tsv", line: 3, column: "parentID", value: ""))
        }
    }

    func testRead_whenAVernacularRowHasNoTaxonID_throwsBadValueNamingThatFile() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [row("ID", "parentID", "status", "rank", "scientificName"),
                                                   row("1", "", "accepted", "domain", "Bacteria")])
        try writeTSV(directory, "vernacular-name.tsv", [row("taxonID", "name", "language"),
                                                         row("1", "bacteria", "eng"),
                                                         row("", "bacterias", "spa")])
        XCTAssertThrowsError(try ColDPReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError,
                           .badValue(file: directory + "/vernacular-name.tsv", line: 3, column: "taxonID", value: ""))
        }
    }

    func testRead_whenAnIDRepeats_keepsTheFirstRowAndCountsTheDuplicate() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("x1", "", "accepted", "domain", "Bacteria"),
            row("x1", "", "accepted", "domain", "Bacteria (again)"),
        ])
        let source = try ColDPReader().read(directory: directory)
        XCTAssertEqual(source.usages.map(\.scientificName), ["Bacteria"])
        XCTAssertEqual(source.readStatistics.duplicateRows, 1)
        XCTAssertEqual(source.readStatistics.rows, 2)
    }

    // MARK: TSV details the shared byte-level reader must keep

    /// ChecklistBank keeps a publication year in quotes inside the name
    /// (`Bufo periglenes Savage, 1967 "1966"`): ColDP TSV is not quoted.
    func testRead_keepsDoubleQuotesAsOrdinaryCharacters() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName", "authorship"),
            row("4590", "", "accepted", "species", "\"Incilius\" periglenes", "(Savage, 1967)"),
            row("4590SYN176", "4590", "synonym", "", "Bufo periglenes Savage, 1967 \"1966\"", ""),
        ])
        try writeTSV(directory, "taxon-property.tsv", [
            row("taxonID", "property", "value", "remarks"),
            row("4590", "CITES", "\"Appendix I\"", "the definition of \"artificially propagated\""),
        ])
        let source = try ColDPReader().read(directory: directory)
        XCTAssertEqual(source.usages.map(\.scientificName), ["\"Incilius\" periglenes"])
        XCTAssertEqual(source.synonyms.map(\.name), ["Bufo periglenes Savage, 1967 \"1966\""])
        XCTAssertNil(source.synonyms.first?.authorship)
        XCTAssertEqual(source.properties.map(\.value), ["\"Appendix I\""])
    }

    func testRead_whenAFileStartsWithAByteOrderMark_matchesItsFirstColumn() throws {
        let directory = try makeTemporaryDirectory(self)
        try Data([0xEF, 0xBB, 0xBF] + Array((row("ID", "parentID", "status", "rank", "scientificName") + "\n"
            + row("1", "", "accepted", "domain", "Bacteria") + "\n").utf8))
            .write(to: URL(fileURLWithPath: directory + "/NameUsage.tsv"))
        XCTAssertEqual(try ColDPReader().read(directory: directory).usages.map(\.id), [1])
    }

    func testRead_trimsSpacesAroundFieldsButKeepsThemInside() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName", "authorship"),
            row(" x4 ", "", " accepted", "kingdom ", " Chitra burmanica  Jaruthanin ", " 2002 "),
        ])
        let usage = try XCTUnwrap(try ColDPReader().read(directory: directory).usages.first)
        XCTAssertEqual(usage.id, 6_008_348_802_710_413, "the id is hashed without its spaces, as `x4`")
        XCTAssertEqual(usage.scientificName, "Chitra burmanica  Jaruthanin")
        XCTAssertEqual(usage.authorship, "2002")
        XCTAssertEqual(usage.rank, "kingdom")
    }

    func testRead_whenNameUsageIsMissing_throwsMissingFile() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "VernacularName.tsv", [row("taxonID", "name"), row("1", "x")])
        do {
            _ = try ColDPReader().read(directory: directory)
            XCTFail("expected missingFile")
        } catch {
            XCTAssertEqual(error, .missingFile(directory + "/NameUsage.tsv"))
        }
    }

    func testRead_whenARequiredColumnIsMissing_throwsMissingColumn() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [row("ID", "parentID", "status", "scientificName"),
                                                   row("1", "", "accepted", "Bacteria")])
        XCTAssertThrowsError(try ColDPReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .missingColumn(file: directory + "/NameUsage.tsv", column: "rank"))
        }
    }

    func testRead_curatedSource_hasLionWithItsSynonymAndSpanishName() throws {
        let source = try ColDPReader().read(directory: curatedSourceDirectory)
        let lion = try XCTUnwrap(source.usages.first { $0.id == 9689 })
        XCTAssertEqual(lion.scientificName, "Panthera leo")
        XCTAssertEqual(lion.parentID, 9688)
        XCTAssertEqual(lion.authorship, "(Linnaeus, 1758)")
        XCTAssertTrue(source.synonyms.contains { $0.acceptedID == 9689 && $0.name == "Felis leo" })
        XCTAssertTrue(source.vernacularNames.contains { $0.taxonID == 9689 && $0.language == "es" && $0.name == "león" })
        XCTAssertEqual(source.usages.first { $0.id == 38942 }?.scientificName, "Quercus robur")
    }
}
