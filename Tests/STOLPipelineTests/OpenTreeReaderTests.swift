import Foundation
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// One Open Tree line: fields joined by `\t|\t` and ended by `\t|\t`, as OTT writes them.
func ottRow(_ fields: String...) -> String { fields.joined(separator: "\t|\t") + "\t|\t" }

/// An OTT Asterales extract in OTT's exact layout: header rows, an empty
/// parent for the root, `no rank - terminal` and `varietas` ranks, flags,
/// synonyms of several types (and, in the older layout, without sourceinfo).
enum OpenTreeFixture {
    static let taxonomy = [
        ottRow("uid", "parent_uid", "name", "rank", "sourceinfo", "uniqname", "flags"),
        ottRow("1042120", "", "Asterales", "order", "ncbi:4209,gbif:414", "", ""),
        ottRow("46248", "1042120", "Asteraceae", "family", "ncbi:4210,gbif:3065", "", ""),
        ottRow("102710", "46248", "Asteroideae", "subfamily", "ncbi:102804", "", ""),
        ottRow("524138", "102710", "Senecio", "genus", "ncbi:4243,gbif:3105100", "Senecio (genus in Asteraceae)", ""),
        ottRow("892911", "524138", "Senecio hypsobates", "species", "ncbi:1588546", "", "sibling_higher"),
        ottRow("3903570", "892911", "Senecio hypsobates var. major", "varietas", "gbif:7294377", "", "infraspecific"),
        ottRow("5375010", "524138", "Senecio sp. Barker 1865", "species", "ncbi:1288540", "", "not_otu"),
        ottRow("1237710", "1042120", "unclassified Asterales", "no rank - terminal", "", "", "was_container"),
        ottRow("4722222", "46248", "Asteraceae environmental sample", "species", "ncbi:1118954", "",
               "not_otu,environmental,major_rank_conflict_direct"),
        ottRow("3899234", "524138", "Senecio mucronulatus", "species", "gbif:3107262", "",
               "incertae_sedis,extinct"),
    ]

    static let synonyms = [
        ottRow("name", "uid", "type", "uniqname", "sourceinfo"),
        ottRow("Campanulales", "1042120", "includes", "Campanulales (synonym for Asterales)", "ncbi:4209"),
        ottRow("Compositae", "46248", "synonym", "Compositae (synonym for Asteraceae)", "ncbi:4210"),
        ottRow("Senecio hypsobatess", "892911", "misspelling", "", "ncbi:1588546"),
        ottRow("Senecio hypsobates Wedd.", "892911", "", "Senecio hypsobates Wedd. (synonym for Senecio hypsobates)",
               "gbif:3105993"),
        ottRow("Compositae", "46248", "equivalent name", "", "ncbi:4210"),
    ]

    /// The older layout of `prev_aster`: no sourceinfo column, empty types.
    static let olderSynonyms = [
        ottRow("name", "uid", "type", "uniqname"),
        ottRow("Pyrethrum mucronulatum", "3899234", "", "Pyrethrum mucronulatum (synonym for Senecio mucronulatus)"),
    ]

    @discardableResult
    static func write(to directory: String, lineEnding: String = "\n", older: Bool = false) throws -> String {
        try writeTSV(directory, "taxonomy.tsv", taxonomy, lineEnding: lineEnding)
        try writeTSV(directory, "synonyms.tsv", older ? olderSynonyms : synonyms, lineEnding: lineEnding)
        return directory
    }
}

final class OpenTreeReaderTests: XCTestCase {
    private func readFixture(lineEnding: String = "\n", older: Bool = false) throws -> SourceTaxonomy {
        try OpenTreeReader().read(directory: try OpenTreeFixture.write(to: try makeTemporaryDirectory(self),
                                                                        lineEnding: lineEnding, older: older))
    }

    func testRead_taxonomy_readsUIDsParentsNamesRanksAndFlags() throws {
        let source = try readFixture()
        XCTAssertEqual(source.usages.count, OpenTreeFixture.taxonomy.count - 1)
        let byID = Dictionary(uniqueKeysWithValues: source.usages.map { ($0.id, $0) })
        XCTAssertNil(byID[1042120]?.parentID, "the root has an empty parent_uid")
        XCTAssertEqual(byID[524138]?.parentID, 102710)
        XCTAssertEqual(byID[524138]?.scientificName, "Senecio", "the name, not the uniqname")
        XCTAssertEqual(byID[3903570]?.rank, "varietas")
        XCTAssertEqual(byID[1237710]?.rank, "no rank - terminal")
        XCTAssertEqual(byID[4722222]?.flags, ["not_otu", "environmental", "major_rank_conflict_direct"])
        XCTAssertEqual(byID[524138]?.flags, [])
        XCTAssertTrue(source.usages.allSatisfy { $0.status == .accepted && $0.authorship == nil })
    }

