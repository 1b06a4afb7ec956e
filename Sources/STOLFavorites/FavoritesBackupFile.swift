import GRDB

/// A backed-up favourites file handed back for a restore, read only after it has
/// proved to be one: an intact SQLite file whose only table is `favorites` with
/// exactly the two columns of ``FavoritesSchema``, a schema version this daemon
/// knows, and rows that would pass ``FavoritesStore/merge(_:)``. Anything else (a
/// damaged file, a taxonomy database, a file with a third column) is refused
/// before a single favourite is merged.
enum FavoritesBackupFile {
    /// The entries of the file at `path`, opened read-only.
    static func entries(at path: String) throws(FavoritesError) -> [FavoriteEntry] {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "favorites-restore"
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw .invalidBackup("it cannot be opened as SQLite (\(describe(error)))")
        }
        defer { try? queue.close() }
        do {
            return try queue.read { db in try read(db) }
        } catch let error as FavoritesError {
            throw error
        } catch {
            throw .invalidBackup(describe(error))
        }
    }

    private static func read(_ db: Database) throws(FavoritesError) -> [FavoriteEntry] {
        do {
            guard try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"] else {
                throw FavoritesError.invalidBackup("SQLite's integrity check fails (the file is damaged)")
            }
            let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            guard version <= FavoritesSchema.currentVersion else {
                throw FavoritesError.invalidBackup("its schema version \(version) is newer than this daemon's")
            }
            let objects = try Row.fetchAll(db, sql: "SELECT type, name FROM sqlite_master ORDER BY type, name")
                .map { "\($0["type"] as String? ?? "") \($0["name"] as String? ?? "")" }
            guard objects == ["index idx_favorites_created", "table favorites"] else {
                let shown = objects.prefix(4).joined(separator: ", ") + (objects.count > 4 ? ", … (\(objects.count) objects)" : "")
                throw FavoritesError.invalidBackup("it holds \(shown.isEmpty ? "no table" : shown), not one favourites table")
            }
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(favorites)").map { $0["name"] as String? ?? "" }
            guard columns == ["taxon_id", "created_at"] else {
                throw FavoritesError.invalidBackup("its favourites table has the columns \(columns.joined(separator: ", "))")
            }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM favorites") ?? 0
            guard count <= FavoritesStore.maximumFavorites else {
                throw FavoritesError.invalidBackup("it holds \(count) favourites, over the limit of \(FavoritesStore.maximumFavorites)")
            }
            // Typed reads: a text id or a numeric time is a foreign row, not a favourite.
            let rows = try Row.fetchAll(db, sql: """
                SELECT taxon_id, created_at, typeof(taxon_id) = 'integer' AND typeof(created_at) = 'text' AS typed
                FROM favorites ORDER BY taxon_id
                """)
            return try rows.map { row in
                guard row["typed"] as Bool? == true else {
                    throw FavoritesError.invalidBackup("a row holds values of other types than an id and a time")
                }
                let entry = FavoriteEntry(taxonID: row[0], createdAt: row[1])
                guard entry.taxonID > 0, entry.taxonID <= FavoritesError.maximumTaxonID else {
                    throw FavoritesError.invalidBackup("it holds the taxon id \(entry.taxonID), out of range")
                }
                guard FavoriteEntry.isValidTimestamp(entry.createdAt) else {
                    throw FavoritesError.invalidBackup("favourite \(entry.taxonID) has the time \"\(entry.createdAt.prefix(40))\"")
                }
                return entry
            }
        } catch let error as FavoritesError {
            throw error
        } catch {
            throw .invalidBackup(describe(error))
        }
    }

    private static func describe(_ error: any Error) -> String {
        (error as? DatabaseError)?.message ?? "\(type(of: error))"
    }
}
