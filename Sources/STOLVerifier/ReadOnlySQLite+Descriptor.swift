import CSTOLSQLite
import GRDBSQLite
import STOLImportCore

/// The verifier's way into its unnamed scratch file: SQLite through the
/// `stol-descriptor` VFS of `CSTOLSQLite`, which reads an open descriptor with
/// pread. Only the verifier links it; the coordinator opens installed databases
/// by path (``ReadOnlySQLite/init(path:vfs:)``).
extension ReadOnlySQLite {
    /// Where the database is: a path, or an open descriptor (read with pread, never changed).
    enum Location {
        case path(String)
        case descriptor(Int32)
    }

    /// Opens the database read-only.
    convenience init(_ location: Location) throws(Failure) {
        switch location {
        case .path(let path):
            try self.init(path: path)
        case .descriptor(let fd):
            let rc = stol_sqlite_register_descriptor_vfs()
            guard rc == SQLITE_OK else { throw Failure(code: rc, message: "cannot register the SQLite VFS (\(rc))") }
            try self.init(path: STOL_DESCRIPTOR_PREFIX + String(fd), vfs: STOL_DESCRIPTOR_VFS)
        }
    }
}