    func testRead_synonyms_keepSynonymTypesOnlyAndDedupe() throws {
        let source = try readFixture()
        XCTAssertEqual(source.synonyms.map(\.name), ["Compositae", "Senecio hypsobates Wedd."])
        XCTAssertEqual(source.synonyms.map(\.acceptedID), [46248, 892911])
        XCTAssertEqual(source.readStatistics.duplicateRows, 1, "Compositae as synonym and equivalent name")
    }

    func testRead_olderSynonymsLayoutWithoutSourceinfoAndEmptyTypes() throws {
        let source = try readFixture(older: true)
        XCTAssertEqual(source.synonyms.map(\.name), ["Pyrethrum mucronulatum"])
        XCTAssertEqual(source.synonyms.first?.acceptedID, 3899234)
    }

    func testRead_whenLinesEndInCRLF_readsTheSameAsLF() throws {
        let lf = try readFixture(lineEnding: "\n")
        let crlf = try readFixture(lineEnding: "\r\n")
        XCTAssertEqual(lf.usages, crlf.usages)
        XCTAssertEqual(lf.synonyms, crlf.synonyms)
    }

    func testRead_whenAUIDIsNotAnInteger_throwsBadValueNamingFileAndLine() throws {
        let directory = try OpenTreeFixture.write(to: try makeTemporaryDirectory(self))
        var taxonomy = OpenTreeFixture.taxonomy
        taxonomy[4] = ottRow("ott524138", "102710", "Senecio", "genus", "", "", "")
        try writeTSV(directory, "taxonomy.tsv", taxonomy)
        XCTAssertThrowsError(try OpenTreeReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError,
                           .badValue(file: directory + "/taxonomy.tsv", line: 5, column: "uid", value: "ott524138"))
        }
    }

    func testRead_whenALineHasTooFewFields_throwsMalformedLine() throws {
        let directory = try OpenTreeFixture.write(to: try makeTemporaryDirectory(self))
        var taxonomy = OpenTreeFixture.taxonomy
        taxonomy[2] = "46248\t1042120\tAsteraceae\tfamily"  // tabs only
        try writeTSV(directory, "taxonomy.tsv", taxonomy)
        XCTAssertThrowsError(try OpenTreeReader().read(directory: directory)) { error in
            guard case .malformedLine(let file, let line, _)? = error as? SourceError else {
                return XCTFail("expected malformedLine, got \(error)")
            }
            XCTAssertEqual(file, directory + "/taxonomy.tsv")
            XCTAssertEqual(line, 3)
        }
    }

    func testRead_whenASynonymUIDIsBad_throwsBadValueNamingSynonymsFile() throws {
        let directory = try OpenTreeFixture.write(to: try makeTemporaryDirectory(self))
        try writeTSV(directory, "synonyms.tsv", OpenTreeFixture.synonyms + [ottRow("Foo", "x", "synonym", "", "")])
        XCTAssertThrowsError(try OpenTreeReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .badValue(file: directory + "/synonyms.tsv",
                                                            line: OpenTreeFixture.synonyms.count + 1,
                                                            column: "uid", value: "x"))
        }
    }

    func testRead_whenTheHeaderLacksParentUID_throwsMissingColumn() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "taxonomy.tsv", [ottRow("uid", "name", "rank"), ottRow("1", "Asterales", "order")])
        XCTAssertThrowsError(try OpenTreeReader().read(directory: directory)) { error in
            XCTAssertEqual(error as? SourceError, .missingColumn(file: directory + "/taxonomy.tsv", column: "parent_uid"))
        }
    }

    func testPlaceholderFilter_usesOTTFlags_keepsIncertaeSedisAndExtinct() throws {
        let (filtered, report) = PlaceholderFilter().filter(try readFixture())
        let ids = Set(filtered.usages.map(\.id))
        XCTAssertFalse(ids.contains(4722222), "environmental")
        XCTAssertFalse(ids.contains(1237710), "was_container")
        XCTAssertFalse(ids.contains(5375010), "not_otu (and Senecio sp.)")
        XCTAssertTrue(ids.contains(3899234), "incertae_sedis and extinct are real taxa")
        XCTAssertTrue(ids.contains(892911))
        XCTAssertTrue(ids.contains(3903570), "infraspecific is not a placeholder flag")
        XCTAssertEqual(report.droppedUsages, 3)
    }

    func testBuild_ottFormat_keepsTheMainRanks() throws {
        let directory = try OpenTreeFixture.write(to: try makeTemporaryDirectory(self))
        var options = TaxonomyBuilder.Options()
        options.format = .ott
        let normalized = TaxonomyNormalizer().normalize(
            try TaxonomyBuilder(options: options, logger: quietLogger).read(directory: directory))
        let byID = Dictionary(uniqueKeysWithValues: normalized.taxa.map { ($0.id, $0) })
        XCTAssertEqual(byID[524138]?.parentID, 46248, "the subfamily is collapsed")
        XCTAssertNil(byID[3903570], "varietas is not kept")
        XCTAssertNil(byID[1237710], "no rank - terminal is not kept")
        XCTAssertEqual(byID[1042120]?.rank, .order)
    }
}
