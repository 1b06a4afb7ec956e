import Foundation
import Logging
import STOLFileSystem
import STOLModel
import STOLProtocol
import Synchronization

/// Decides which database answers: the reference database when the activation
/// state asks for it and it is usable, otherwise the bundled one (saying why).
///
/// The import coordinator owns the activation state; this server only reads it.
/// Noticing a switch costs two `stat(2)` calls, made at most once per
/// `recheckInterval` (1 ms in the daemon): under load that saves two of the six
/// syscalls of a lookup by id, and a switch is still seen by every request that
/// starts a millisecond after it, with no inotify plumbing.
///
/// **Switching never stalls the other requests.** Opening a database (four
/// connections, three `count(*)` over the taxa and names) takes milliseconds on
/// the bundled database and much longer on the full NCBI tree. The request that
/// notices a switch opens the new database outside the lock, which every event
/// loop takes for every request; the lock is held only to claim the switch and
/// to install the result. Requests that arrive meanwhile are answered by the
/// previous database, whole (never a half-opened one), and do not open it a
/// second time. The request that opened it is answered by the new one.
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

    /// What a request does once it has looked at the files.
    private enum Decision {
        case serve(Selection)
        case open
    }

    public let bundledPath: String
    public let referencePath: String
    private let activationPath: String
    private let logger: Logger
    private let bundled: TaxonomyDatabase
    private let open: Opener
    private let state: Mutex<State>
    private let recheckNanoseconds: UInt64
    /// CLOCK_MONOTONIC nanoseconds; a test's own clock in tests.
    private let now: @Sendable () -> UInt64

    /// Fails when the bundled database itself is unusable: without it there is
    /// nothing to fall back to, so the daemon must not start.
    ///
    /// - Parameter recheckInterval: how long a request may rely on the previous
    ///   check of the activation state; zero checks on every request.
    public convenience init(bundledPath: String, referencePath: String, activationPath: String, logger: Logger,
                            recheckInterval: Duration = .zero) throws(TaxonomyError) {
        try self.init(bundledPath: bundledPath, referencePath: referencePath, activationPath: activationPath,
                      logger: logger, recheckInterval: recheckInterval) { path, kind throws(TaxonomyError) in
            try TaxonomyDatabase(path: path, kind: kind)
        }
    }

    /// Opens the bundled database and makes the first selection (opening the
    /// reference database if it is requested), so that no request waits for
    /// that and no request ever finds nothing selected.
    ///
    /// - Parameter now: the clock the recheck interval is measured on (a test
    ///   advances its own instead of sleeping).
    init(bundledPath: String, referencePath: String, activationPath: String, logger: Logger,
         recheckInterval: Duration = .zero, now: @escaping @Sendable () -> UInt64 = monotonicNanoseconds,
         open: @escaping Opener) throws(TaxonomyError) {
        let interval = recheckInterval.components
        self.recheckNanoseconds = UInt64(max(0, interval.seconds)) * 1_000_000_000
            + UInt64(max(0, interval.attoseconds / 1_000_000_000))
        self.bundledPath = bundledPath
        self.referencePath = referencePath
        self.activationPath = activationPath
        self.logger = logger
        self.open = open
        self.now = now
        let bundled = try open(bundledPath, .bundled)
        self.bundled = bundled
        let key = Self.key(activationPath: activationPath, referencePath: referencePath)
        let selection = Self.select(key, bundled: bundled, referencePath: referencePath, activationPath: activationPath,
                                    open: open, logger: logger)
        self.state = Mutex(State(key: key, selection: selection, checkedAt: now()))
    }

    /// The database to answer the current request with.
    public func current() -> Selection {
        let now = self.now()
        if recheckNanoseconds > 0, let recent = state.withLock({ state -> Selection? in
            now &- state.checkedAt < recheckNanoseconds ? state.selection : nil
        }) {
            return recent
        }
        let key = Self.key(activationPath: activationPath, referencePath: referencePath)
        let decision = state.withLock { state -> Decision in
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
            return .open
        }
        switch decision {
        case .serve(let selection): return selection
        case .open: break
        }
        let selection = Self.select(key, bundled: bundled, referencePath: referencePath, activationPath: activationPath,
                                    open: open, logger: logger)
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

    private static func key(activationPath: String, referencePath: String) -> Key {
        Key(activation: FileStat(path: activationPath), reference: FileStat(path: referencePath))
    }

    /// The selection for `key`, opening the reference database when it is
    /// requested. Slow (it may open a database): never called under the lock.
    private static func select(_ key: Key, bundled: TaxonomyDatabase, referencePath: String, activationPath: String,
                               open: Opener, logger: Logger) -> Selection {
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
