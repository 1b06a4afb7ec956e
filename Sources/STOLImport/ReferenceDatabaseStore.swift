import Foundation
import Glibc
import Logging
import STOLFileSystem
import STOLImportCore
import STOLModel
import STOLProtocol
import STOLTransport
import Synchronization

/// The files `stol-importd` owns in `databases/`: the installed releases
/// (`releases/<release>.sqlite`), the activation state naming the default one,
/// and the staging directory beside them.
///
/// Every change is one `rename(2)` of a complete, fsynced file (or one `unlink(2)`),
/// followed by an fsync of the directory, under one lock: a crash or kill at any
/// moment leaves each file either as it was or as it was meant to become, never a
/// mix. The bundled database is not among these files and nothing here can touch it.
public final class ReferenceDatabaseStore: Sendable {
    public let paths: RuntimePaths
    /// Serialises installs, activation changes and deletes.
    private let changes = Mutex(())

    /// Each installed release's SHA-256, recorded at install.
    let digests: InstalledDigests

    public init(paths: RuntimePaths) {
        self.paths = paths
        digests = InstalledDigests(directory: paths.releasesDirectory)
    }

    /// What is known of one installed release.
    public struct Reference: Sendable, Equatable {
        public var release: String
        public var path: String
        public var sizeBytes: UInt64
        public var fingerprint: String
        /// `schema_version.applied_at`; empty when the file cannot be read as a database.
        public var buildTime: String
        public var schemaVersion: UInt32
        public var provenance: Provenance?
    }

    /// Creates `databases/`, `databases/releases/` and `databases/.staging/`, removes
    /// what a killed import or state write left there (`stol_import_*` files, `.*.tmp-*`
    /// files), and moves the one `reference.sqlite` of an older installation into
    /// `releases/` under its release.
    public func prepare(logger: Logger) throws(ImportError) {
        for (directory, mode) in [(paths.databasesDirectory, mode_t(0o755)), (paths.releasesDirectory, mode_t(0o755)),
                                  (paths.stagingDirectory, mode_t(0o700))] {
            if mkdir(directory, mode) != 0 && errno != EEXIST {
                throw .storage("cannot create \(directory): \(String(cString: strerror(errno)))")
            }
        }
        let stale = [(paths.stagingDirectory, { (name: String) in name.hasPrefix("stol_import_") }),
                     (paths.databasesDirectory, { (name: String) in name.hasPrefix(".") && name.contains(".tmp-") }),
                     (paths.releasesDirectory, { (name: String) in name.hasPrefix(".") && name.contains(".tmp-") })]
        for (directory, isStale) in stale {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where isStale(name) {
                if unlink(directory + "/" + name) == 0 {
                    logger.notice("removed a stale file of an interrupted import", metadata: ["file": "\(name)"])
                }
            }
        }
        try changes.withLock { _ throws(ImportError) in try migrateLegacyReference(logger: logger) }
    }

    /// An installation from before releases were kept side by side has one
    /// `reference.sqlite` and an activation state without a default release: the
    /// file moves (one rename) to `releases/<its release>.sqlite`, then the state
    /// names it. Killed between the two, the next start finishes the job (the
    /// state is completed whenever it asks for the reference and one release is installed).
    private func migrateLegacyReference(logger: Logger) throws(ImportError) {
        if FileStat(path: paths.legacyReferenceDatabase) != nil {
            let release = (try? Self.read(path: paths.legacyReferenceDatabase))?.release ?? ReleaseName.unknown
            let target = paths.releaseDatabase(release)
            if FileStat(path: target) == nil {
                guard rename(paths.legacyReferenceDatabase, target) == 0 else {
                    throw .storage("cannot move \(paths.legacyReferenceDatabase) to \(target): \(String(cString: strerror(errno)))")
                }
                Self.syncDirectory(paths.releasesDirectory)
                Self.syncDirectory(paths.databasesDirectory)
                logger.notice("moved the reference database into the releases directory", metadata: ["release": "\(release)"])
            }
        }
        let state = ActivationState.read(path: paths.activationState)
        let installed = releaseNames()
        if state.useReferenceDB, state.defaultRelease == nil, installed.count == 1 {
            try writeActivation(ActivationState(useReferenceDB: true, defaultRelease: installed[0]))
        }
    }

