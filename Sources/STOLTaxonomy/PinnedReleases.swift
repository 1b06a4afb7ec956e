import Foundation
import GRDB
import Logging
import STOLFileSystem
import STOLModel
import STOLProtocol
import Synchronization
import STOLTransport

/// The installed releases a request may pin (`TaxonomyRequest.release`) besides
/// the default one: each opened on demand, kept while it is used, and closed when
/// it has been idle, or when opening another would hold more than the unit allows.
///
/// A full NCBI release holds about 300 MB in memory once its indexes are built.
/// Three of them side by side fit the unit's 1 GiB only because the ones nobody
/// asks for are let go: ``Limits/maximumLoaded`` (`STOL_PINNED_RELEASES_MAX`)
/// bounds how many are open at once (least recently used goes first), and
/// ``Limits/idleTimeout`` (`STOL_PINNED_RELEASE_IDLE_SECONDS`) closes one nobody
/// asked for that long. A closed database frees its memory once the requests
/// still answering from it finish (``TaxonomyDatabase``'s `deinit`).
///
/// Opening happens on a thread of its own ("stol.open"): the requests waiting for
/// it suspend, holding no thread, and every other request goes on.
public final class PinnedReleases: Sendable {
    public struct Limits: Sendable {
        /// Pinned releases open at once (the default release is not counted).
        public var maximumLoaded: Int
        /// A pinned release unused this long is closed.
        public var idleTimeout: Duration

        public init(maximumLoaded: Int = 2, idleTimeout: Duration = .seconds(600)) {
            self.maximumLoaded = max(1, maximumLoaded)
            self.idleTimeout = idleTimeout
        }

        /// `STOL_PINNED_RELEASES_MAX` and `STOL_PINNED_RELEASE_IDLE_SECONDS`, else the defaults.
        public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Limits {
            let defaults = Limits()
            return Limits(maximumLoaded: environment["STOL_PINNED_RELEASES_MAX"].flatMap { Int($0) } ?? defaults.maximumLoaded,
                          idleTimeout: environment["STOL_PINNED_RELEASE_IDLE_SECONDS"].flatMap { Double($0) }
                            .map { .milliseconds(Int64($0 * 1000)) } ?? defaults.idleTimeout)
        }
    }

    private struct Entry {
        var file: FileStat
        var database: TaxonomyDatabase?
        /// Requests waiting while the database opens.
        var waiters: [CheckedContinuation<Result<TaxonomyDatabase, TaxonomyError>, Never>] = []
        var lastUsed: UInt64
    }

    public let directory: String
    public let limits: Limits
    private let logger: Logger
    private let now: @Sendable () -> UInt64
    private let open: ActiveDatabaseProvider.Opener
    private let entries = Mutex<[String: Entry]>([:])
    /// ``describeInstalled()``'s answers, per release, for the file they were read from.
    private let descriptions = Mutex<[String: (file: FileStat, info: Stol_V1_ReleaseInfo)]>([:])

    /// Closes idle releases when no request comes to notice them. Touched only by
    /// `init` and `deinit` (the timer itself is thread-safe).
    private nonisolated(unsafe) let sweeper: DispatchSourceTimer

    init(directory: String, limits: Limits, logger: Logger, now: @escaping @Sendable () -> UInt64,
         open: @escaping ActiveDatabaseProvider.Opener) {
        self.directory = directory
        self.limits = limits
        self.logger = logger
        self.now = now
        self.open = open
        sweeper = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        let period = max(1.0, Double(limits.idleTimeout.components.seconds) / 4)
        sweeper.schedule(deadline: .now() + period, repeating: period, leeway: .seconds(1))
        sweeper.setEventHandler { [weak self] in self?.closeIdle() }
        sweeper.resume()
    }

    deinit { sweeper.cancel() }

    private var idleNanoseconds: UInt64 {
        let parts = limits.idleTimeout.components
        return UInt64(max(0, parts.seconds)) * 1_000_000_000 + UInt64(max(0, parts.attoseconds / 1_000_000_000))
    }

    /// The names of the installed releases (files of the releases directory), sorted.
    public func installed() -> [String] { ReleaseName.installed(in: directory) }

    /// What `status` lists of each installed release (provenance, size, build time,
    /// fingerprint), read from its file once per version of the file.
    public func describeInstalled() -> [Stol_V1_ReleaseInfo] {
        let open = loaded()
        return installed().compactMap { release -> Stol_V1_ReleaseInfo? in
            guard let file = FileStat(path: path(release)) else { return nil }
            var info = descriptions.withLock { $0[release].flatMap { $0.file == file ? $0.info : nil } }
            if info == nil {
                let described = Self.describe(path: path(release), release: release, file: file)
                descriptions.withLock { $0[release] = (file, described) }
                info = described
            }
            info?.loaded = open.contains(release)
            return info
        }
    }

    /// One release's entry from its file (a short read-only connection).
    static func describe(path: String, release: String, file: FileStat) -> Stol_V1_ReleaseInfo {
        var info = Stol_V1_ReleaseInfo()
        info.release = release
        info.kind = .reference
        info.sizeBytes = file.size
        info.fingerprint = file.fingerprint
        var configuration = Configuration()
        configuration.readonly = true
        if let queue = try? DatabaseQueue(path: path, configuration: configuration) {
            if let facts = try? queue.inDatabase({ db in try DatabaseFacts.read(db) }) {
                info.schemaVersion = facts.schemaVersion
                info.buildTime = facts.buildTime
                if let provenance = facts.provenance { info.provenance = Stol_V1_Provenance(provenance) }
            }
            try? queue.close()
        }
        return info
    }

