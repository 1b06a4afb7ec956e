import GRDB
import STOLModel

/// What a taxonomy database says of itself: its schema version, when it was built
/// (`schema_version.applied_at`) and its `provenance` table. Read the same way when a
/// database is opened to serve, when `status` lists an installed release, and when a
/// diff or history reads a release's file.
struct ReleaseFacts {
    var schemaVersion = 0
    var buildTime = ""
    var provenance: Provenance?

    /// Absent tables give the empty facts (version 0, no build time, no provenance).
    static func read(_ db: Database) throws -> ReleaseFacts {
        var facts = ReleaseFacts()
        if try db.tableExists("schema_version"),
           let row = try Row.fetchOne(db, sql: "SELECT max(version), max(applied_at) FROM schema_version") {
            facts.schemaVersion = (row[0] as Int?) ?? 0
            facts.buildTime = (row[1] as String?) ?? ""
        }
        if try db.tableExists("provenance") {
            var rows: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM provenance") {
                if let key = row[0] as String?, let value = row[1] as String? { rows[key] = value }
            }
            facts.provenance = Provenance(rows: rows)
        }
        return facts
    }
}
