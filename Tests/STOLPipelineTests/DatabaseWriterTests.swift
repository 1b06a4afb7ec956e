import Foundation
import GRDB
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

final class DatabaseWriterTests: XCTestCase {
    /// Builds the fixture with the whole pipeline into a fresh directory.
    private func buildFixture(topN: Int = 10, eulerTour: Bool = true) throws -> (path: String, report: TaxonomyDatabaseWriter.Report) {
        let directory = try makeTemporaryDirectory(self)
        let source = try FelidaeFixture.write(to: directory + "/source-dir-\(topN)", creating: true)
        var options = TaxonomyBuilder.Options()
        options.topN = topN
        options.eulerTour = eulerTour
        let output = directory + "/taxonomy.sqlite"
        let report = try TaxonomyBuilder(options: options, logger: quietLogger).build(source: source, output: output)
        return (output, report)
    }

    private func inspect<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    /// The view as the database stores it.
    private func viewNodes(of db: Database) throws -> [TreeNode] {
        try Row.fetchAll(db, sql: """
            SELECT id, main_parent_id AS parent_id, main_rank AS rank, scientific_name FROM taxa WHERE main_rank IS NOT NULL
            """).map { row in
            TreeNode(id: row["id"], parentID: row["parent_id"], rank: TaxonRank(rawValue: row["rank"])!,
                     scientificName: row["scientific_name"])
        }
    }

    // MARK: Schema

    func testWrite_createsEveryRequiredTableColumnAndIndexOfSchemaVersion3() throws {
        let (path, _) = try buildFixture()
        try inspect(path) { db in
            let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
            for (table, columns) in TaxonomySchema.requiredColumns(version: 3) {
                XCTAssertTrue(tables.contains(table), "missing table \(table)")
                let present = Set(try db.columns(in: table).map(\.name))
                XCTAssertTrue(present.isSuperset(of: columns), "\(table) lacks \(Set(columns).subtracting(present))")
            }
            XCTAssertTrue(tables.isSuperset(of: ["merged_ids", "deleted_ids", "prominence"]))
            XCTAssertFalse(tables.contains("tree_nodes"), "schema 3 folds the whole tree into taxa")
            XCTAssertEqual(try Int.fetchAll(db, sql: "SELECT version FROM schema_version"), [3])
            XCTAssertEqual(TaxonomySchema.currentVersion, 3)
            let indexes = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'"))
            XCTAssertTrue(indexes.isSuperset(of: TaxonomySchema.requiredIndexes(version: 3)))
            XCTAssertTrue(indexes.isSuperset(of: ["idx_taxa_parent", "idx_taxa_main_parent", "idx_names_taxon"]))
            XCTAssertEqual(try String.fetchOne(db, sql: "PRAGMA integrity_check"), "ok")
            XCTAssertEqual(try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count, 0)
        }
    }

