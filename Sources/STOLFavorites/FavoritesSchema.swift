import GRDB

/// The schema of one user's favourites file, versioned with `PRAGMA user_version`.
///
/// docs/design/favourites.md §1 and §3 fix the schema; it is applied verbatim so the file holds
/// exactly the two privacy-reviewed columns and nothing else (no bookkeeping table
/// such as GRDB's `grdb_migrations`, which is why `DatabaseMigrator` is not used).
enum FavoritesSchema {
    /// The version this daemon writes and understands.
    static let currentVersion = 1

    /// One step per version: step `n` brings a file from version `n - 1` to `n`.
    /// Append new steps; never edit a released one.
    static let migrations: [(version: Int, migrate: @Sendable (Database) throws -> Void)] = [
        // `IF NOT EXISTS`: files made before user_version existed (they had no
        // version marker at all) already hold this table.
        (1, { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS favorites (
                    taxon_id    INTEGER PRIMARY KEY,
                    created_at  TEXT NOT NULL
                        DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
                );
                CREATE INDEX IF NOT EXISTS idx_favorites_created ON favorites(created_at DESC);
                """)
        }),
    ]

    /// Brings the file to ``currentVersion`` inside the caller's transaction, so a
    /// step and its version bump commit together or not at all.
    static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version <= currentVersion else { throw FavoritesError.unsupportedSchemaVersion(version) }
        for step in migrations where step.version > version {
            try step.migrate(db)
            try db.execute(sql: "PRAGMA user_version = \(step.version)")
        }
    }
}
