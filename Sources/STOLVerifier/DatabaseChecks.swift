import GRDBSQLite
import STOLFormat
import STOLImportCore
import STOLModel

/// The verifier's checks of the decompressed database, after the `.stol` format
/// checks (`protocol/STOL-FORMAT.md` §6): the checklist's schema version and
/// integrity steps, then the shape the taxonomy server relies on.
///
/// 1. it is an SQLite 3 database (the first 16 bytes, checked while inflating);
/// 2. `schema_version` holds exactly one row, equal to the (signed) header's version;
/// 3. `PRAGMA integrity_check` answers `ok` (`quick_check` for a row delta's result:
///    ``IntegrityDepth``);
/// 4. every table, column and index of ``TaxonomySchema`` the server reads exists;
/// 5. the `provenance` table, when there is one, is whole and names a valid release.
///
/// Steps 2 and 5 are the rules of the one reader of a database's facts
/// (``DatabaseFacts``), which the coordinator and the server read it with too.
///
/// Every failure is ``ImportError/databaseCorrupt(check:detail:)`` naming the step.
public enum DatabaseChecks {
    /// How much of SQLite's integrity check a database gets.
    ///
    /// A full file's database is bytes someone else laid out: every b-tree page, and
    /// every index entry against its table row (`integrity_check`). A row delta's result
    /// (`protocol/STOL-FORMAT.md` §10.2) is not: SQLite wrote it in this process, with
    /// `VACUUM INTO`, from the installed base (its bytes pinned by check 11, its indexes
    /// checked against its tables when it was installed) after applying typed row
    /// changes through SQLite's own statements, which kept every index in step and
    /// enforced every `NOT NULL`, `CHECK` and `UNIQUE` (a violation is a conflict, and a
    /// conflict aborts). Cross-checking those indexes would check SQLite against itself;
    /// the page walk (`quick_check`: every page, every cell, `NOT NULL` and `CHECK`)
    /// still runs. On the 2024.9.7 reference build it is 0.9 s against 7.3 s
    /// (docs/benchmarks/delta.md). A byte delta's result is bytes the file laid out,
    /// as a full file's are.
    public enum IntegrityDepth: Sendable {
        /// `PRAGMA integrity_check`: for bytes that came from the file.
        case full
        /// `PRAGMA quick_check`: for a database SQLite itself wrote from verified parts.
        case pages

        /// The depth for the database a file of `kind` yields: the page walk for a row
        /// delta's result alone.
        public init(kind: StolHeader.Kind?) {
            self = kind == .rowDelta ? .pages : .full
        }

        var pragma: String {
            switch self {
            case .full: "integrity_check"
            case .pages: "quick_check"
            }
        }
    }

    /// The 16 bytes every SQLite 3 database file starts with.
    public static let sqliteMagic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    /// Check 1 on the first bytes of the decompressed stream.
    public static func checkHeader(_ prefix: some Collection<UInt8>) throws(ImportError) {
        guard prefix.count >= sqliteMagic.count, zip(prefix, sqliteMagic).allSatisfy({ $0 == $1 }) else {
            throw .databaseCorrupt(check: .sqliteHeader, detail: "the payload is not an SQLite 3 database")
        }
    }

    /// Checks 2–5 on the database at `path`, opened read-only. `progress` gets
    /// 0…1 during the integrity check; `isCancelled` is polled while it runs.
    public static func run(path: String, headerSchemaVersion: UInt32, depth: IntegrityDepth = .full,
                           progress: @escaping (Double) -> Void = { _ in },
                           isCancelled: @escaping () -> Bool = { false }) throws(ImportError) -> DatabaseFacts {
        try run(.path(path), headerSchemaVersion: headerSchemaVersion, depth: depth, progress: progress, isCancelled: isCancelled)
    }

    /// Checks 2–5 on the database in the file open as `descriptor` (the verifier's scratch file).
    public static func run(descriptor: Int32, headerSchemaVersion: UInt32, depth: IntegrityDepth = .full,
                           progress: @escaping (Double) -> Void = { _ in },
                           isCancelled: @escaping () -> Bool = { false }) throws(ImportError) -> DatabaseFacts {
        try run(.descriptor(descriptor), headerSchemaVersion: headerSchemaVersion, depth: depth, progress: progress,
                isCancelled: isCancelled)
    }

