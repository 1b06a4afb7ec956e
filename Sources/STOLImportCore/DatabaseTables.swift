import STOLModel

/// What the verifier and the coordinator read of a taxonomy database's own tables
/// besides its facts (``DatabaseFacts``, read by their one reader): its shape,
/// every table, column and index the server reads. The verifier runs it on the
/// untrusted database as one of its checks (`DatabaseChecks` in STOLVerifier);
/// the coordinator, on an installed (already verified) database when it lists,
/// activates or compares releases. A failure is
/// ``ImportError/databaseCorrupt(check:detail:)`` naming the check.
package enum DatabaseTables {
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

/// SQLite's C API, as the one reader of a database's facts reads it.
extension ReadOnlySQLite: DatabaseFactsConnection {
    package func textRows(_ sql: String) throws -> [[String?]] {
        try rows(sql).map { row in row.map(\.text) }
    }
}

extension ImportError {
    /// A database whose facts break their rules (``DatabaseFacts``), named as the
    /// import checks name it.
    package init(_ error: DatabaseFactsError) {
        switch error {
        case .schemaVersion(let detail): self = .databaseCorrupt(check: .schemaVersionRow, detail: detail)
        case .provenance(let detail): self = .databaseCorrupt(check: .provenance, detail: detail)
        }
    }
}
