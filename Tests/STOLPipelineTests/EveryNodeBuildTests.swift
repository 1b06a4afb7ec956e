import Foundation
import GRDB
import Logging
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// Schema 3: every build keeps every node of the source in `taxa` (its rank
/// verbatim, its own parent, one root), the eight-rank view as two columns of the
/// same rows (`main_rank`, `main_parent_id`), names on any node, and the source's
/// merged and deleted ids.
final class EveryNodeBuildTests: XCTestCase {
    private let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    private func build(edit: (String) throws -> Void = { _ in }) throws -> String {
        let directory = try makeTemporaryDirectory(self)
        let source = try TaxdumpFixture.write(to: directory)
        try edit(source)
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        let output = directory + "/taxonomy.sqlite"
        _ = try TaxonomyBuilder(options: options, logger: quiet).build(source: source, output: output)
        return output
    }

    private func read<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    func testEveryNode_isATaxon_withItsNCBIRankAndParent_underOneRoot() throws {
        let path = try build()
        try read(path) { db in
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT version FROM schema_version"), 3)
            let rows = try Row.fetchAll(db, sql: "SELECT id, parent_id, rank, scientific_name FROM taxa ORDER BY id")
            XCTAssertEqual(rows.count, TaxdumpFixture.nodes.count, "not every node of nodes.dmp is kept")
            let byID = Dictionary(uniqueKeysWithValues: rows.map { (($0["id"] as Int64), $0) })
            XCTAssertEqual(rows.filter { ($0["parent_id"] as Int64?) == nil }.map { $0["id"] as Int64 }, [1], "not one root")
            XCTAssertEqual(byID[131567]?["rank"], "no rank")
            XCTAssertEqual(byID[131567]?["parent_id"], 1 as Int64)
            XCTAssertEqual(byID[131567]?["scientific_name"], "cellular organisms")
            XCTAssertEqual(byID[2759]?["rank"], "superkingdom", "the rank must be NCBI's, verbatim")
            XCTAssertEqual(byID[338153]?["rank"], "subfamily")
            XCTAssertEqual(byID[9688]?["parent_id"], 338153 as Int64, "the genus hangs under its subfamily, not collapsed")
            XCTAssertEqual(try String.fetchOne(db, sql: "PRAGMA foreign_key_check(taxa)"), nil)
            XCTAssertFalse(try db.tableExists("tree_nodes"), "schema 3 keeps one table of nodes")
        }
    }

    func testTheEightRankView_isTwoColumnsOfTheSameRows() throws {
        let path = try build()
        try read(path) { db in
            let view = try Row.fetchAll(db, sql: "SELECT id, main_rank, main_parent_id FROM taxa ORDER BY id")
            let byID = Dictionary(uniqueKeysWithValues: view.map { (($0["id"] as Int64), $0) })
            // The genus Panthera: in the view directly under the family Felidae, past the subfamily.
            XCTAssertEqual(byID[9688]?["main_rank"], "genus")
            XCTAssertEqual(byID[9688]?["main_parent_id"], 9681 as Int64)
            // NCBI's superkingdom is the view's domain, and has no main-rank parent.
            XCTAssertEqual(byID[2759]?["main_rank"], "domain")
            XCTAssertEqual(byID[2759]?["main_parent_id"], nil as Int64?)
            // The subfamily is outside the view, placed under its nearest main-rank ancestor.
            XCTAssertEqual(byID[338153]?["main_rank"], nil as String?)
            XCTAssertEqual(byID[338153]?["main_parent_id"], 9681 as Int64)
            // The root and "cellular organisms" have no main-rank ancestor at all.
            XCTAssertEqual(byID[1]?["main_parent_id"], nil as Int64?)
            XCTAssertEqual(byID[131567]?["main_parent_id"], nil as Int64?)
            // Every view parent is itself in the view and above its child.
            let levels = Dictionary(uniqueKeysWithValues: TaxonRank.allCases.map { ($0.rawValue, $0.level) })
            for row in view {
                guard let rank: String = row["main_rank"], let parent: Int64 = row["main_parent_id"] else { continue }
                let parentRank: String? = byID[parent]?["main_rank"]
                XCTAssertNotNil(parentRank, "\(row["id"] as Int64)'s view parent \(parent) is outside the view")
                XCTAssertLessThan(levels[parentRank ?? ""] ?? 99, levels[rank] ?? 0, "view parent not above \(row["id"] as Int64)")
            }
        }
    }

