import Foundation
import Logging
import STOLFileSystem
import STOLModel
import STOLProtocol
import Synchronization
import STOLTransport

/// Decides which database answers: the default release when the activation
/// state names one and it is usable, otherwise the bundled one (saying why); and,
/// for requests that pin a release, that release (``PinnedReleases``).
///
/// The import coordinator owns the activation state; this server only reads it.
/// Noticing a switch costs two `stat(2)` calls, made at most once per
/// `recheckInterval` (1 ms in the daemon): under load that saves two of the six
/// syscalls of a lookup by id, and a switch is still seen by every request that
/// starts a millisecond after it, with no inotify plumbing.
///
/// **Switching never stalls a request.** Opening a database (four connections,
/// three `count(*)` over the taxa and names) takes milliseconds on the bundled
/// database and much longer on the full NCBI tree. The service's requests ask
/// ``currentWithoutWaiting()``: the one that notices a switch starts the open on a
/// thread of its own, outside the lock (which every event loop takes for every
/// request; it is held only to claim the switch and to install the result), and
/// it and every request after it are answered by the previous database, whole
/// (never a half-opened one), until the new one is installed. ``current()`` opens
/// on the calling thread instead, for callers that want the new database at once.
public final class ActiveDatabaseProvider: Sendable {
    public struct Selection: Sendable {
        public let database: TaxonomyDatabase
        public let referencePresent: Bool
        public let referenceRequested: Bool
        /// Why the bundled DB serves although the reference was requested.
        public let fallbackReason: String?
    }

    /// How a database file is opened: ``TaxonomyDatabase/init(path:kind:loadIndexes:)``,
    /// or in tests one that waits until released, to see what answers meanwhile.
    typealias Opener = @Sendable (_ path: String, _ kind: Stol_V1_DatabaseKind) throws(TaxonomyError) -> TaxonomyDatabase

    private struct Key: Equatable {
        var activation: FileStat?
        /// The default release's file, as the activation state names it.
        var referencePath: String
        var reference: FileStat?
    }

    private struct State {
        /// The files' state the selection was made for.
        var key: Key
        var selection: Selection
        /// CLOCK_MONOTONIC nanoseconds of the last `stat(2)` check.
        var checkedAt: UInt64
        /// The files' state one request is opening a database for, outside the lock.
        var opening: Key?
    }


    public let bundledPath: String
    /// The one reference database of installations before releases (used while the
    /// activation state asks for the reference and names no release).
    public let legacyReferencePath: String
    public let releasesDirectory: String
    private let activationPath: String
    /// The activation state's file as last read, and the reference path it names:
    /// read again only when the file changes.
    private let resolvedActivation = Mutex<(stat: FileStat?, referencePath: String)?>(nil)
    /// The installed releases other than the default, loaded when a request pins one.
    public let pinned: PinnedReleases
    private let logger: Logger
    private let bundled: TaxonomyDatabase
    /// The bundled database (always open: the fallback).
    public var bundledDatabase: TaxonomyDatabase { bundled }
    private let open: Opener
    private let state: Mutex<State>
    /// Signalled when the last switch opened on a thread of its own is installed.
    private let pendingOpen = Mutex<DispatchSemaphore?>(nil)
    private let recheckNanoseconds: UInt64
    /// CLOCK_MONOTONIC nanoseconds; a test's own clock in tests.
    private let now: @Sendable () -> UInt64

    /// Fails when the bundled database itself is unusable: without it there is
    /// nothing to fall back to, so the daemon must not start.
    ///
    /// - Parameter recheckInterval: how long a request may rely on the previous
    ///   check of the activation state; zero checks on every request.
    /// - Parameter treeImages: where each database's tree image is kept (``TreeImageCache``):
    ///   the default, the bundled and every pinned release start from theirs alike.
    public convenience init(bundledPath: String, referencePath: String, releasesDirectory: String? = nil,
                            activationPath: String, logger: Logger, recheckInterval: Duration = .zero,
                            pinnedLimits: PinnedReleases.Limits = .init(), treeImages: TreeImageCache? = nil) throws(TaxonomyError) {
        try self.init(bundledPath: bundledPath, referencePath: referencePath, releasesDirectory: releasesDirectory,
                      activationPath: activationPath, logger: logger, recheckInterval: recheckInterval,
                      pinnedLimits: pinnedLimits) { path, kind throws(TaxonomyError) in
            try TaxonomyDatabase(path: path, kind: kind, treeImages: treeImages)
        }
    }

