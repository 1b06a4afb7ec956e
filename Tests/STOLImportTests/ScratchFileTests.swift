import Foundation
import GRDB
import Glibc
import STOLImport
import STOLImportCore
import STOLModel
import STOLTestFixtures
import STOLVerifier
import XCTest

final class ScratchFileTests: XCTestCase {
    func testScratchFile_hasNoName_soAKilledVerifierLeavesNothingBehind() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        let scratch = try ScratchFile(directory: directory)
        var info = stat()
        XCTAssertEqual(fstat(scratch.descriptor, &info), 0)
        XCTAssertEqual(info.st_nlink, 0, "no directory entry points at it")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [])
    }

    func testRunsOfZeros_areHoles_andReadBackAsZeros() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        let scratch = try ScratchFile(directory: directory)
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        for _ in 0..<64 { try zeros.withUnsafeBytes { try scratch.append($0) } }
        try [UInt8](repeating: 7, count: 10).withUnsafeBytes { try scratch.append($0) }
        try scratch.finish()
        var info = stat()
        fstat(scratch.descriptor, &info)
        XCTAssertEqual(info.st_size, 64 << 20 + 10)
        XCTAssertLessThan(Int(info.st_blocks) * 512, 1 << 20, "64 MiB of zeros took no disk blocks")
        var tail = [UInt8](repeating: 1, count: 20)
        let got = try tail.withUnsafeMutableBytes { try scratch.read(into: $0, at: UInt64(64 << 20) - 10) }
        XCTAssertEqual(got, 20)
        XCTAssertEqual(tail, [UInt8](repeating: 0, count: 10) + [UInt8](repeating: 7, count: 10))
        try scratch.reset()
        fstat(scratch.descriptor, &info)
        XCTAssertEqual(info.st_size, 0)
    }

    func testDatabaseChecks_readTheDatabaseThroughTheDescriptor_andReportItsBuildTime() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        let scratch = try ScratchFile(directory: directory)
        let sqlite = try ImportFixture.database(builtAt: "2025-05-05T05:05:05Z", in: directory)
        try sqlite.withUnsafeBytes { try scratch.append($0) }
        try scratch.finish()
        var fractions: [Double] = []
        let current = UInt32(TaxonomySchema.currentVersion)
        let facts = try DatabaseChecks.run(descriptor: scratch.descriptor, headerSchemaVersion: current,
                                           progress: { fractions.append($0) })
        XCTAssertEqual(facts.schemaVersion, current)
        XCTAssertEqual(facts.buildTime, "2025-05-05T05:05:05Z")
        XCTAssertEqual(facts.provenance?.idNamespace, "col-id", "the pipeline's provenance, read through the descriptor too")
        XCTAssertEqual(facts.release, ReleaseName.unknown, "a ColDP without a version names no release")
        XCTAssertEqual(fractions, fractions.sorted(), "progress never goes back")
        XCTAssertThrowsError(try DatabaseChecks.run(descriptor: scratch.descriptor, headerSchemaVersion: current - 1)) { error in
            XCTAssertEqual((error as? ImportError)?.protocolError.details["check"], "database_schema_version")
        }
    }

    /// What each depth of the integrity check catches: an index whose entries disagree
    /// with its table's rows, every page sound, fails `integrity_check` and passes the
    /// page walk (what a row delta's result gets: SQLite kept its indexes in step
    /// itself); a page of garbage fails both.
    func testIntegrityDepths_thePageWalkMissesOnlyAnIndexThatDisagreesWithItsTable() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        let current = UInt32(TaxonomySchema.currentVersion)
        let createExtra = """
            CREATE TABLE extra (id INTEGER PRIMARY KEY, a INTEGER NOT NULL, b INTEGER NOT NULL);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
            INSERT INTO extra SELECT i, i, -i FROM n;
            CREATE INDEX extra_a ON extra(a);
            """
        let disagreeing = try ImportFixture.edited(in: directory) { db in
            try db.execute(sql: createExtra)
            // The index's entries stay those of column a; its definition now says column b.
            try db.execute(sql: """
                PRAGMA writable_schema = ON;
                UPDATE sqlite_master SET sql = 'CREATE INDEX extra_a ON extra(b)' WHERE name = 'extra_a';
                PRAGMA writable_schema = OFF;
                """)
        }
        XCTAssertThrowsError(try DatabaseChecks.run(path: disagreeing, headerSchemaVersion: current, depth: .full)) { error in
            XCTAssertEqual((error as? ImportError)?.protocolError.details["check"], "integrity")
        }
        XCTAssertEqual(try DatabaseChecks.run(path: disagreeing, headerSchemaVersion: current, depth: .pages).schemaVersion,
                       current)

        let garbage = try ImportFixture.edited(in: directory) { try $0.execute(sql: createExtra) }
        let (root, pageSize) = try DatabaseQueue(path: garbage).read { db in
            (try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'extra_a'") ?? 0,
             try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096)
        }
        XCTAssertGreaterThan(root, 1)
        let file = try XCTUnwrap(FileHandle(forUpdatingAtPath: garbage))
        try file.seek(toOffset: UInt64((root - 1) * pageSize))
        try file.write(contentsOf: Data(repeating: 0xAB, count: pageSize))
        try file.close()
        for depth in [DatabaseChecks.IntegrityDepth.full, .pages] {
            XCTAssertThrowsError(try DatabaseChecks.run(path: garbage, headerSchemaVersion: current, depth: depth)) { error in
                XCTAssertEqual((error as? ImportError)?.protocolError.details["check"], "integrity", "\(depth)")
            }
        }
    }

    /// Only the database a row delta's application wrote gets the page walk alone: a full
    /// file's and a byte delta's are bytes the file laid out.
    func testIntegrityDepth_isThePageWalkForARowDeltasResultAlone() {
        XCTAssertEqual(DatabaseChecks.IntegrityDepth(kind: .rowDelta), .pages)
        XCTAssertEqual(DatabaseChecks.IntegrityDepth(kind: .delta), .full)
        XCTAssertEqual(DatabaseChecks.IntegrityDepth(kind: .database), .full)
        XCTAssertEqual(DatabaseChecks.IntegrityDepth(kind: nil), .full, "a version 1 file has no kind")
    }

    /// A reference built before schema 3 keeps being accepted: each version is
    /// checked against its own tables and columns, and a database of a version
    /// that lacks one of that version's is refused.
    func testDatabaseChecks_acceptSchema1And2Databases_butNoneWithoutItsVersionsTables() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        let schema1 = try ImportFixture.edited(in: directory, ImportFixture.downgradeToSchema1)
        XCTAssertEqual(try DatabaseChecks.run(path: schema1, headerSchemaVersion: 1).schemaVersion, 1)
        let schema2 = try ImportFixture.edited(in: directory, ImportFixture.downgradeToSchema2)
        XCTAssertEqual(try DatabaseChecks.run(path: schema2, headerSchemaVersion: 2).schemaVersion, 2)
        let lacking = try ImportFixture.edited(in: directory) {
            try ImportFixture.downgradeToSchema2($0)
            try $0.execute(sql: "DROP TABLE tree_nodes")
        }
        XCTAssertThrowsError(try DatabaseChecks.run(path: lacking, headerSchemaVersion: 2)) { error in
            XCTAssertEqual((error as? ImportError)?.protocolError.details["check"], "tables_and_columns")
            XCTAssertTrue("\(error)".contains("tree_nodes"), "\(error)")
        }
        // Schema 3 without the view's parent column.
        let noView = try ImportFixture.edited(in: directory) {
            try $0.execute(sql: "DROP INDEX idx_taxa_main_parent; ALTER TABLE taxa DROP COLUMN main_parent_id")
        }
        XCTAssertThrowsError(try DatabaseChecks.run(path: noView, headerSchemaVersion: 3)) { error in
            XCTAssertEqual((error as? ImportError)?.protocolError.details["check"], "tables_and_columns")
            XCTAssertTrue("\(error)".contains("main_parent_id"), "\(error)")
        }
    }

    func testDatabaseChecks_stopWhenCancelled() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolimp")
        let padded = directory + "/padded.sqlite"
        try StolCorpus.padded(try ImportFixture.databasePath(), megabytes: 8, to: padded)
        var calls = 0
        XCTAssertThrowsError(try DatabaseChecks.run(path: padded, headerSchemaVersion: UInt32(TaxonomySchema.currentVersion),
                                                    isCancelled: { calls += 1; return calls > 2 })) { error in
            guard case .cancelled = error as? ImportError else { return XCTFail("\(error)") }
        }
    }
}