    /// Every kept class of names.dmp, read back from `names`: its type, its class
    /// verbatim, on its node; `type material` absent; the report counts the classes.
    func testNames_everyNCBIClassIsWrittenWithItsTypeAndClass_typeMaterialIsNot() throws {
        let directory = try makeTemporaryDirectory(self)
        let source = try TaxdumpFixture.write(to: directory)
        try writeTSV(source, "nodes.dmp", TaxdumpFixture.nodes + [
            dumpRow("10239", "1", "superkingdom", "", "9", "0", "1", "0", "0", "0", "0", "0", ""),
            dumpRow("11676", "10239", "species", "", "9", "1", "1", "1", "0", "1", "1", "0", ""),
        ])
        try writeTSV(source, "names.dmp", TaxdumpFixture.names + [
            dumpRow("10239", "Viruses", "", "scientific name"),
            dumpRow("11676", "Human immunodeficiency virus 1", "", "scientific name"),
            dumpRow("11676", "HIV-1", "", "genbank acronym"),
            dumpRow("11676", "HIV1", "", "acronym"),
            dumpRow("7711", "Pisces", "", "in-part"),
            dumpRow("9694", "Felis tigris altaica", "", "misnomer"),
            dumpRow("9685", "Felis silvestris catus", "", "genbank synonym"),
        ])
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        let output = directory + "/taxonomy.sqlite"
        let report = try TaxonomyBuilder(options: options, logger: quiet).build(source: source, output: output)
        let expected: [String: (type: String, nameClass: String)] = [
            "9689|lion": ("common", "genbank common name"),
            "9689|African lion": ("common", "common name"),
            "33208|metazoans": ("common", "blast name"),
            "9689|Felis leo": ("synonym", "synonym"),
            "9685|Felis silvestris catus": ("synonym", "genbank synonym"),
            "9694|Tigris tigris": ("synonym", "equivalent name"),
            "11676|HIV-1": ("acronym", "genbank acronym"),
            "11676|HIV1": ("acronym", "acronym"),
            "9689|Panthera leo persica": ("includes", "includes"),
            "7711|Pisces": ("includes", "in-part"),
            "9689|Panthera leo (Linnaeus, 1758)": ("authority", "authority"),
            "9689|Pantera leo": ("misspelling", "misspelling"),
            "9694|Felis tigris altaica": ("misspelling", "misnomer"),
        ]
        try read(output) { db in
            let rows = try Row.fetchAll(db, sql: "SELECT taxon_id, name, lang, name_type, name_class, is_preferred FROM names")
            let byKey = Dictionary(rows.map { ("\($0["taxon_id"] as Int64)|\($0["name"] as String)", $0) },
                                   uniquingKeysWith: { first, _ in first })
            for (key, value) in expected {
                let row = try XCTUnwrap(byKey[key], "\(key) not written")
                XCTAssertEqual(row["name_type"], value.type, key)
                XCTAssertEqual(row["name_class"], value.nameClass, key)
            }
            for row in rows where !["common", "vernacular"].contains(row["name_type"] as String) {
                XCTAssertEqual(row["lang"], "und", "\(row)")
                XCTAssertEqual(row["is_preferred"], 0 as Int64, "\(row)")
            }
            XCTAssertFalse(rows.contains { ($0["name"] as String).hasPrefix("ZMB") }, "type material is not a name")
            XCTAssertFalse(rows.contains { ($0["name_class"] as String?) == "type material" })
            XCTAssertEqual(rows.filter { ($0["name_class"] as String?) == nil }.count, 0, "every NCBI name has its class")
        }
        XCTAssertNil(report.nameClasses["(none)"])
        XCTAssertNil(report.nameClasses["type material"])
        XCTAssertEqual(report.nameClasses["genbank acronym"], 1)
        XCTAssertEqual(report.nameClasses["in-part"], 1)
        XCTAssertEqual(report.nameClasses.values.reduce(0, +), report.names)
    }

    func testRetiredIDs_keptInEveryBuild_mergedOnlyIntoATaxonTheDatabaseHolds() throws {
        let path = try build { source in
            // 777 went to a taxon this source does not have; 9685 is both merged and alive (kept alive).
            try writeTSV(source, "merged.dmp", TaxdumpFixture.merged + [dumpRow("777", "424242"), dumpRow("9685", "9689")])
            try writeTSV(source, "delnodes.dmp", TaxdumpFixture.deleted + [dumpRow("9689")])
        }
        try read(path) { db in
            let merged = try Row.fetchAll(db, sql: "SELECT old_id, new_id FROM merged_ids ORDER BY old_id")
                .map { [$0["old_id"] as Int64, $0["new_id"] as Int64] }
            XCTAssertEqual(merged, [[12345, 9689], [54321, 9685]])
            XCTAssertEqual(try Int64.fetchAll(db, sql: "SELECT id FROM deleted_ids ORDER BY id"), [88888, 99999],
                           "a deleted id that is still a taxon must not be listed")
        }
    }
}
