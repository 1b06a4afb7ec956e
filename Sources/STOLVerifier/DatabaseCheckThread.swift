import Foundation
import STOLImportCore
import STOLModel
import Synchronization
import STOLTransport

/// ``DatabaseChecks`` on a thread of its own, so that the verified bytes can be
/// sent while they are checked. It shares only its progress, its result and a
/// cancel flag with the request's thread (never the socket).
final class DatabaseCheckThread: Sendable {
    /// What the checking thread and the request's thread share.
    private struct Shared {
        var progress = 0.0
        var outcome: Result<DatabaseFacts, ImportError>?
        var cancelled = false
        var waited = false
    }

    private let descriptor: Int32
    private let headerSchemaVersion: UInt32
    private let depth: DatabaseChecks.IntegrityDepth
    private let finished = DispatchSemaphore(value: 0)
    private let shared = Mutex(Shared())

    init(descriptor: Int32, headerSchemaVersion: UInt32, depth: DatabaseChecks.IntegrityDepth) {
        self.descriptor = descriptor
        self.headerSchemaVersion = headerSchemaVersion
        self.depth = depth
    }

    func start() {
        let thread = Thread(named: "stol.check") { [self] in
            let result = Result { () throws(ImportError) -> DatabaseFacts in
                try DatabaseChecks.run(descriptor: descriptor, headerSchemaVersion: headerSchemaVersion, depth: depth,
                                       progress: { [self] fraction in shared.withLock { $0.progress = fraction } },
                                       isCancelled: { [self] in shared.withLock { $0.cancelled } })
            }
            shared.withLock { $0.outcome = result }
            finished.signal()
        }
        thread.start()
    }

    var fraction: Double { shared.withLock { $0.progress } }

    /// True once the checks have failed (no point sending more bytes).
    var hasFailed: Bool {
        shared.withLock { if case .failure = $0.outcome { true } else { false } }
    }

    func cancel() { shared.withLock { $0.cancelled = true } }

    /// Waits up to `timeout` (nil: for good); true when the checks have ended.
    func wait(timeout: Duration?) -> Bool {
        if shared.withLock({ $0.waited }) { return true }
        let ended: Bool
        if let timeout {
            let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            ended = finished.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success
        } else {
            finished.wait()
            ended = true
        }
        if ended { shared.withLock { $0.waited = true } }
        return ended
    }

    /// The checks' result (call after ``wait(timeout:)`` returned true).
    func result() throws(ImportError) -> DatabaseFacts {
        guard let outcome = shared.withLock({ $0.outcome }) else { throw .storage("the database checks did not finish") }
        return try outcome.get()
    }
}