    static func run(_ location: ReadOnlySQLite.Location, headerSchemaVersion: UInt32, depth: IntegrityDepth,
                           progress: @escaping (Double) -> Void = { _ in },
                           isCancelled: @escaping () -> Bool = { false }) throws(ImportError) -> DatabaseFacts {
        let db: ReadOnlySQLite
        do {
            db = try ReadOnlySQLite(location)
            // The sandboxed verifier may not create files: any temporary table stays in memory.
            _ = try db.rows("PRAGMA temp_store = MEMORY")
        } catch {
            throw .databaseCorrupt(check: .sqliteHeader, detail: error.message)
        }
        var facts = try schemaVersion(db, header: headerSchemaVersion)
        try integrity(db, depth: depth, progress: progress, isCancelled: isCancelled)
        try DatabaseTables.shape(db, version: Int(facts.schemaVersion))
        do throws(DatabaseFactsError) {
            facts.provenance = try DatabaseFacts.readProvenance(db)
        } catch {
            throw ImportError(error)
        }
        return facts
    }

    static func schemaVersion(_ db: ReadOnlySQLite, header: UInt32) throws(ImportError) -> DatabaseFacts {
        let facts: DatabaseFacts
        do throws(DatabaseFactsError) {
            facts = try DatabaseFacts.readSchemaVersion(db)
        } catch {
            throw ImportError(error)
        }
        guard facts.schemaVersion == header else {
            throw .databaseCorrupt(check: .schemaVersionRow,
                                   detail: "the signed header says schema version \(header), the database says \(facts.schemaVersion)")
        }
        return facts
    }

    /// `PRAGMA integrity_check` (or `quick_check`), with SQLite's progress handler for
    /// progress and cancellation.
    static func integrity(_ db: ReadOnlySQLite, depth: IntegrityDepth, progress: @escaping (Double) -> Void,
                          isCancelled: @escaping () -> Bool) throws(ImportError) {
        let pages: Int64
        do {
            pages = try db.rows("PRAGMA page_count").first?.first?.integer ?? 0
        } catch {
            throw .databaseCorrupt(check: .integrity, detail: error.message)
        }
        let estimate = IntegrityProgress(pages: Int(pages), depth: depth, progress: progress, isCancelled: isCancelled)
        let context = Unmanaged.passRetained(estimate)
        defer { context.release() }
        sqlite3_progress_handler(db.connection, IntegrityProgress.interval, { raw in
            Unmanaged<IntegrityProgress>.fromOpaque(raw!).takeUnretainedValue().step() ? 1 : 0
        }, context.toOpaque())
        defer { sqlite3_progress_handler(db.connection, 0, nil, nil) }
        let rows: [[ReadOnlySQLite.Value]]
        do {
            rows = try db.rows("PRAGMA \(depth.pragma)(1)")
        } catch {
            if estimate.cancelled { throw .cancelled("the coordinator closed the connection") }
            throw .databaseCorrupt(check: .integrity, detail: error.message)
        }
        let answer = rows.compactMap { $0.first?.text }
        guard answer == ["ok"] else {
            throw .databaseCorrupt(check: .integrity, detail: answer.first ?? "no answer")
        }
    }
}

/// Turns SQLite's progress callbacks (every ``interval`` virtual machine steps)
/// into a fraction of the integrity check, estimated from the page count, and
/// stops the check when the caller is gone.
final class IntegrityProgress {
    /// VM steps between callbacks: about 0.2 ms of work.
    static let interval: Int32 = 10_000
    /// Measured with `PRAGMA integrity_check` on 4 KiB pages: 709 VM steps per page
    /// on the NCBI 2024.9.7 reference build (117,911 pages, 7.3 s; 1,690 on the
    /// builds that still had the positional tables), 1,430 on the bundled database.
    /// The estimate is capped at 0.99 until the check ends.
    static let stepsPerPage = 1000.0
    /// `PRAGMA quick_check` on the same reference build: 418 VM steps per page (0.9 s).
    static let quickStepsPerPage = 420.0

    let expectedCallbacks: Double
    let progress: (Double) -> Void
    let isCancelled: () -> Bool
    private var callbacks = 0.0
    private(set) var cancelled = false

    init(pages: Int, depth: DatabaseChecks.IntegrityDepth, progress: @escaping (Double) -> Void,
         isCancelled: @escaping () -> Bool) {
        let steps = depth == .full ? Self.stepsPerPage : Self.quickStepsPerPage
        expectedCallbacks = max(1, Double(pages) * steps / Double(Self.interval))
        self.progress = progress
        self.isCancelled = isCancelled
    }

    /// True stops the statement (SQLITE_INTERRUPT).
    func step() -> Bool {
        callbacks += 1
        progress(min(0.99, callbacks / expectedCallbacks))
        if isCancelled() { cancelled = true }
        return cancelled
    }
}