    func testWrite_leavesRollbackJournalModeDeleteNotWAL() throws {
        let (path, _) = try buildFixture()
        // Bytes 18 and 19 of the header are 2 for a WAL database and 1 for rollback journals.
        let header = try XCTUnwrap(FileHandle(forReadingAtPath: path)).readData(ofLength: 100)
        XCTAssertEqual(header.prefix(16), Data("SQLite format 3\0".utf8))
        XCTAssertEqual(header[18], 1)
        XCTAssertEqual(header[19], 1)
        for suffix in ["-wal", "-shm", "-journal", ".partial"] {
            XCTAssertFalse(fileExists(path + suffix), "\(suffix) left behind")
        }
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        XCTAssertEqual(try queue.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }, "delete")
    }

    func testWrite_reportCountsWhatWasWritten() throws {
        let (path, report) = try buildFixture(topN: 3)
        try inspect(path) { db in
            XCTAssertEqual(report.taxa, try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa"))
            XCTAssertEqual(report.taxa, FelidaeFixture.acceptedUsageCount, "every node is a row")
            XCTAssertEqual(report.mainTaxa, FelidaeFixture.acceptedUsageCount - FelidaeFixture.intermediateIDs.count)
            XCTAssertEqual(report.mainTaxa, try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa WHERE main_rank IS NOT NULL"))
            XCTAssertEqual(report.names, try Int.fetchOne(db, sql: "SELECT count(*) FROM names"))
            XCTAssertEqual(report.references, try Int.fetchOne(db, sql: "SELECT count(*) FROM refs"))
            XCTAssertEqual(report.traits, try Int.fetchOne(db, sql: "SELECT count(*) FROM traits"))
            XCTAssertEqual(report.eulerTour, try Int.fetchOne(db, sql: "SELECT count(*) FROM euler_tour"))
            XCTAssertEqual(report.topNRelatives, try Int.fetchOne(db, sql: "SELECT count(*) FROM top_n_relatives"))
        }
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)
        XCTAssertEqual(report.bytes, size.int64Value)
    }

    func testWrite_storesTaxaNamesAndTraitsAsNormalised() throws {
        let (path, _) = try buildFixture()
        try inspect(path) { db in
            let lion = try XCTUnwrap(Row.fetchOne(db, sql: "SELECT * FROM taxa WHERE id = 9689"))
            XCTAssertEqual(lion["parent_id"] as Int64?, 9688)
            XCTAssertEqual(lion["rank"] as String?, "species")
            XCTAssertEqual(lion["scientific_name"] as String?, "Panthera leo")
            XCTAssertEqual(lion["author"] as String?, "(Linnaeus, 1758)")
            XCTAssertEqual(lion["year"] as Int?, 1758)
            XCTAssertEqual(lion["status"] as String?, "accepted")
            XCTAssertEqual(lion["conservation"] as String?, "VU")
            XCTAssertEqual(try String.fetchAll(db, sql: """
                SELECT name FROM names WHERE taxon_id = 9689 AND lang = 'es' AND is_preferred = 1 AND name_type = 'common'
                """), ["león"])
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT name FROM names WHERE name_type = 'synonym' AND taxon_id = 9689"),
                           ["Felis leo"])
            let trait = try XCTUnwrap(Row.fetchOne(db, sql: "SELECT * FROM traits WHERE taxon_id = 9689 AND trait_key = 'body_length'"))
            XCTAssertEqual(trait["trait_value"] as String?, "2.0")
            XCTAssertEqual(trait["unit"] as String?, "m")
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT ref_type FROM refs WHERE taxon_id = 9689"), ["conservation"])
        }
    }

    // MARK: Full-text index

    func testWrite_ftsRowIDIsTheTaxonID() throws {
        let (path, _) = try buildFixture()
        try inspect(path) { db in
            XCTAssertEqual(try Int64.fetchAll(db, sql: "SELECT rowid FROM fts_taxa WHERE fts_taxa MATCH 'lion'"), [9689])
            XCTAssertEqual(try Int64.fetchAll(db, sql: "SELECT rowid FROM fts_taxa WHERE fts_taxa MATCH 'leon'"), [9689],
                           "diacritics are folded by the tokenizer")
            XCTAssertEqual(try Int64.fetchAll(db, sql: "SELECT rowid FROM fts_taxa WHERE fts_taxa MATCH 'synonyms:uncia'"),
                           [9688])
            XCTAssertEqual(try Int64.fetchAll(db, sql: "SELECT rowid FROM fts_taxa WHERE fts_taxa MATCH 'scientific_name:robur'"),
                           [38942])
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM fts_taxa"),
                           try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa"))
        }
    }

    // MARK: Euler tour and closest relatives

    func testWrite_eulerTourAndFirstOccurrenceAgreeWithTheTree() throws {
        let (path, _) = try buildFixture()
        try inspect(path) { db in
            let nodes = try viewNodes(of: db)
            let tree = try TaxonomyTree(testNodes: nodes)
            let naive = NaiveTree(nodes)
            let rows = try Row.fetchAll(db, sql: "SELECT seq, taxon_id, depth FROM euler_tour ORDER BY seq")
            let roots = try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa WHERE main_parent_id IS NULL AND main_rank IS NOT NULL") ?? 0
            XCTAssertEqual(roots, 2)
            XCTAssertEqual(rows.count, 2 * tree.count - roots)
            XCTAssertEqual(rows.map { $0["seq"] as Int }, Array(0..<rows.count))
            let expected = tree.eulerTour(in: .main)
            XCTAssertEqual(rows.map { $0["taxon_id"] as Int64 }, expected.map { tree.id(at: $0.node) })
            for row in rows {
                let id: Int64 = row["taxon_id"]
                XCTAssertEqual(row["depth"] as Int, naive.depth(id), "depth of \(id)")
            }
            // first_occurrence: one row per taxon, the first seq at which it appears.
            let first = Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT taxon_id, seq FROM first_occurrence")
                .map { ($0["taxon_id"] as Int64, $0["seq"] as Int) })
            XCTAssertEqual(first.count, tree.count)
            var seen: [Int64: Int] = [:]
            for row in rows where seen[row["taxon_id"]] == nil { seen[row["taxon_id"]] = row["seq"] }
            XCTAssertEqual(first, seen)
            // The RMQ over the stored tour answers LCA as a path-to-root walk does (same root tree).
            let depths = rows.map { $0["depth"] as Int32 }, ids = rows.map { $0["taxon_id"] as Int64 }
            for a in nodes {
                for b in nodes {
                    guard let lca = naive.lca(a.id, b.id) else { continue }
                    let range = min(first[a.id]!, first[b.id]!)...max(first[a.id]!, first[b.id]!)
                    let shallowest = range.min { depths[$0] < depths[$1] }!
                    XCTAssertEqual(ids[shallowest], lca, "LCA(\(a.id), \(b.id))")
                }
            }
        }
    }

    func testWrite_topNRelativesEqualClosestRelativesWithRankOrderFrom1() throws {
        for topN in [3, 10] {
            let (path, report) = try buildFixture(topN: topN)
            try inspect(path) { db in
                let nodes = try viewNodes(of: db)
                let naive = NaiveTree(nodes)
                var expectedRows = 0
                for id in nodes.filter({ $0.rank == .species }).map(\.id) {
                    let stored = try Row.fetchAll(db, sql: """
                        SELECT relative_id, rank_order, lca_id, lca_depth, distance FROM top_n_relatives
                        WHERE taxon_id = ? ORDER BY rank_order
                        """, arguments: [id])
                    // Every other species by distance, name bytes, id: a brute force.
                    let expected = naive.ranking(of: id).prefix(topN)
                    expectedRows += expected.count
                    XCTAssertEqual(stored.map { $0["rank_order"] as Int }, (0..<expected.count).map { $0 + 1 })
                    XCTAssertEqual(stored.map { $0["relative_id"] as Int64 }, expected.map(\.id), "relatives of \(id)")
                    XCTAssertEqual(stored.map { $0["lca_id"] as Int64 }, expected.map(\.lca))
                    XCTAssertEqual(stored.map { $0["lca_depth"] as Int }, expected.map { naive.depth($0.lca) })
                    XCTAssertEqual(stored.map { $0["distance"] as Int }, expected.map(\.distance))
                }
                XCTAssertEqual(report.topNRelatives, expectedRows)
                XCTAssertEqual(try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM top_n_relatives r JOIN taxa t ON t.id = r.taxon_id WHERE t.main_rank IS NOT 'species'
                    """), 0, "only species have relatives")
                // The lion's nearest relatives are the other big cats, two edges away.
                let lion = try Row.fetchAll(db, sql: """
                    SELECT relative_id, lca_id, distance FROM top_n_relatives WHERE taxon_id = 9689 ORDER BY rank_order
                    """)
                XCTAssertEqual(lion.prefix(3).map { $0["relative_id"] as Int64 }, [9690, 9691, 9694])
                XCTAssertTrue(lion.prefix(3).allSatisfy { ($0["lca_id"] as Int64) == 9688 && ($0["distance"] as Int) == 2 })
                if topN == 10 {
                    // Then the cat (family, 4), the wolf (order, 6), us (class, 8), the oak (domain, 14); never E. coli.
                    XCTAssertEqual(lion.dropFirst(3).map { $0["relative_id"] as Int64 }, [9685, 9612, 9606, 38942])
                    XCTAssertEqual(lion.dropFirst(3).map { $0["distance"] as Int }, [4, 6, 8, 14])
                }
            }
        }
    }

    /// `top_n_relatives` (most of a full database's bytes) is stored in the b-tree of its
    /// key, without rowids: a rowid table numbered its rows in insertion order, so one
    /// species added to a release renumbered every later row, and every page of the table
    /// and of the key's second b-tree changed in the delta between two releases.
    func testWrite_topNRelativesAreKeyedByTaxonAndRankOrder_withNoRowIDAndNoSecondBTree() throws {
        let (path, _) = try buildFixture()
        try inspect(path) { db in
            let table = try XCTUnwrap(try Row.fetchOne(db, sql: "SELECT wr, ncol FROM pragma_table_list('top_n_relatives')"))
            XCTAssertEqual(table["wr"] as Int, 1, "top_n_relatives is WITHOUT ROWID")
            XCTAssertEqual(table["ncol"] as Int, 6)
            XCTAssertEqual(try Int.fetchOne(db, sql: """
                SELECT count(*) FROM sqlite_master WHERE tbl_name = 'top_n_relatives' AND type = 'index'
                """), 0, "no b-tree besides the table's own")
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info('sqlite_autoindex_top_n_relatives_1')"),
                           ["taxon_id", "rank_order"], "the primary key is the table's order")
        }
    }

    // MARK: Failure

    /// A reference build (`--top-n 0 --no-euler-tour`) keeps the three positional tables
    /// in its schema, empty (the server computes what they would hold); every table has a
    /// primary key and the file's schema cookie is the one a row delta's result gets
    /// (STOL-FORMAT.md §10.2: 1000, written plus one by VACUUM INTO).
    func testWrite_aReferenceBuild_leavesThePositionalTablesEmpty_keysEveryTable_andFixesTheSchemaCookie() throws {
        let (path, report) = try buildFixture(topN: 0, eulerTour: false)
        XCTAssertEqual(report.eulerTour, 0)
        XCTAssertEqual(report.topNRelatives, 0)
        try inspect(path) { db in
            for table in ["euler_tour", "first_occurrence", "top_n_relatives"] {
                XCTAssertTrue(try db.tableExists(table), table)
                XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)"), 0, table)
            }
            XCTAssertGreaterThan(try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa") ?? 0, 20)
            let unkeyed = try String.fetchAll(db, sql: """
                SELECT m.name FROM sqlite_master AS m WHERE m.type = 'table' AND m.sql NOT LIKE 'CREATE VIRTUAL TABLE%'
                AND (SELECT count(*) FROM pragma_table_info(m.name) WHERE pk > 0) = 0
                """)
            XCTAssertEqual(unkeyed, [], "a row delta names rows by their primary key")
        }
        let header = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)).prefix(44))
        XCTAssertEqual(header[40..<44].reduce(0) { $0 << 8 | UInt32($1) }, 1001, "the schema cookie, big-endian at offset 40")
        let (full, _) = try buildFixture()
        try inspect(full) { db in
            XCTAssertGreaterThan(try Int.fetchOne(db, sql: "SELECT count(*) FROM euler_tour") ?? 0, 0)
            XCTAssertGreaterThan(try Int.fetchOne(db, sql: "SELECT count(*) FROM top_n_relatives") ?? 0, 0)
        }
    }

    func testWrite_whenTheSourceHasACycle_failsAndLeavesNoFileAndNoPartial() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("1", "", "accepted", "domain", "Bacteria"),
            row("2", "3", "accepted", "genus", "Alpha"),
            row("3", "2", "accepted", "genus", "Beta"),
            row("4", "2", "accepted", "species", "Alpha one"),
        ])
        let output = directory + "/out.sqlite"
        XCTAssertThrowsError(try TaxonomyBuilder(logger: quietLogger).build(source: directory, output: output)) { error in
            guard case TaxonomyDatabaseWriter.WriteError.invalidTree(let detail)? = error as? TaxonomyDatabaseWriter.WriteError else {
                return XCTFail("expected invalidTree, got \(error)")
            }
            XCTAssertTrue(detail.contains("cycle"), detail)
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("out.sqlite") }
        XCTAssertEqual(left, [], "nothing may be left at or next to the output path")
    }

    func testWrite_whenTheSourceHasASelfParent_failsAndLeavesNoFile() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("1", "", "accepted", "domain", "Bacteria"),
            row("2", "2", "accepted", "genus", "Ouroboros"),
        ])
        let output = directory + "/out.sqlite"
        XCTAssertThrowsError(try TaxonomyBuilder(logger: quietLogger).build(source: directory, output: output))
        XCTAssertFalse(fileExists(output))
        XCTAssertFalse(fileExists(output + ".partial"))
    }

    func testWrite_whenRebuilt_replacesTheOutputAndLeavesNoPartial() throws {
        let directory = try makeTemporaryDirectory(self)
        let source = try FelidaeFixture.write(to: directory + "/src", creating: true)
        let output = directory + "/taxonomy.sqlite"
        try Data("stale".utf8).write(to: URL(fileURLWithPath: output))
        try Data("stale partial".utf8).write(to: URL(fileURLWithPath: output + ".partial"))
        _ = try TaxonomyBuilder(logger: quietLogger).build(source: source, output: output)
        XCTAssertFalse(fileExists(output + ".partial"))
        XCTAssertEqual(try inspect(output) { try Int.fetchOne($0, sql: "SELECT count(*) FROM taxa WHERE id = 9689") }, 1)
    }

    // MARK: The committed curated source

    func testBuild_curatedSource_answersLionAndOak() throws {
        let directory = try makeTemporaryDirectory(self)
        let output = directory + "/bundled.sqlite"
        let report = try TaxonomyBuilder(logger: quietLogger).build(source: curatedSourceDirectory, output: output)
        // Every accepted species of the source is kept (counted from the committed file, not hard-coded).
        let sourceText = try String(contentsOfFile: curatedSourceDirectory + "/NameUsage.tsv", encoding: .utf8)
        var sourceSpecies = 0
        for line in sourceText.split(separator: "\n") {
            let fields: [Substring] = line.split(separator: "\t", omittingEmptySubsequences: false)
            if fields.count > 3, fields[2] == "accepted", fields[3] == "species" { sourceSpecies += 1 }
        }
        XCTAssertGreaterThan(sourceSpecies, 300)
        XCTAssertGreaterThan(report.taxa, sourceSpecies)
        try inspect(output) { db in
            XCTAssertEqual(try String.fetchOne(db, sql: "SELECT scientific_name FROM taxa WHERE id = 9689"), "Panthera leo")
            XCTAssertEqual(try Int64.fetchOne(db, sql: "SELECT parent_id FROM taxa WHERE id = 9689"), 9688)
            XCTAssertEqual(try String.fetchOne(db, sql: "SELECT rank FROM taxa WHERE id = 9688"), "genus")
            XCTAssertEqual(try String.fetchOne(db, sql: "SELECT scientific_name FROM taxa WHERE id = 38942"), "Quercus robur")
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa WHERE main_rank = 'species'"), sourceSpecies)
            XCTAssertTrue(try String.fetchAll(db, sql: "SELECT name FROM names WHERE taxon_id = 9689 AND lang = 'es'")
                .contains("león"))
            // The lion's four closest relatives are the other Panthera species.
            let relatives = try Int64.fetchAll(db, sql: """
                SELECT relative_id FROM top_n_relatives WHERE taxon_id = 9689 AND distance = 2 ORDER BY rank_order
                """)
            XCTAssertEqual(relatives, [9690, 9691, 9694, 29064])
            XCTAssertEqual(try Int64.fetchAll(db, sql: "SELECT rowid FROM fts_taxa WHERE fts_taxa MATCH 'leon'").contains(9689), true)
        }
    }
}
