import Foundation

/// ``DatabaseChecks`` on a thread of its own, so that the verified bytes can be
/// sent while they are checked. It shares only its progress, its result and a
/// cancel flag with the request's thread (never the socket).
final class DatabaseCheckThread: @unchecked Sendable {
    private let descriptor: Int32
    private let headerSchemaVersion: UInt32
    private let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var progress = 0.0
    private var outcome: Result<DatabaseFacts, ImportError>?
    private var cancelled = false
    private var waited = false

    init(descriptor: Int32, headerSchemaVersion: UInt32) {
        self.descriptor = descriptor
        self.headerSchemaVersion = headerSchemaVersion
    }

    func start() {
        let thread = Thread { [self] in
            let result = Result { () throws(ImportError) -> DatabaseFacts in
                try DatabaseChecks.run(descriptor: descriptor, headerSchemaVersion: headerSchemaVersion,
                                       progress: { [self] fraction in locked { progress = fraction } },
                                       isCancelled: { [self] in locked { cancelled } })
            }
            locked { outcome = result }
            finished.signal()
        }
        thread.name = "stol.verify.check"
        thread.start()
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    var fraction: Double { locked { progress } }

    /// True once the checks have failed (no point sending more bytes).
    var hasFailed: Bool {
        locked { if case .failure = outcome { true } else { false } }
    }

    func cancel() { locked { cancelled = true } }

    /// Waits up to `timeout` (nil: for good); true when the checks have ended.
    func wait(timeout: Duration?) -> Bool {
        if locked({ waited }) { return true }
        let ended: Bool
        if let timeout {
            let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            ended = finished.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success
        } else {
            finished.wait()
            ended = true
        }
        if ended { locked { waited = true } }
        return ended
    }

    /// The checks' result (call after ``wait(timeout:)`` returned true).
    func result() throws(ImportError) -> DatabaseFacts {
        guard let outcome = locked({ outcome }) else { throw .storage("the database checks did not finish") }
        return try outcome.get()
    }
}