    /// Opens the bundled database and makes the first selection (opening the
    /// reference database if it is requested), so that no request waits for
    /// that and no request ever finds nothing selected.
    ///
    /// - Parameter now: the clock the recheck interval is measured on (a test
    ///   advances its own instead of sleeping).
    init(bundledPath: String, referencePath: String, releasesDirectory: String? = nil, activationPath: String,
         logger: Logger, recheckInterval: Duration = .zero, pinnedLimits: PinnedReleases.Limits = .init(),
         now: @escaping @Sendable () -> UInt64 = monotonicNanoseconds, open: @escaping Opener) throws(TaxonomyError) {
        let interval = recheckInterval.components
        self.recheckNanoseconds = UInt64(max(0, interval.seconds)) * 1_000_000_000
            + UInt64(max(0, interval.attoseconds / 1_000_000_000))
        self.bundledPath = bundledPath
        self.legacyReferencePath = referencePath
        let releasesDirectory = releasesDirectory ?? AtomicFile.directory(of: referencePath) + "/releases"
        self.releasesDirectory = releasesDirectory
        self.activationPath = activationPath
        self.logger = logger
        self.now = now
        let pinned = PinnedReleases(directory: releasesDirectory, limits: pinnedLimits, logger: logger, now: now, open: open)
        self.pinned = pinned
        // A release that becomes the default while it is open for pinned requests is
        // handed over rather than opened a second time.
        let open: Opener = { path, kind throws(TaxonomyError) in
            if kind == .reference, let database = pinned.take(path: path) { return database }
            return try open(path, kind)
        }
        self.open = open
        let bundled = try open(bundledPath, .bundled)
        self.bundled = bundled
        self.state = Mutex(State(key: Key(activation: nil, referencePath: "", reference: nil),
                                 selection: Selection(database: bundled, referencePresent: false, referenceRequested: false,
                                                      fallbackReason: nil), checkedAt: 0))
        let key = currentKey()
        let selection = Self.select(key, bundled: bundled, activationPath: activationPath, open: open, logger: logger)
        state.withLock { $0 = State(key: key, selection: selection, checkedAt: now()) }
    }

    /// The file of the release requests without one are answered from (the legacy
    /// `reference.sqlite` while the state names none), as the activation state says now.
    public var referencePath: String { currentKey().referencePath }

    /// The database a request that names `release` is answered from: the default
    /// selection for none (or the default's own name), the bundled database for
    /// ``ReleaseName/bundled``, else that installed release, opened on demand; nil
    /// while it is being opened (``pinnedSelection(_:)`` waits for it).
    public func selection(forRelease release: String) throws(TaxonomyError) -> Selection? {
        let current = currentWithoutWaiting()
        if release.isEmpty || release == current.database.release { return current }
        if release == ReleaseName.bundled { return Selection(database: bundled, referencePresent: current.referencePresent,
                                                             referenceRequested: current.referenceRequested,
                                                             fallbackReason: current.fallbackReason) }
        guard let database = try pinned.database(release) else { return nil }
        return Selection(database: database, referencePresent: true, referenceRequested: false, fallbackReason: nil)
    }

    /// The file of `release` (``ReleaseName/bundled`` for the bundled database), for
    /// reading it directly (a diff, a history) without loading it.
    public func file(ofRelease release: String) throws(TaxonomyError) -> String {
        release == ReleaseName.bundled ? bundledPath : try pinned.installedFile(release).path
    }

    /// ``selection(forRelease:)``, suspending (holding no thread) while a pinned
    /// release is opened.
    public func pinnedSelection(_ release: String) async throws(TaxonomyError) -> Selection {
        if let selection = try selection(forRelease: release) { return selection }
        let database = try await pinned.opened(release)
        return Selection(database: database, referencePresent: true, referenceRequested: false, fallbackReason: nil)
    }

    /// The database to answer the current request with, never waiting for one to
    /// open: a switch noticed here is opened on a thread of its own ("stol.open"),
    /// and until it is installed this and every other request are answered by the
    /// previous database, whole. The service's requests come here: an event loop
    /// that opened the full NCBI tree itself left every connection it serves
    /// without an answer for seconds (measured: 10 s for two of four clients).
    public func currentWithoutWaiting() -> Selection {
        switch claim() {
        case .serve(let selection):
            return selection
        case .open(let key, let previous):
            let done = DispatchSemaphore(value: 0)
            pendingOpen.withLock { $0 = done }
            let thread = Thread(named: "stol.open") { [self] in
                _ = self.openAndInstall(key)
                done.signal()
            }
            thread.start()
            return previous
        }
    }

    /// Waits until a switch being opened by ``currentWithoutWaiting()`` is installed
    /// (or found unusable): for tests and for callers on threads of their own.
    @available(*, noasync, message: "blocks the thread")
    func waitForPendingSwitch() {
        guard let pending = pendingOpen.withLock({ $0 }) else { return }
        pending.wait()
        pending.signal()
    }

