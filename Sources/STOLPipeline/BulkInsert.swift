import Foundation
import GRDB
#if canImport(GRDBSQLite)
import GRDBSQLite
#endif

/// One prepared INSERT executed millions of times by the database writer.
///
/// Binds values straight through the SQLite C API when GRDB's SQLite module can
/// be imported (it can in the SwiftPM build): GRDB's `execute(arguments:)`
/// builds an argument array and runs its statement hooks for each row, which
/// costs more than the insert itself at 20 M rows. Otherwise it falls back to
/// GRDB. Either way errors are GRDB `DatabaseError`s.
final class BulkInsert {
    private let statement: Statement
    #if !canImport(GRDBSQLite)
    private var values: [(any DatabaseValueConvertible)?]
    #endif

    init(_ db: Database, sql: String) throws {
        statement = try db.makeStatement(sql: sql)
        #if !canImport(GRDBSQLite)
        values = Array(repeating: nil, count: sql.filter { $0 == "?" }.count)
        #endif
    }

    #if canImport(GRDBSQLite)
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ index: Int32, _ value: Int64?) {
        if let value {
            sqlite3_bind_int64(statement.sqliteStatement, index, value)
        } else {
            sqlite3_bind_null(statement.sqliteStatement, index)
        }
    }

    func bind(_ index: Int32, _ value: Double) {
        sqlite3_bind_double(statement.sqliteStatement, index, value)
    }

    func bind(_ index: Int32, _ value: String?) {
        guard var value else {
            sqlite3_bind_null(statement.sqliteStatement, index)
            return
        }
        let handle = statement.sqliteStatement
        value.withUTF8 { bytes in
            if let base = bytes.baseAddress {
                base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { text in
                    _ = sqlite3_bind_text(handle, index, text, Int32(bytes.count), Self.transient)
                }
            } else {
                _ = sqlite3_bind_text(handle, index, "", 0, Self.transient)
            }
        }
    }

    func step() throws {
        let handle = statement.sqliteStatement
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
        sqlite3_reset(handle)
    }
    #else
    func bind(_ index: Int32, _ value: Int64?) {
        values[Int(index) - 1] = value
    }

    func bind(_ index: Int32, _ value: String?) {
        values[Int(index) - 1] = value
    }

    func bind(_ index: Int32, _ value: Double) {
        values[Int(index) - 1] = value
    }

    func step() throws {
        try statement.execute(arguments: StatementArguments(values))
    }
    #endif
}
