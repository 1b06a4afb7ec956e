import Foundation
import GRDB
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// A whole ChecklistBank-style ColDP export with text ids, built into a database.
///
/// The fixture reproduces, in miniature and with invented rows, the quirks of the
/// real ChecklistBank export of the CITES Appendix I checklist (dataset 314512):
/// higher taxa have text ids (`x36P`) while species keep integer ids (`10002`),
/// and children of text ids have integer ids; synonyms have an empty rank and
/// their authorship, with a year in double quotes, inside `scientificName`; plant
/// orders hang directly from the kingdom; varieties (dropped ranks) have names and
/// properties; `TaxonProperty` has `remarks` but no `unit` or reference column;
/// `NameUsage.tsv` has a `link` column; CamelCase and kebab-case file names are
/// mixed; `distribution.tsv`, `reference.bib` and `metadata.yaml` are present but
/// not read. Text ids' expected values come from Python's hashlib (see
/// StableTaxonIDMapTests for the one-liner).
final class ColDPTextIDBuildTests: XCTestCase {
    private static let nameUsage = [
        row("ID", "parentID", "status", "scientificName", "authorship", "rank", "link"),
        row("10002", "x36P", "accepted", "Nanger dama", "(Pallas, 1766)", "species", "https://example.org/taxon/10002"),
        row("x4", "", "accepted", "Animalia", "", "kingdom", ""),
        row("x6", "x4", "accepted", "Chordata", "", "phylum", ""),
        row("x3F", "x6", "accepted", "Mammalia", "", "class", ""),
        row("x36", "x3F", "accepted", "Artiodactyla", "", "order", ""),
        row("x36B", "x36", "accepted", "Bovidae", "", "family", ""),
        row("x36P", "x36B", "accepted", "Nanger", "", "genus", ""),
        row("x5A", "x6", "accepted", "Amphibia", "", "class", ""),
        row("x5B", "x5A", "accepted", "Anura", "", "order", ""),
        row("x5C", "x5B", "accepted", "Bufonidae", "", "family", ""),
        row("x5D", "x5C", "accepted", "Incilius", "", "genus", ""),
        row("4590", "x5D", "accepted", "Incilius periglenes", "(Savage, 1967)", "species", ""),
        row("xX", "", "accepted", "Plantae", "", "kingdom", ""),
        row("x9H", "xX", "accepted", "Euphorbiales", "", "order", ""),
        row("x9K", "x9H", "accepted", "Euphorbiaceae", "", "family", ""),
        row("x9M", "x9K", "accepted", "Euphorbia", "", "genus", ""),
        row("29640", "x9M", "accepted", "Euphorbia cremersii", "Rauh & Razaf.", "species", ""),
        row("29642", "x9M", "accepted", "Euphorbia cremersii var. rakotozafyi", "(Cremers) Rauh", "variety", ""),
        row("4590SYN176", "4590", "synonym", "Bufo periglenes Savage, 1967 \"1966\"", "", "", ""),
        row("10002SYN1", "10002", "synonym", "Gazella dama", "(Pallas, 1766)", "", ""),
    ]

    /// Accepted usages of the eight ranks (the variety is dropped).
    private static let keptTaxa = 17

