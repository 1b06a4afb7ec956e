import Foundation
import Logging
import STOLFileSystem
import STOLProtocol
import STOLRuntime
import Synchronization

/// Decides which database answers: the reference database when the activation
/// state asks for it and it is usable, otherwise the bundled one (saying why).
///
/// The import coordinator owns the activation state; this server only reads it.
/// Noticing a switch costs two `stat(2)` calls, made at most once per
/// `recheckInterval` (1 ms in the daemon): under load that saves two of the six
/// syscalls of a lookup by id, and a switch is still seen by every request that
/// starts a millisecond after it, with no inotify plumbing.
public final class ActiveDatabaseProvider: Sendable {
    public struct Selection: Sendable {
        public let database: TaxonomyDatabase
        public let referencePresent: Bool
        public let referenceRequested: Bool
        /// Why the bundled DB serves although the reference was requested.
        public let fallbackReason: String?
    }

    private struct Key: Equatable {
        var activation: FileStat?
        var reference: FileStat?
    }

    private struct State {
        var key: Key?
        var selection: Selection?
        /// CLOCK_MONOTONIC nanoseconds of the last `stat(2)` check.
        var checkedAt: UInt64 = 0
    }

    public let bundledPath: String
    public let referencePath: String
    private let activationPath: String
    private let logger: Logger
    private let bundled: TaxonomyDatabase
    private let state = Mutex(State())
    private let recheckNanoseconds: UInt64

    /// Fails when the bundled database itself is unusable: without it there is
    /// nothing to fall back to, so the daemon must not start.
    ///
    /// - Parameter recheckInterval: how long a request may rely on the previous
    ///   check of the activation state; zero checks on every request.
    public init(bundledPath: String, referencePath: String, activationPath: String, logger: Logger,
                recheckInterval: Duration = .zero) throws(TaxonomyError) {
        let interval = recheckInterval.components
        self.recheckNanoseconds = UInt64(max(0, interval.seconds)) * 1_000_000_000
            + UInt64(max(0, interval.attoseconds / 1_000_000_000))
        self.bundledPath = bundledPath
        self.referencePath = referencePath
        self.activationPath = activationPath
        self.logger = logger
        self.bundled = try TaxonomyDatabase(path: bundledPath, kind: .bundled)
    }

    /// The database to answer the current request with.
    public func current() -> Selection {
        let now = Self.monotonicNanoseconds()
        if recheckNanoseconds > 0, let recent = state.withLock({ state -> Selection? in
            guard let selection = state.selection, now &- state.checkedAt < recheckNanoseconds else { return nil }
            return selection
        }) {
            return recent
        }
        let key = Key(activation: FileStat(path: activationPath), reference: FileStat(path: referencePath))
        return state.withLock { state in
            state.checkedAt = now
            if let selection = state.selection, state.key == key { return selection }
            let selection = select(key)
            if let previous = state.selection, previous.database.fingerprint != selection.database.fingerprint {
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

    private func select(_ key: Key) -> Selection {
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
            let reference = try TaxonomyDatabase(path: referencePath, kind: .reference)
            return Selection(database: reference, referencePresent: true, referenceRequested: true, fallbackReason: nil)
        } catch {
            logger.error("reference database unusable; serving the bundled one", metadata: ["error": "\(error)"])
            return Selection(database: bundled, referencePresent: true, referenceRequested: true,
                             fallbackReason: "the reference database is unusable: \(error.protocolError.message)")
        }
    }
}