    /// Hands over `path`'s database if it is open here, and forgets it: the release
    /// became the default, which must not open a second copy of it.
    func take(path: String) -> TaxonomyDatabase? {
        guard let file = FileStat(path: path) else { return nil }
        return entries.withLock { entries -> TaxonomyDatabase? in
            guard let (release, entry) = entries.first(where: { self.path($0.key) == path && $0.value.file == file }),
                  let database = entry.database else { return nil }
            entries[release] = nil
            return database
        }
    }

    /// The names of the releases open now.
    public func loaded() -> Set<String> {
        entries.withLock { Set($0.compactMap { $0.value.database == nil ? nil : $0.key }) }
    }

    /// `release`'s database if it is open (nil while it opens: the caller awaits
    /// ``opened(_:)``); starts opening it if it is not. Throws when it is not installed.
    public func database(_ release: String) throws(TaxonomyError) -> TaxonomyDatabase? {
        let file = try installedFile(release).stat
        let now = self.now()
        var start = false
        let database = entries.withLock { entries -> TaxonomyDatabase? in
            closeIdle(&entries, now: now)
            if var entry = entries[release], entry.file == file {
                entry.lastUsed = now
                entries[release] = entry
                return entry.database
            }
            // Not open, or its file was replaced (a newer build imported): open this one. The
            // requests waiting for the replaced file's opening wait for this one instead
            // (that opening finds its entry gone and resumes nobody).
            entries[release] = Entry(file: file, database: nil, waiters: entries[release]?.waiters ?? [], lastUsed: now)
            start = true
            return nil
        }
        if start { startOpening(release, file: file) }
        return database
    }

    /// `release`'s database once open, suspending meanwhile (holding no thread).
    public func opened(_ release: String) async throws(TaxonomyError) -> TaxonomyDatabase {
        if let database = try database(release) { return database }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<TaxonomyDatabase, TaxonomyError>, Never>) in
            let ready = entries.withLock { entries -> Result<TaxonomyDatabase, TaxonomyError>? in
                guard var entry = entries[release] else {
                    return .failure(.releaseNotInstalled(release, installed: []))
                }
                if let database = entry.database { return .success(database) }
                entry.waiters.append(continuation)
                entries[release] = entry
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        return try result.get()
    }

    /// Closes the releases idle longer than the limit (the service calls it now and then,
    /// so that memory is given back even when no request comes).
    public func closeIdle() {
        let now = self.now()
        entries.withLock { closeIdle(&$0, now: now) }
    }

    private func closeIdle(_ entries: inout [String: Entry], now: UInt64) {
        let idle = idleNanoseconds
        for (release, entry) in entries where entry.database != nil && now &- entry.lastUsed > idle {
            entries[release] = nil
            logger.notice("closed an idle pinned release", metadata: ["release": "\(release)"])
        }
    }

    /// The installed release's file and its state; RELEASE_NOT_INSTALLED for a name that
    /// is no installed release (or could not name one).
    func installedFile(_ release: String) throws(TaxonomyError) -> (path: String, stat: FileStat) {
        guard ReleaseName.isValid(release), let file = FileStat(path: path(release)) else {
            throw .releaseNotInstalled(release, installed: installed())
        }
        return (path(release), file)
    }

    /// `releases/<release>.sqlite` (the name checked by the caller).
    func path(_ release: String) -> String { directory + "/" + release + ".sqlite" }

    private func startOpening(_ release: String, file: FileStat) {
        let thread = Thread(named: "stol.open") { [self] in
            let result: Result<TaxonomyDatabase, TaxonomyError>
            do {
                result = .success(try open(path(release), .reference))
            } catch {
                logger.error("a pinned release is unusable", metadata: ["release": "\(release)", "error": "\(error)"])
                result = .failure((error as? TaxonomyError) ?? .databaseUnusable(path: path(release), reason: "\(error)"))
            }
            let waiters = entries.withLock { entries -> [CheckedContinuation<Result<TaxonomyDatabase, TaxonomyError>, Never>] in
                guard var entry = entries[release], entry.file == file, entry.database == nil else { return [] }
                let waiters = entry.waiters
                entry.waiters = []
                if case .success(let database) = result {
                    entry.database = database
                    entries[release] = entry
                    evictBeyondLimit(&entries, keeping: release)
                } else {
                    entries[release] = nil  // the next request tries again
                }
                return waiters
            }
            for waiter in waiters { waiter.resume(returning: result) }
        }
        thread.start()
    }

    /// Closes the least recently used open releases until at most the limit are open.
    private func evictBeyondLimit(_ entries: inout [String: Entry], keeping release: String) {
        while true {
            let open = entries.filter { $0.value.database != nil }
            guard open.count > limits.maximumLoaded,
                  let oldest = open.filter({ $0.key != release }).min(by: { $0.value.lastUsed < $1.value.lastUsed }) else { return }
            entries[oldest.key] = nil
            logger.notice("closed a pinned release to stay within the limit", metadata: [
                "release": "\(oldest.key)", "limit": "\(limits.maximumLoaded)"])
        }
    }
}
