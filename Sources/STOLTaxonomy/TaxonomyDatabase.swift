import Foundation
import GRDB
import STOLModel
import STOLProtocol

/// One taxonomy database file, opened read-only.
///
/// Opening checks what the server relies on (schema version not newer than this
/// build, required tables present) so that an unusable reference database is
/// detected at switch time and the bundled one keeps serving.
public final class TaxonomyDatabase: Sendable {
    public let path: String
    public let kind: Stol_V1_DatabaseKind
    public let schemaVersion: Int
    public let taxaCount: Int
    public let sizeBytes: UInt64
    public let fingerprint: String
    let queue: DatabaseQueue

    public init(path: String, kind: Stol_V1_DatabaseKind) throws(TaxonomyError) {
        self.path = path
        self.kind = kind
        guard let stat = FileStat(path: path) else {
            throw .databaseUnusable(path: path, reason: "file not found or not readable")
        }
        self.sizeBytes = stat.size
        self.fingerprint = stat.fingerprint
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "taxonomy"
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            let (version, count) = try queue.read { db -> (Int, Int) in
                let tables = try Set(String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type IN ('table')"))
                let missing = TaxonomySchema.requiredTables.filter { !tables.contains($0) }
                guard missing.isEmpty else {
                    throw TaxonomyError.databaseUnusable(path: path, reason: "missing tables \(missing.joined(separator: ", "))")
                }
                let version = try Int.fetchOne(db, sql: "SELECT max(version) FROM schema_version") ?? 0
                let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa") ?? 0
                return (version, count)
            }
            guard version >= 1, version <= TaxonomySchema.currentVersion else {
                throw TaxonomyError.databaseUnusable(
                    path: path, reason: "schema version \(version); this server understands 1...\(TaxonomySchema.currentVersion)")
            }
            schemaVersion = version
            taxaCount = count
        } catch let error as TaxonomyError {
            throw error
        } catch {
            throw .databaseUnusable(path: path, reason: "\(error)")
        }
    }

    public var identity: Stol_V1_DatabaseIdentity {
        var identity = Stol_V1_DatabaseIdentity()
        identity.kind = kind
        identity.fingerprint = fingerprint
        identity.schemaVersion = UInt32(schemaVersion)
        return identity
    }

    func read<T>(_ body: (Database) throws -> T) throws(TaxonomyError) -> T {
        do {
            return try queue.read(body)
        } catch let error as TaxonomyError {
            throw error
        } catch {
            throw .query("\(error)")
        }
    }
}

/// The parts of `stat(2)` that identify a file version.
struct FileStat: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: UInt64
    let modifiedNanoseconds: Int64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = UInt64(info.st_size)
        modifiedNanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    var fingerprint: String {
        String(format: "%llx-%llx-%llx-%llx", device, inode, size, modifiedNanoseconds)
    }
}
