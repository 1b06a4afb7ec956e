import GRDB
import STOLModel

extension DatabaseFacts {
    /// The facts of the database `db` is connected to, by their one reader: when a
    /// database is opened to serve, when `status` lists an installed release, and
    /// when a diff or history reads a release's file.
    static func read(_ db: Database) throws(DatabaseFactsError) -> DatabaseFacts {
        try read(GRDBFactsConnection(db: db))
    }
}

/// GRDB's connection, as the one reader of a database's facts reads it.
private struct GRDBFactsConnection: DatabaseFactsConnection {
    let db: Database

    func textRows(_ sql: String) throws -> [[String?]] {
        try Row.fetchAll(db, sql: sql).map { row in
            row.databaseValues.map { value in
                switch value.storage {
                case .null: nil
                case .int64(let integer): String(integer)
                case .double(let double): String(double)
                case .string(let text): text
                case .blob(let data): String(decoding: data, as: UTF8.self)
                }
            }
        }
    }
}
