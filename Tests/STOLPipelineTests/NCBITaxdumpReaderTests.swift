import Foundation
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

final class NCBITaxdumpReaderTests: XCTestCase {
    private func readFixture(lineEnding: String = "\n") throws -> SourceTaxonomy {
        try NCBITaxdumpReader().read(directory: try TaxdumpFixture.write(to: try makeTemporaryDirectory(self),
                                                                          lineEnding: lineEnding))
    }

    // MARK: nodes.dmp

    func testRead_nodes_keepsIDsParentsAndNCBIRanks_rootWithoutParent() throws {
        let source = try readFixture()
        XCTAssertEqual(source.usages.count, TaxdumpFixture.nodes.count)
        let byID = Dictionary(uniqueKeysWithValues: source.usages.map { ($0.id, $0) })
        XCTAssertNil(byID[1]?.parentID, "the root is its own parent in nodes.dmp")
        XCTAssertEqual(byID[131567]?.parentID, 1)
        XCTAssertEqual(byID[2759]?.rank, "superkingdom")
        XCTAssertEqual(byID[338153]?.rank, "subfamily")
        XCTAssertEqual(byID[9689]?.parentID, 9688)
        XCTAssertEqual(byID[9689]?.rank, "species")
        XCTAssertTrue(source.usages.allSatisfy { $0.status == .accepted })
    }

    // MARK: names.dmp

    func testRead_names_scientificNameIsTheNameTextNotTheUniqueName() throws {
        let byID = Dictionary(uniqueKeysWithValues: try readFixture().usages.map { ($0.id, $0) })
        XCTAssertEqual(byID[9689]?.scientificName, "Panthera leo")
        XCTAssertEqual(byID[2759]?.scientificName, "Eukaryota")
        XCTAssertEqual(byID[1]?.scientificName, "root")
        XCTAssertEqual(byID[339610]?.scientificName, "unclassified Felidae")
    }

    func testRead_authority_stripsTheLeadingScientificName() throws {
        let byID = Dictionary(uniqueKeysWithValues: try readFixture().usages.map { ($0.id, $0) })
        XCTAssertEqual(byID[9689]?.authorship, "(Linnaeus, 1758)")
        XCTAssertEqual(byID[9685]?.authorship, "Linnaeus, 1758")
        XCTAssertEqual(byID[40674]?.authorship, "Linnaeus, 1758")
        XCTAssertNil(byID[9681]?.authorship)
    }

    func testRead_authorityOfASynonym_isThatSynonymsAuthorship() throws {
        let source = try readFixture()
        let felisLeo = try XCTUnwrap(source.synonyms.first { $0.name == "Felis leo" })
        XCTAssertEqual(felisLeo.acceptedID, 9689)
        XCTAssertEqual(felisLeo.authorship, "Linnaeus, 1758")
        // "Korat cats L." names an `includes` name, not a synonym: ignored.
        XCTAssertFalse(source.synonyms.contains { $0.name.hasPrefix("Korat") })
    }

    func testRead_synonymClasses_areSynonymsWithTheirClass_includesMisspellingTypeMaterialAreNot() throws {
        let source = try readFixture()
        let lion = source.synonyms.filter { $0.acceptedID == 9689 }
        XCTAssertEqual(Set(lion.map(\.name)), ["Felis leo", "Leo leo"], "'lions' is a lower-case equivalent name: an English label")
        XCTAssertEqual(Set(lion.map(\.nameClass)), ["synonym"])
        XCTAssertEqual(source.synonyms.first { $0.acceptedID == 9694 && $0.name == "Tigris tigris" }?.nameClass,
                       "equivalent name")
        XCTAssertFalse(source.synonyms.contains { $0.acceptedID == 1 && $0.name == "all" },
                       "lower-case synonym 'all' of the root is not a scientific name")
        for excluded in ["Panthera leo persica", "Pantera leo", "ZMB Mam 1234", "Korat cats", "Panthera leo (Linnaeus, 1758)"] {
            XCTAssertFalse(source.synonyms.contains { $0.name == excluded }, excluded)
            XCTAssertFalse(source.vernacularNames.contains { $0.name == excluded }, excluded)
        }
    }

