import GRDBSQLite

/// A read-only SQLite connection for the verifier's and the coordinator's few
/// checks, through SQLite's C API.
///
/// GRDB is the project's SQLite layer everywhere else, but it cannot name a
/// VFS, and the verifier's scratch file has no name: it is read from its
/// descriptor through the `stol-descriptor` VFS (`CSTOLSQLite`), which only
/// STOLVerifier registers and opens (`ReadOnlySQLite(descriptor:)`). The
/// coordinator opens installed, already verified databases by path, so it links
/// neither that VFS nor the verifier's checks.
package final class ReadOnlySQLite {
    package struct Failure: Error, CustomStringConvertible {
        package let code: Int32
        package let message: String
        package var description: String { message }

        package init(code: Int32, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// One result column: SQLite's integer, text or NULL (other types read as text).
    package enum Value: Equatable {
        case integer(Int64)
        case text(String)
        case null

        package var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
        package var text: String? {
            switch self {
            case .text(let value): value
            case .integer(let value): String(value)
            case .null: nil
            }
        }
    }

    private var handle: OpaquePointer?

    /// Opens the database at `path` read-only, through the VFS named `vfs` (nil: SQLite's default).
    package init(path: String, vfs: String? = nil) throws(Failure) {
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, vfs)
        guard rc == SQLITE_OK else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(handle)
            handle = nil
            throw Failure(code: rc, message: message)
        }
    }

    deinit { sqlite3_close(handle) }

    package var connection: OpaquePointer? { handle }

    /// Runs `sql` with text `arguments` and returns every row.
    package func rows(_ sql: String, _ arguments: [String] = []) throws(Failure) -> [[Value]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { throw failure() }
        defer { sqlite3_finalize(statement) }
        for (index, argument) in arguments.enumerated() {
            sqlite3_bind_text(statement, Int32(index + 1), argument, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        }
        var rows: [[Value]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return rows }
            guard rc == SQLITE_ROW else { throw failure() }
            rows.append((0..<sqlite3_column_count(statement)).map { column in
                switch sqlite3_column_type(statement, column) {
                case SQLITE_NULL: .null
                case SQLITE_INTEGER: .integer(sqlite3_column_int64(statement, column))
                default: .text(sqlite3_column_text(statement, column).map { String(cString: $0) } ?? "")
                }
            })
        }
    }

    private func failure() -> Failure {
        Failure(code: sqlite3_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }
}