    public var activation: ActivationState { ActivationState.read(path: paths.activationState) }

    public var isActive: Bool { activation.servingRelease != nil }

    /// The names of the installed releases, sorted.
    public func releaseNames() -> [String] { ReleaseName.installed(in: paths.releasesDirectory) }

    /// One installed release, or nil when it is not installed.
    public func reference(_ release: String) -> Reference? {
        let path = paths.releaseDatabase(release)
        guard ReleaseName.isValid(release), let stat = FileStat(path: path) else { return nil }
        let facts = try? Self.read(path: path)
        return Reference(release: release, path: path, sizeBytes: stat.size, fingerprint: stat.fingerprint,
                         buildTime: facts?.buildTime ?? "", schemaVersion: facts?.schemaVersion ?? 0,
                         provenance: facts?.provenance)
    }

    /// Every installed release, sorted by name.
    public func references() -> [Reference] { releaseNames().compactMap { reference($0) } }

    /// The default release when one is chosen and installed, else the only installed
    /// one: what the single-reference fields of ``status()`` describe.
    public func reference() -> Reference? { Self.reference(in: references(), state: activation) }

    private static func reference(in all: [Reference], state: ActivationState) -> Reference? {
        all.first { $0.release == state.defaultRelease } ?? (all.count == 1 ? all[0] : nil)
    }

    public func status() -> Stol_V1_ImportStatus {
        var status = Stol_V1_ImportStatus()
        let state = activation
        // Each installed file is read once (its schema version, build time, provenance).
        let all = references()
        if let reference = Self.reference(in: all, state: state) {
            status.referencePresent = true
            status.referenceSizeBytes = reference.sizeBytes
            status.referenceFingerprint = reference.fingerprint
            status.referenceBuildTime = reference.buildTime
            status.referenceSchemaVersion = reference.schemaVersion
            status.referenceActive = state.servingRelease == reference.release
        }
        status.defaultRelease = state.servingRelease ?? ""
        status.releases = all.map { reference in
            var info = Stol_V1_ReleaseInfo()
            info.release = reference.release
            info.kind = .reference
            if let provenance = reference.provenance { info.provenance = Stol_V1_Provenance(provenance) }
            info.sizeBytes = reference.sizeBytes
            info.buildTime = reference.buildTime
            info.fingerprint = reference.fingerprint
            info.schemaVersion = reference.schemaVersion
            info.isDefault = state.servingRelease == reference.release
            return info
        }
        return status
    }

    /// The id namespaces of the installed databases that record one: every release, and
    /// the bundled database (users' favourites and scripts hold its ids too; never
    /// written here, only read).
    public func installedNamespaces() -> Set<String> {
        var namespaces = Set(references().compactMap { $0.provenance?.idNamespace })
        if let bundled = (try? Self.read(path: paths.bundledDatabase))?.provenance { namespaces.insert(bundled.idNamespace) }
        return namespaces
    }

    /// Publishes the staged database as `releases/<release>.sqlite` (fsync, rename,
    /// fsync of the directory), replacing an installed build of the same release, and
    /// records its SHA-256 (`sha256`, which the import checked the staged bytes against).
    public func install(_ staged: AtomicFile, release: String, sha256: [UInt8]) throws(ImportError) {
        guard ReleaseName.isValid(release) else {
            throw .databaseCorrupt(check: .provenance, detail: "the release '\(release)' cannot name an installed release")
        }
        try changes.withLock { _ throws(ImportError) in
            staged.path = paths.releaseDatabase(release)
            do {
                try staged.commit(mode: 0o644)
            } catch {
                throw Self.storageError(error)
            }
            digests.record(sha256, release: release, installedAt: staged.path)
        }
    }

    /// The SHA-256 of installed `release` as open on `descriptor` (recorded at install,
    /// or hashed when the record is not this file's).
    public func digest(of release: String, descriptor: Int32) throws -> [UInt8] {
        try digests.digest(of: release, descriptor: descriptor)
    }