    /// The fixture, plus HIV-1 (an acronym in two classes, one row repeated) under
    /// Viruses, an `in-part` name and a `misnomer`.
    static let otherNamesNodes = [
        dumpRow("10239", "1", "superkingdom", "", "9", "0", "1", "0", "0", "0", "0", "0", ""),
        dumpRow("11676", "10239", "species", "", "9", "1", "1", "1", "0", "1", "1", "0", ""),
    ]
    static let otherNamesNames = [
        dumpRow("10239", "Viruses", "", "scientific name"),
        dumpRow("11676", "Human immunodeficiency virus 1", "", "scientific name"),
        dumpRow("11676", "HIV-1", "", "genbank acronym"),
        dumpRow("11676", "HIV-1", "", "genbank acronym"),
        dumpRow("11676", "HIV1", "", "acronym"),
        dumpRow("7711", "Pisces", "", "in-part"),
        dumpRow("9694", "Felis tigris altaica", "", "misnomer"),
    ]

    private func readFixtureWithOtherNames() throws -> SourceTaxonomy {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "nodes.dmp", TaxdumpFixture.nodes + Self.otherNamesNodes)
        try writeTSV(directory, "names.dmp", TaxdumpFixture.names + Self.otherNamesNames)
        return try NCBITaxdumpReader().read(directory: directory)
    }

    func testRead_acronymIncludesAuthorityMisspellingClasses_areOtherNamesTypedWithTheirClass() throws {
        let source = try readFixtureWithOtherNames()
        func others(_ id: TaxonID) -> Set<String> {
            Set(source.otherNames.filter { $0.taxonID == id }.map { "\($0.type.rawValue)|\($0.nameClass)|\($0.name)" })
        }
        XCTAssertEqual(others(9689), ["authority|authority|Felis leo Linnaeus, 1758",
                                      "authority|authority|Panthera leo (Linnaeus, 1758)",
                                      "includes|includes|Panthera leo persica",
                                      "misspelling|misspelling|Pantera leo"])
        XCTAssertEqual(others(11676), ["acronym|genbank acronym|HIV-1", "acronym|acronym|HIV1"])
        XCTAssertEqual(source.otherNames.filter { $0.name == "HIV-1" }.count, 1, "a repeated row is one name")
        XCTAssertEqual(others(7711), ["includes|in-part|Pisces"])
        XCTAssertEqual(others(9694), ["misspelling|misnomer|Felis tigris altaica"])
        XCTAssertEqual(others(9685), ["authority|authority|Felis catus Linnaeus, 1758", "includes|includes|Korat cats",
                                      "authority|authority|Korat cats L."])
    }

    func testRead_typeMaterial_isDropped() throws {
        let source = try readFixtureWithOtherNames()
        XCTAssertFalse(source.otherNames.contains { $0.name.hasPrefix("ZMB") || $0.nameClass == "type material" })
        XCTAssertFalse(source.synonyms.contains { $0.name.hasPrefix("ZMB") })
        XCTAssertFalse(source.vernacularNames.contains { $0.name.hasPrefix("ZMB") })
    }

    func testRead_authorityIsBothTheAuthorshipAndAName() throws {
        let source = try readFixture()
        XCTAssertEqual(source.usages.first { $0.id == 9689 }?.authorship, "(Linnaeus, 1758)")
        XCTAssertTrue(source.otherNames.contains {
            $0.taxonID == 9689 && $0.type == .authority && $0.name == "Panthera leo (Linnaeus, 1758)"
        })
    }

    func testRead_commonNames_areEnglish_genbankCommonNamePreferred() throws {
        let source = try readFixture()
        let lion = source.vernacularNames.filter { $0.taxonID == 9689 }
        XCTAssertEqual(Set(lion.map(\.name)), ["lion", "African lion"])
        XCTAssertEqual(lion.filter(\.preferred).map(\.name), ["lion"])
        XCTAssertTrue(source.vernacularNames.allSatisfy { $0.language == "en" })
        // The cat: genbank common name preferred even though common names come first.
        let cat = source.vernacularNames.filter { $0.taxonID == 9685 }
        XCTAssertEqual(cat.filter(\.preferred).map(\.name), ["domestic cat"])
        XCTAssertEqual(cat.count, 3)
        // Metazoa has only a blast name: it is the preferred English name.
        XCTAssertEqual(source.vernacularNames.filter { $0.taxonID == 33208 }.map(\.name), ["metazoans"])
        XCTAssertEqual(source.vernacularNames.first { $0.taxonID == 33208 }?.preferred, true)
    }

    func testRead_commonNames_carryTheirClass_theBestOneForANameInSeveral() throws {
        let source = try readFixture()
        func nameClass(_ id: TaxonID, _ name: String) -> String? {
            source.vernacularNames.first { $0.taxonID == id && $0.name == name }?.nameClass
        }
        XCTAssertEqual(nameClass(9689, "lion"), "genbank common name")
        XCTAssertEqual(nameClass(9689, "African lion"), "common name")
        XCTAssertEqual(nameClass(33208, "metazoans"), "blast name")
        // Blast name first, then the same name as a genbank common name / common name: the better class.
        XCTAssertEqual(nameClass(40674, "mammals"), "genbank common name")
        XCTAssertEqual(nameClass(2759, "eukaryotes"), "common name")
    }

    func testRead_sameCommonNameInSeveralClasses_isKeptOnce() throws {
        let source = try readFixture()
        // "eukaryotes" is both a blast name and a common name; "mammals" a blast and genbank common name.
        XCTAssertEqual(source.vernacularNames.filter { $0.taxonID == 2759 }.map(\.name).sorted(),
                       ["eucaryotes", "eukaryotes"])
        XCTAssertEqual(source.vernacularNames.filter { $0.taxonID == 40674 }.map(\.name), ["mammals"])
        XCTAssertEqual(source.vernacularNames.first { $0.taxonID == 2759 && $0.preferred }?.name, "eucaryotes")
    }

    func testRead_mergedDmp_mapsOldIDsToNew() throws {
        let source = try readFixture()
        XCTAssertEqual(source.merged, [12345: 9689, 54321: 9685])
    }

    func testRead_delnodesDmp_listsTheDeletedIDs() throws {
        XCTAssertEqual(try readFixture().deleted, [99999, 88888])
    }

    func testRead_delnodesDmpWithALetter_isABadValueNamingTheLine() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "delnodes.dmp", [dumpRow("99999"), dumpRow("x1")])
        XCTAssertThrowsError(try NCBITaxdumpReader().read(directory: directory)) {
            XCTAssertEqual($0 as? SourceError, .badValue(file: directory + "/delnodes.dmp", line: 2, column: "tax_id", value: "x1"))
        }
    }

    func testRead_withoutMergedDmp_hasNoMergedIDs() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        try FileManager.default.removeItem(atPath: directory + "/merged.dmp")
        XCTAssertEqual(try NCBITaxdumpReader().read(directory: directory).merged, [:])
    }

    // MARK: Real-world quirks

    func testRead_whenLinesEndInCRLF_readsTheSameAsLF() throws {
        let lf = try readFixture(lineEnding: "\n")
        let crlf = try readFixture(lineEnding: "\r\n")
        XCTAssertEqual(lf.usages, crlf.usages)
        XCTAssertEqual(lf.synonyms, crlf.synonyms)
        XCTAssertEqual(lf.vernacularNames, crlf.vernacularNames)
        XCTAssertEqual(lf.otherNames, crlf.otherNames)
        XCTAssertEqual(lf.merged, crlf.merged)
    }

    func testRead_whenTrailingPipeIsMissing_readsTheSame() throws {
        let directory = try makeTemporaryDirectory(self)
        let strip: (String) -> String = { $0.hasSuffix("\t|") ? String($0.dropLast(2)) : $0 }
        try writeTSV(directory, "nodes.dmp", TaxdumpFixture.nodes.map(strip))
        try writeTSV(directory, "names.dmp", TaxdumpFixture.names.enumerated().map { $0.offset.isMultiple(of: 2) ? strip($0.element) : $0.element })
        let stripped = try NCBITaxdumpReader().read(directory: directory)
        let clean = try readFixture()
        XCTAssertEqual(stripped.usages, clean.usages)
        XCTAssertEqual(stripped.synonyms, clean.synonyms)
        XCTAssertEqual(stripped.vernacularNames, clean.vernacularNames)
        XCTAssertEqual(stripped.otherNames, clean.otherNames)
    }

    /// The real Mammalia sample: a block of NUL bytes between two lines, then
    /// rows repeated from earlier in the file; plus a NUL block that cuts a line.
    func testRead_whenNamesHaveNULBlocksAndRepeatedRows_skipsThemAndDedupes() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "nodes.dmp", TaxdumpFixture.nodes)
        var bytes: [UInt8] = []
        let names = TaxdumpFixture.names
        for line in names { bytes += Array((line + "\n").utf8) }
        bytes += [UInt8](repeating: 0, count: 4096)                     // NUL block between lines
        for line in names.suffix(12) { bytes += Array((line + "\n").utf8) }  // rows repeated after it
        bytes += Array("9689\t|\tPanthera le".utf8)                      // a row cut short …
        bytes += [UInt8](repeating: 0, count: 300)                       // … by NULs …
        bytes += Array("o\t|\t\t|\tscientific n\n".utf8)                  // … leaving garbage
        bytes += Array((dumpRow("9690", "Jaguarius", "", "synonym") + "\n").utf8)
        try writeBytes(directory, "names.dmp", bytes)

        let source = try NCBITaxdumpReader().read(directory: directory)
        let clean = try readFixture()
        XCTAssertEqual(source.usages, clean.usages)
        XCTAssertEqual(Set(source.synonyms.map(\.name)), Set(clean.synonyms.map(\.name)).union(["Jaguarius"]))
        XCTAssertEqual(source.vernacularNames, clean.vernacularNames)
        XCTAssertEqual(source.otherNames, clean.otherNames, "repeated authority and includes rows kept once")
        XCTAssertEqual(source.readStatistics.damagedLines, 2, "the two halves of the cut row")
        XCTAssertGreaterThan(source.readStatistics.duplicateRows, 0)
    }

    func testRead_whenNodesRepeatATaxID_keepsTheFirstRow() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "nodes.dmp", TaxdumpFixture.nodes + [dumpRow("9689", "9681", "genus", "")])
        let source = try NCBITaxdumpReader().read(directory: directory)
        XCTAssertEqual(source.usages.filter { $0.id == 9689 }.map(\.parentID), [9688])
        XCTAssertEqual(source.readStatistics.duplicateRows, 1)
    }

    func testRead_namesOfUnknownTaxIDs_areCountedAndDropped() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "names.dmp", TaxdumpFixture.names + [dumpRow("2747335", "Marmosa rubra", "", "scientific name")])
        let source = try NCBITaxdumpReader().read(directory: directory)
        XCTAssertEqual(source.readStatistics.orphanNames, 1)
        XCTAssertFalse(source.usages.contains { $0.scientificName == "Marmosa rubra" })
    }

    // MARK: Errors

    func testRead_whenATaxIDIsNotAnInteger_throwsBadValueNamingFileAndLine() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        var nodes = TaxdumpFixture.nodes
        nodes[2] = dumpRow("27x59", "131567", "superkingdom", "")
        try writeTSV(directory, "nodes.dmp", nodes)
        XCTAssertThrowsError(try NCBITaxdumpReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError,
                           .badValue(file: directory + "/nodes.dmp", line: 3, column: "tax_id", value: "27x59"))
            XCTAssertTrue("\(error)".contains("nodes.dmp:3"), "\(error)")
        }
    }

    func testRead_whenANamesLineHasTooFewFields_throwsMalformedLineNamingFileAndLine() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        var names = TaxdumpFixture.names
        names[4] = "2759\tEukaryota\tscientific name"  // plain tabs, not `\t|\t`
        try writeTSV(directory, "names.dmp", names)
        XCTAssertThrowsError(try NCBITaxdumpReader().read(directory: directory)) { error in
            guard case .malformedLine(let file, let line, _)? = error as? SourceError else {
                return XCTFail("expected malformedLine, got \(error)")
            }
            XCTAssertEqual(file, directory + "/names.dmp")
            XCTAssertEqual(line, 5)
        }
    }

    func testRead_whenATaxonHasNoScientificName_throwsNamingItsNodesLine() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "names.dmp", TaxdumpFixture.names.filter { !$0.hasPrefix("9694\t|\tPanthera tigris") })
        XCTAssertThrowsError(try NCBITaxdumpReader().read(directory: directory)) { error in
            guard case .malformedLine(let file, let line, let detail)? = error as? SourceError else {
                return XCTFail("expected malformedLine, got \(error)")
            }
            XCTAssertEqual(file, directory + "/nodes.dmp")
            XCTAssertEqual(line, 12)
            XCTAssertTrue(detail.contains("9694"), detail)
        }
    }

    func testRead_whenAMergedLineIsBad_throwsBadValue() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "merged.dmp", [dumpRow("12345", "9689"), dumpRow("54321", "new")])
        XCTAssertThrowsError(try NCBITaxdumpReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError,
                           .badValue(file: directory + "/merged.dmp", line: 2, column: "new_tax_id", value: "new"))
        }
    }

    func testRead_whenNamesDmpIsMissing_throwsMissingFile() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        try FileManager.default.removeItem(atPath: directory + "/names.dmp")
        XCTAssertThrowsError(try NCBITaxdumpReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .missingFile(directory + "/names.dmp"))
        }
    }

    // MARK: Through the pipeline

    func testBuild_ncbiFormat_superkingdomBecomesDomainAndIntermediateRanksCollapse() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        let source = try TaxonomyBuilder(options: options, logger: quietLogger).read(directory: directory)
        let normalized = TaxonomyNormalizer().normalize(source)
        let byID = Dictionary(uniqueKeysWithValues: normalized.taxa.map { ($0.id, $0) })
        XCTAssertEqual(byID[2759]?.rank, .domain)
        XCTAssertNil(byID[2759]?.parentID, "root and cellular organisms are not kept")
        XCTAssertNil(byID[1])
        XCTAssertEqual(byID[9688]?.parentID, 9681, "Pantherinae (subfamily) is collapsed")
        XCTAssertEqual(byID[9689]?.year, 1758)
        XCTAssertTrue(normalized.names.contains { $0.taxonID == 9689 && $0.name == "lion" && $0.preferred })
    }

    func testRead_progressIsReportedForEachFile() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        let events = LockedEvents()
        _ = try NCBITaxdumpReader(progress: { events.append($0) }).read(directory: directory)
        let finished = events.all.filter(\.finished)
        XCTAssertEqual(finished.map { URL(fileURLWithPath: $0.file).lastPathComponent },
                       ["nodes.dmp", "names.dmp", "merged.dmp", "delnodes.dmp"])
        XCTAssertEqual(finished.first?.rows, TaxdumpFixture.nodes.count)
    }
}

/// Collects progress events from a `@Sendable` handler.
final class LockedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [ReadProgress] = []
    func append(_ event: ReadProgress) { lock.withLock { events.append(event) } }
    var all: [ReadProgress] { lock.withLock { events } }
}
