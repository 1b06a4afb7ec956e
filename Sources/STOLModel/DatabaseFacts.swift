/// What a taxonomy database says of itself: its schema version, when it was built
/// and where its data came from.
///
/// Read by one reader (``read(_:)``) in every process that opens a database: the
/// verifier on an untrusted one, the coordinator on an installed one, the server
/// when it serves one, lists it or diffs it. So a database is one thing to all of
/// them, read by the strictest rule any of them needs; one that fails it is
/// refused with a ``DatabaseFactsError`` naming what is wrong.
public struct DatabaseFacts: Sendable, Equatable {
    /// The one `schema_version` row's version.
    public var schemaVersion: UInt32
    /// `schema_version.applied_at`: when the pipeline built the database (ISO 8601 UTC); empty when NULL.
    public var buildTime: String
    /// The `provenance` table; nil for a database built before it.
    public var provenance: Provenance?

    public init(schemaVersion: UInt32, buildTime: String, provenance: Provenance? = nil) {
        self.schemaVersion = schemaVersion
        self.buildTime = buildTime
        self.provenance = provenance
    }

    /// The name the database installs under (``ReleaseName``).
    public var release: String { ReleaseName.of(provenance) }
}

/// A read-only connection the facts are read through: GRDB's in the server,
/// SQLite's C API in the import daemons (which link no GRDB). The reader owns the
/// SQL; a connection only runs it.
public protocol DatabaseFactsConnection {
    /// Every row `sql` answers, each column as text (an integer in decimal), NULL as nil.
    func textRows(_ sql: String) throws -> [[String?]]
}

/// A database whose facts cannot be read, or that breaks their rules.
public enum DatabaseFactsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `schema_version` cannot be read, or does not hold exactly one row with an integer version ≥ 1.
    case schemaVersion(String)
    /// The `provenance` table cannot be read, lacks a key, or names a release no
    /// installed file could carry.
    case provenance(String)

    public var description: String {
        switch self {
        case .schemaVersion(let detail), .provenance(let detail): detail
        }
    }
}

extension DatabaseFacts {
    /// The facts of the database `db` is connected to: its schema version
    /// (``readSchemaVersion(_:)``) and its provenance (``readProvenance(_:)``).
    public static func read(_ db: some DatabaseFactsConnection) throws(DatabaseFactsError) -> DatabaseFacts {
        var facts = try readSchemaVersion(db)
        facts.provenance = try readProvenance(db)
        return facts
    }

    /// `schema_version` holds exactly one row (the pipeline writes one, and the
    /// signer signs its version into the header), its version an integer ≥ 1.
    /// Whether this program understands that version is the caller's question.
    public static func readSchemaVersion(_ db: some DatabaseFactsConnection) throws(DatabaseFactsError) -> DatabaseFacts {
        let rows: [[String?]]
        do {
            rows = try db.textRows("SELECT typeof(version), version, applied_at FROM schema_version")
        } catch {
            throw .schemaVersion("cannot read schema_version: \(error)")
        }
        guard rows.count == 1, let row = rows.first, row.count == 3 else {
            throw .schemaVersion("schema_version must hold exactly one row, it holds \(rows.count)")
        }
        guard row[0] == "integer", let text = row[1], let version = UInt32(text), version >= 1 else {
            throw .schemaVersion("the schema version \(row[1].map { "'\($0.prefix(20))'" } ?? "NULL") is not an integer ≥ 1")
        }
        return DatabaseFacts(schemaVersion: version, buildTime: row[2] ?? "")
    }

    /// The `provenance` table, optional (a database built before it has none).
    /// When present it must be whole, and its release must be a name an installed
    /// file can carry (``ReleaseName/isValid(_:)``): the release names the file it
    /// installs as, and pins queries to it.
    public static func readProvenance(_ db: some DatabaseFactsConnection) throws(DatabaseFactsError) -> Provenance? {
        var values: [String: String] = [:]
        do {
            let tables = try db.textRows("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'provenance'")
            guard tables.first?.first == "1" else { return nil }
            for row in try db.textRows("SELECT key, value FROM provenance") where row.count == 2 {
                if let key = row[0], let value = row[1] { values[key] = value }
            }
        } catch {
            throw .provenance("cannot read the provenance table: \(error)")
        }
        guard let provenance = Provenance(rows: values) else {
            let missing = Provenance.keys.filter { values[$0] == nil }
            throw .provenance("the provenance table lacks \(missing.joined(separator: ", "))")
        }
        guard ReleaseName.isValid(provenance.release) else {
            throw .provenance("the release '\(provenance.release.prefix(80))' cannot name an installed release "
                              + "(1–32 letters, digits, '.', '_', '+', '-', the first a letter or digit; not 'bundled')")
        }
        return provenance
    }
}