    /// The installed release `requested` names, or the one a request without a
    /// name means: the only installed release.
    private func resolve(_ requested: String) throws(ImportError) -> String {
        let installed = releaseNames()
        if requested.isEmpty {
            guard !installed.isEmpty else { throw .notInstalled }
            guard installed.count == 1 else { throw .releaseNotNamed(installed: installed) }
            return installed[0]
        }
        guard installed.contains(requested) else { throw .releaseNotInstalled(requested, installed: installed) }
        return requested
    }

    /// Serves `release` by default from now on (empty: the default chosen before,
    /// else the only installed one), after checking that it is still a database this
    /// server understands (schema version, tables). Returns the release.
    @discardableResult
    public func activate(_ requested: String = "") throws(ImportError) -> String {
        try changes.withLock { _ throws(ImportError) -> String in
            var requested = requested
            if requested.isEmpty, let chosen = activation.defaultRelease, reference(chosen) != nil { requested = chosen }
            let release = try resolve(requested)
            let facts = try Self.read(path: paths.releaseDatabase(release))
            let supported = TaxonomySchema.supportedVersions
            guard supported.contains(facts.schemaVersion) else {
                throw .verification(.incompatibleSchema(found: facts.schemaVersion, supported: supported))
            }
            try writeActivation(ActivationState(useReferenceDB: true, defaultRelease: release))
            return release
        }
    }

    /// Serves the bundled database by default from now on. The releases stay
    /// installed, and the default release stays recorded for the next `activate`.
    public func deactivate() throws(ImportError) {
        try changes.withLock { _ throws(ImportError) in
            var state = activation
            state.useReferenceDB = false
            try writeActivation(state)
        }
    }

    /// Removes `release` (empty: the only installed one); when it was the default,
    /// the bundled database serves from the same moment (the state is written first).
    /// Returns the release removed, nil when none was installed.
    @discardableResult
    public func delete(_ requested: String = "") throws(ImportError) -> String? {
        try changes.withLock { _ throws(ImportError) -> String? in
            if requested.isEmpty && releaseNames().isEmpty { return nil }
            let release = try resolve(requested)
            let state = activation
            if state.defaultRelease == release {
                try writeActivation(ActivationState(useReferenceDB: false, defaultRelease: nil))
            }
            let path = paths.releaseDatabase(release)
            guard unlink(path) == 0 else {
                if errno == ENOENT { return nil }
                throw .storage("cannot remove \(path): \(String(cString: strerror(errno)))")
            }
            digests.remove(release)
            Self.syncDirectory(paths.releasesDirectory)
            return release
        }
    }

    /// Writes the activation state only when it changes (an unchanged file keeps its bytes).
    private func writeActivation(_ wanted: ActivationState) throws(ImportError) {
        if FileStat(path: paths.activationState) != nil, ActivationState.read(path: paths.activationState) == wanted { return }
        do {
            try wanted.write(path: paths.activationState)
        } catch {
            throw Self.storageError(error)
        }
    }

    static func syncDirectory(_ path: String) {
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    /// Schema version, build time and provenance of an installed database, after checking its
    /// tables (trusted: it was verified before it was installed).
    static func read(path: String) throws(ImportError) -> DatabaseFacts {
        let db: ReadOnlySQLite
        do {
            db = try ReadOnlySQLite(path: path)
        } catch {
            throw .databaseCorrupt(check: .schemaVersionRow, detail: error.message)
        }
        let facts: DatabaseFacts
        do throws(DatabaseFactsError) {
            facts = try DatabaseFacts.read(db)
        } catch {
            throw ImportError(error)
        }
        try DatabaseTables.shape(db, version: Int(facts.schemaVersion))
        return facts
    }

    static func storageError(_ error: Error) -> ImportError {
        if let error = error as? AtomicFileError, error.errno == ENOSPC || error.errno == EDQUOT {
            return .noSpace(error.description)
        }
        return .storage("\(error)")
    }
}