    /// The database to answer the current request with, opening a switched-to one
    /// on the calling thread when this call is the one that notices the switch (the
    /// benchmark, tests, and the first selection).
    public func current() -> Selection {
        switch claim() {
        case .serve(let selection): return selection
        case .open(let key, _): return openAndInstall(key)
        }
    }

    private enum Claim {
        case serve(Selection)
        /// This caller opens the database for `key`; `previous` answers meanwhile.
        case open(Key, previous: Selection)
    }

    /// Looks at the files (at most once per recheck interval) and decides whether
    /// the caller must open a database: only one caller per switch does.
    /// The selection that answers requests without a release now, without opening
    /// anything or waiting: nil when the activation state names a database that is
    /// not the one open (a request on a lane then opens it, as ``claim()`` does).
    public func selectionWithoutOpening() -> Selection? {
        let now = self.now()
        if recheckNanoseconds > 0, let recent = state.withLock({ state -> Selection? in
            now &- state.checkedAt < recheckNanoseconds ? state.selection : nil
        }) {
            return recent
        }
        let key = currentKey()
        return state.withLock { state -> Selection? in
            guard state.key == key, state.opening == nil else { return nil }
            state.checkedAt = now
            return state.selection
        }
    }

    private func claim() -> Claim {
        let now = self.now()
        if recheckNanoseconds > 0, let recent = state.withLock({ state -> Selection? in
            now &- state.checkedAt < recheckNanoseconds ? state.selection : nil
        }) {
            return .serve(recent)
        }
        let key = currentKey()
        return state.withLock { state -> Claim in
            state.checkedAt = now
            if state.key == key {
                // Back to what is installed (a switch undone while it was being
                // opened): that opening must not be installed any more.
                state.opening = nil
                return .serve(state.selection)
            }
            // Another request is opening this very state: the previous database
            // answers until it is ready.
            if state.opening == key { return .serve(state.selection) }
            state.opening = key
            return .open(key, previous: state.selection)
        }
    }

    /// Opens the selection for `key` (outside the lock) and installs it unless a
    /// later switch was claimed meanwhile.
    private func openAndInstall(_ key: Key) -> Selection {
        let selection = Self.select(key, bundled: bundled, activationPath: activationPath, open: open, logger: logger)
        return state.withLock { state in
            // A later switch was claimed meanwhile: this request still answers
            // with what it opened (the state when it started), but the later
            // one is what gets installed.
            guard state.opening == key else { return selection }
            state.opening = nil
            if state.selection.database.fingerprint != selection.database.fingerprint {
                logger.notice("active database switched", metadata: [
                    "kind": "\(selection.database.kind)", "fallback": "\(selection.fallbackReason ?? "none")"])
            }
            state.key = key
            state.selection = selection
            return selection
        }
    }

    /// CLOCK_MONOTONIC through the vDSO: no syscall.
    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The files' state now: two `stat(2)` calls, and a read of the activation
    /// state only when it changed since the last one.
    private func currentKey() -> Key {
        let activation = FileStat(path: activationPath)
        let path = resolvedActivation.withLock { resolved -> String in
            if let resolved, resolved.stat == activation { return resolved.referencePath }
            let state = ActivationState.read(path: activationPath)
            let path = state.defaultRelease.map(pinned.path) ?? legacyReferencePath
            resolved = (activation, path)
            return path
        }
        return Key(activation: activation, referencePath: path, reference: FileStat(path: path))
    }

    /// The selection for `key`, opening the reference database when it is
    /// requested. Slow (it may open a database): never called under the lock.
    private static func select(_ key: Key, bundled: TaxonomyDatabase, activationPath: String,
                               open: Opener, logger: Logger) -> Selection {
        let referencePath = key.referencePath
        let requested = ActivationState.read(path: activationPath).useReferenceDB
        let present = key.reference != nil
        guard requested else {
            return Selection(database: bundled, referencePresent: present, referenceRequested: false, fallbackReason: nil)
        }
        guard present else {
            return Selection(database: bundled, referencePresent: false, referenceRequested: true,
                             fallbackReason: "the reference database is not installed")
        }
        do {
            let reference = try open(referencePath, .reference)
            return Selection(database: reference, referencePresent: true, referenceRequested: true, fallbackReason: nil)
        } catch {
            logger.error("reference database unusable; serving the bundled one", metadata: ["error": "\(error)"])
            return Selection(database: bundled, referencePresent: true, referenceRequested: true,
                             fallbackReason: "the reference database is unusable: \(error.protocolError.message)")
        }
    }
}
