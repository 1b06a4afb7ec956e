import Foundation
import Glibc
import Logging
import STOLFileSystem
import STOLModel
import STOLProtocol
import STOLTransport
import Synchronization

/// The files `stol-importd` owns in `databases/`: the installed reference
/// database and the activation state, and the staging directory beside them.
///
/// Every change is one `rename(2)` of a complete, fsynced file, followed by an
/// fsync of the directory, under one lock: a crash or kill at any moment leaves
/// each file either as it was or as it was meant to become, never a mix. The
/// bundled database is not among these files and nothing here can touch it.
public final class ReferenceDatabaseStore: Sendable {
    public let paths: RuntimePaths
    /// Serialises installs, activation changes and deletes.
    private let changes = Mutex(())

    public init(paths: RuntimePaths) {
        self.paths = paths
    }

    /// What is known of the installed reference database.
    public struct Reference: Sendable, Equatable {
        public var sizeBytes: UInt64
        public var fingerprint: String
        /// `schema_version.applied_at`; empty when the file cannot be read as a database.
        public var buildTime: String
        public var schemaVersion: UInt32
    }

    /// Creates `databases/` and `databases/.staging/` and removes what a killed
    /// import or state write left there (`stol_import_*` files, `.*.tmp-*` files).
    public func prepare(logger: Logger) throws(ImportError) {
        for (directory, mode) in [(paths.databasesDirectory, mode_t(0o755)), (paths.stagingDirectory, mode_t(0o700))] {
            if mkdir(directory, mode) != 0 && errno != EEXIST {
                throw .storage("cannot create \(directory): \(String(cString: strerror(errno)))")
            }
        }
        let stale = [(paths.stagingDirectory, { (name: String) in name.hasPrefix("stol_import_") }),
                     (paths.databasesDirectory, { (name: String) in name.hasPrefix(".") && name.contains(".tmp-") })]
        for (directory, isStale) in stale {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where isStale(name) {
                if unlink(directory + "/" + name) == 0 {
                    logger.notice("removed a stale file of an interrupted import", metadata: ["file": "\(name)"])
                }
            }
        }
    }

    public var isActive: Bool {
        ActivationState.read(path: paths.activationState).useReferenceDB
    }

    /// The installed reference database, or nil when none is.
    public func reference() -> Reference? {
        guard let stat = FileStat(path: paths.referenceDatabase) else { return nil }
        let facts = try? Self.read(path: paths.referenceDatabase)
        return Reference(sizeBytes: stat.size, fingerprint: stat.fingerprint,
                         buildTime: facts?.buildTime ?? "", schemaVersion: facts?.schemaVersion ?? 0)
    }

    public func status() -> Stol_V1_ImportStatus {
        var status = Stol_V1_ImportStatus()
        if let reference = reference() {
            status.referencePresent = true
            status.referenceSizeBytes = reference.sizeBytes
            status.referenceFingerprint = reference.fingerprint
            status.referenceBuildTime = reference.buildTime
            status.referenceSchemaVersion = reference.schemaVersion
            status.referenceActive = isActive
        }
        return status
    }

    /// Publishes the staged database as `reference.sqlite` (fsync, rename, fsync of the directory).
    public func install(_ staged: AtomicFile) throws(ImportError) {
        try changes.withLock { _ throws(ImportError) in
            do {
                try staged.commit(mode: 0o644)
            } catch {
                throw Self.storageError(error)
            }
        }
    }

    /// Serves the reference database from now on, after checking that it is still a
    /// database this server understands (schema version, tables).
    public func activate() throws(ImportError) {
        try changes.withLock { _ throws(ImportError) in
            guard FileStat(path: paths.referenceDatabase) != nil else { throw .notInstalled }
            let facts = try Self.read(path: paths.referenceDatabase)
            let supported = TaxonomySchema.supportedVersions
            guard supported.contains(facts.schemaVersion) else {
                throw .verification(.incompatibleSchema(found: facts.schemaVersion, supported: supported))
            }
            try writeActivation(true)
        }
    }

    /// Serves the bundled database from now on. The reference file stays installed.
    public func deactivate() throws(ImportError) {
        try changes.withLock { _ throws(ImportError) in try writeActivation(false) }
    }

    /// Deactivates, then removes the reference database; returns whether one was installed.
    @discardableResult
    public func delete() throws(ImportError) -> Bool {
        try changes.withLock { _ throws(ImportError) in
            try writeActivation(false)
            guard unlink(paths.referenceDatabase) == 0 else {
                if errno == ENOENT { return false }
                throw .storage("cannot remove \(paths.referenceDatabase): \(String(cString: strerror(errno)))")
            }
            let directory = open(paths.databasesDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directory >= 0 {
                _ = fsync(directory)
                close(directory)
            }
            return true
        }
    }

    /// Writes the activation state only when it changes (an unchanged file keeps its bytes).
    private func writeActivation(_ useReference: Bool) throws(ImportError) {
        let wanted = ActivationState(useReferenceDB: useReference)
        if FileStat(path: paths.activationState) != nil, ActivationState.read(path: paths.activationState) == wanted { return }
        do {
            try wanted.write(path: paths.activationState)
        } catch {
            throw Self.storageError(error)
        }
    }

    /// Schema version and build time of an installed database, after checking its
    /// tables (trusted: it was verified before it was installed).
    static func read(path: String) throws(ImportError) -> DatabaseFacts {
        let db: ReadOnlySQLite
        let row: [ReadOnlySQLite.Value]
        do {
            db = try ReadOnlySQLite(.path(path))
            row = try db.rows("SELECT max(version), max(applied_at) FROM schema_version").first ?? []
        } catch {
            throw .databaseCorrupt(check: .schemaVersionRow, detail: error.message)
        }
        let version = UInt32(clamping: row.first?.integer ?? 0)
        try DatabaseChecks.shape(db, version: Int(version))
        return DatabaseFacts(schemaVersion: version, buildTime: row.last?.text ?? "")
    }

    static func storageError(_ error: Error) -> ImportError {
        if let error = error as? AtomicFileError, error.errno == ENOSPC || error.errno == EDQUOT {
            return .noSpace(error.description)
        }
        return .storage("\(error)")
    }
}