    private func writeExport(to directory: String, usages: [String] = nameUsage) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try writeTSV(directory, "NameUsage.tsv", usages)
        try writeTSV(directory, "vernacular-name.tsv", [
            row("taxonID", "name", "language"),
            row("10002", "Dama Gazelle", "eng"),
            row("10002", "Gacela Dama", "spa"),
            row("x36B", "bovids", "eng"),
            row("29642", "Rakotozafy's spurge", "eng"),
        ])
        try writeTSV(directory, "taxon-property.tsv", [
            row("taxonID", "property", "value", "remarks"),
            row("10002", "CITES", "Appendix I", ""),
            row("29640", "CITES", "Appendix I", "Appendix I: the definition of \"artificially propagated\""),
            row("29642", "CITES", "Appendix I", ""),
        ])
        try writeTSV(directory, "distribution.tsv", [row("taxonID", "areaID", "area", "establishmentMeans"),
                                                      row("29640", "MG", "Madagascar", "native")])
        try Data("@book{Miller1768, title = \"Gardeners Dictionary\"}\n".utf8)
            .write(to: URL(fileURLWithPath: directory + "/reference.bib"))
        try Data("title: CITES Checklist\n".utf8).write(to: URL(fileURLWithPath: directory + "/metadata.yaml"))
        return directory
    }

    private func build(_ source: String, _ output: String) throws -> TaxonomyBuilder.Summary {
        try TaxonomyBuilder(logger: quietLogger).buildWithSummary(source: source, output: output)
    }

    /// The eight-rank view: taxa of a main rank under their view parents.
    private func taxa(_ path: String) throws -> [TaxonID: (parent: TaxonID?, name: String)] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var result: [TaxonID: (parent: TaxonID?, name: String)] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT id, main_parent_id AS parent_id, scientific_name FROM taxa WHERE main_rank IS NOT NULL
                """) {
                result[row["id"]] = (row["parent_id"], row["scientific_name"])
            }
            return result
        }
    }

    private func lineage(_ id: TaxonID, in taxa: [TaxonID: (parent: TaxonID?, name: String)]) -> [String] {
        var names: [String] = []
        var current: TaxonID? = id
        while let node = current, let taxon = taxa[node], names.count < 20 {
            names.insert(taxon.name, at: 0)
            current = taxon.parent
        }
        return names
    }

    func testBuild_whenExportMixesTextAndIntegerIDs_keepsTheTreeIntact() throws {
        let directory = try makeTemporaryDirectory(self)
        let output = directory + "/cites.sqlite"
        let summary = try build(try writeExport(to: directory + "/export"), output)
        XCTAssertEqual(summary.taxa, Self.keptTaxa)
        let taxa = try taxa(output)
        XCTAssertEqual(taxa.count, Self.keptTaxa)
        // Every parent is a taxon of the database; the only roots are the two kingdoms.
        for (id, taxon) in taxa {
            if let parent = taxon.parent { XCTAssertNotNil(taxa[parent], "\(taxon.name) (\(id)) has a dangling parent") }
        }
        XCTAssertEqual(Set(taxa.filter { $0.value.parent == nil }.map(\.key)),
                       [6_008_348_802_710_413, 5_488_017_430_329_229])  // x4, xX
        XCTAssertEqual(lineage(10002, in: taxa),
                       ["Animalia", "Chordata", "Mammalia", "Artiodactyla", "Bovidae", "Nanger", "Nanger dama"])
        XCTAssertEqual(lineage(4590, in: taxa),
                       ["Animalia", "Chordata", "Amphibia", "Anura", "Bufonidae", "Incilius", "Incilius periglenes"])
        XCTAssertEqual(lineage(29640, in: taxa),
                       ["Plantae", "Euphorbiales", "Euphorbiaceae", "Euphorbia", "Euphorbia cremersii"])
        XCTAssertEqual(taxa[4_389_133_603_328_958]?.name, "Nanger", "x36P")
        XCTAssertNil(taxa[29642], "a variety is not one of the eight ranks")
        let variety = try DatabaseQueue(path: output).read { db in
            try Row.fetchOne(db, sql: "SELECT parent_id, rank, main_parent_id FROM taxa WHERE id = 29642")
        }
        let genus = taxa.first { $0.value.name == "Euphorbia" }?.key
        XCTAssertNotNil(genus)
        XCTAssertEqual(variety?["parent_id"], genus, "the variety is a node under the parent the export gives it")
        XCTAssertEqual(variety?["main_parent_id"], genus, "its nearest main-rank ancestor")
        XCTAssertEqual(variety?["rank"], "variety")
        for (id, taxon) in taxa where ![10002, 4590, 29640].contains(id) {
            XCTAssertTrue(StableTaxonIDMap.hashedRange.contains(id), "\(taxon.name) has \(id)")
        }
    }

    func testBuild_whenExportHasTextIDs_attachesNamesSynonymsAndTraitsToTheRightTaxa() throws {
        let directory = try makeTemporaryDirectory(self)
        let output = directory + "/cites.sqlite"
        _ = try build(try writeExport(to: directory + "/export"), output)
        let queue = try DatabaseQueue(path: output)
        defer { try? queue.close() }
        try queue.read { db in
            let names = try Row.fetchAll(db, sql: "SELECT taxon_id, name, lang, name_type FROM names ORDER BY name")
                .map { "\($0["taxon_id"] as TaxonID) \($0["lang"] as String) \($0["name_type"] as String) \($0["name"] as String)" }
            XCTAssertEqual(names, [
                "4590 und synonym Bufo periglenes Savage, 1967 \"1966\"",
                "10002 en common Dama Gazelle",
                "10002 es common Gacela Dama",
                "10002 und synonym Gazella dama",
                "29642 en common Rakotozafy's spurge",  // the variety's name, on the variety (a node since schema 3)
                "4930429552771403 en common bovids",  // x36B
            ])
            let traits = try Row.fetchAll(db, sql: "SELECT taxon_id, trait_key, trait_value FROM traits ORDER BY taxon_id")
                .map { "\($0["taxon_id"] as TaxonID) \($0["trait_key"] as String)=\($0["trait_value"] as String)" }
            XCTAssertEqual(traits, ["10002 cites=Appendix I", "29640 cites=Appendix I", "29642 cites=Appendix I"])
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM first_occurrence"), Self.keptTaxa)
        }
    }

    /// A later export lists the same ids in another order: no taxon may change its id.
    func testBuild_whenRowsComeInAnotherOrder_givesEveryTaxonTheSameID() throws {
        let directory = try makeTemporaryDirectory(self)
        let first = directory + "/first.sqlite", second = directory + "/second.sqlite"
        _ = try build(try writeExport(to: directory + "/v1"), first)
        var generator = SplitMix64(for: self)
        var shuffled = Self.nameUsage
        while shuffled == Self.nameUsage {  // a shuffle may give the same order back
            shuffled = [Self.nameUsage[0]] + Self.nameUsage.dropFirst().shuffled(using: &generator)
        }
        XCTAssertNotEqual(shuffled, Self.nameUsage)
        _ = try build(try writeExport(to: directory + "/v2", usages: shuffled), second)
        let before = try taxa(first).mapValues(\.name), after = try taxa(second).mapValues(\.name)
        XCTAssertEqual(before, after)
        XCTAssertEqual(before.count, Self.keptTaxa)
    }
}
