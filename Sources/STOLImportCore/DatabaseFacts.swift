import STOLModel

/// What the database checks established about a verified database.
public struct DatabaseFacts: Sendable, Equatable {
    public var schemaVersion: UInt32
    /// `schema_version.applied_at`: when the pipeline built the database (ISO 8601 UTC).
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

/// What both sides read of a taxonomy database's own tables: its shape (every
/// table, column and index the server reads) and its provenance. The verifier
/// runs them on the untrusted database as two of its checks (`DatabaseChecks`
/// in STOLVerifier); the coordinator, on an installed (already verified)
/// database when it lists, activates or compares releases. A failure is
/// ``ImportError/databaseCorrupt(check:detail:)`` naming the check.
package enum DatabaseTables {
    /// The `provenance` table (optional within schema 3). When present it must be
    /// whole, and its release must be a name an installed file can carry
    /// (``ReleaseName/isValid(_:)``): the release names the file it installs as.
    package static func provenance(_ db: ReadOnlySQLite) throws(ImportError) -> Provenance? {
        var values: [String: String] = [:]
        do {
            let tables = try db.rows("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'provenance'")
            guard tables.first?.first?.integer == 1 else { return nil }
            for row in try db.rows("SELECT key, value FROM provenance") {
                if let key = row.first?.text, let value = row.last?.text { values[key] = value }
            }
        } catch {
            throw .databaseCorrupt(check: .provenance, detail: "cannot read the provenance table: \(error.message)")
        }
        guard let provenance = Provenance(rows: values) else {
            let missing = Provenance.keys.filter { values[$0] == nil }
            throw .databaseCorrupt(check: .provenance, detail: "the provenance table lacks \(missing.joined(separator: ", "))")
        }
        guard ReleaseName.isValid(provenance.release) else {
            throw .databaseCorrupt(check: .provenance, detail: "the release '\(provenance.release.prefix(80))' cannot name an "
                                   + "installed release (1–64 letters, digits, '.', '_', '+', '-'; not 'bundled')")
        }
        return provenance
    }

    /// Every table, column and index a database of `version` must have
    /// (``TaxonomySchema/requiredColumns(version:)``, ``TaxonomySchema/requiredIndexes(version:)``).
    package static func shape(_ db: ReadOnlySQLite, version: Int) throws(ImportError) {
        do {
            for (table, columns) in TaxonomySchema.requiredColumns(version: version) {
                let present = Set(try db.rows("SELECT name FROM pragma_table_info(?)", [table]).compactMap { $0.first?.text })
                guard !present.isEmpty else {
                    throw ImportError.databaseCorrupt(check: .shape, detail: "the table \(table) is missing")
                }
                let missing = columns.filter { !present.contains($0) }
                guard missing.isEmpty else {
                    throw ImportError.databaseCorrupt(
                        check: .shape, detail: "the table \(table) lacks the column(s) \(missing.joined(separator: ", "))")
                }
            }
            let indexes = Set(try db.rows("SELECT name FROM sqlite_master WHERE type = 'index'").compactMap { $0.first?.text })
            let missing = TaxonomySchema.requiredIndexes(version: version).filter { !indexes.contains($0) }
            guard missing.isEmpty else {
                throw ImportError.databaseCorrupt(check: .shape,
                                                  detail: "the index(es) \(missing.joined(separator: ", ")) are missing")
            }
        } catch let error as ImportError {
            throw error
        } catch {
            throw .databaseCorrupt(check: .shape, detail: "\(error)")
        }
    }
}
