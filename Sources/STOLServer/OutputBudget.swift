import Synchronization

/// The bytes of answers made but not yet written to their sockets, over every
/// connection of the daemon and per user, with a bound on each: a connection
/// starts its next request only while both have room (``whenRoom(for:_:)``), and
/// the request makes its answer only once they still have (``room(for:)``).
///
/// A connection already stops reading while its own unsent answers pass its high
/// water mark, but that bounds one connection: one user pipelining 50,000-node
/// subtrees on 64 connections without reading held 507–564 MiB of answers, 8
/// users on 512 connections 1.6 GiB (issue 33). With these bounds the answers in
/// the daemon's memory are at most ``total`` plus the ones being made (one per
/// lane), plus, for each user under ``reserve``, one answer (at most 4 MiB), whatever
/// any number of users and connections do.
///
/// The total does not stop a user with less than ``reserve`` unsent: a user who
/// reads its answers is never held up by other users who do not. Without that, 8
/// uids pipelining subtrees without reading filled the total and another user's
/// lookup waited 27.9 s, until the slow-reader timeout closed them (issue 33).
public final class OutputBudget: Sendable {
    /// Unsent bytes in all beyond which no connection starts a request.
    public let total: Int
    /// Unsent bytes of one user beyond which that user's connections start none.
    public let perUser: Int
    /// Unsent bytes of one user below which the total does not stop it.
    public let reserve: Int

    private struct Waiter {
        let ticket: UInt64
        let uid: UInt32
        /// True: there is room; false: its task was cancelled (``room(for:)`` only).
        let resume: @Sendable (Bool) -> Void
    }

    private struct State {
        var used = 0
        var byUser: [UInt32: Int] = [:]
        var waiting: [Waiter] = []
        var nextTicket: UInt64 = 0
    }

    private let state = Mutex(State())

    public init(total: Int, perUser: Int, reserve: Int = 256 * 1024) {
        self.total = max(1, total)
        self.perUser = max(1, min(perUser, total))
        self.reserve = max(0, min(reserve, self.perUser))
    }

    /// Whether `uid` may start a request now.
    public func hasRoom(for uid: UInt32) -> Bool {
        state.withLock { Self.hasRoom(for: uid, in: $0, total: total, perUser: perUser, reserve: reserve) }
    }

    /// Calls `resume` once `uid` may start a request: now, or when enough answers
    /// have been written (on the thread that wrote them: `resume` hops itself).
    /// Returns the wait's ticket (nil when `resume` ran now), for ``cancel(_:)``.
    @discardableResult
    public func whenRoom(for uid: UInt32, _ resume: @escaping @Sendable () -> Void) -> UInt64? {
        let ticket = state.withLock { state -> UInt64? in
            if Self.hasRoom(for: uid, in: state, total: total, perUser: perUser, reserve: reserve) { return nil }
            state.nextTicket += 1
            state.waiting.append(Waiter(ticket: state.nextTicket, uid: uid) { _ in resume() })
            return state.nextTicket
        }
        if ticket == nil { resume() }
        return ticket
    }

    /// Waits until `uid` may start a request (``whenRoom(for:_:)``); false when the
    /// task was cancelled meanwhile (its connection left). A request checks again
    /// here once it holds its user's lane slot, just before its answer is made:
    /// passing the connection's check did not reserve anything, so 512 connections
    /// of 8 users all passed it while the total was empty, queued on their lanes,
    /// and each then made its 50,000-favourite list (favoritesd: 891 MiB, issue 33).
    public func room(for uid: UInt32) async -> Bool {
        let ticket = state.withLock { state -> UInt64? in
            if Self.hasRoom(for: uid, in: state, total: total, perUser: perUser, reserve: reserve) { return nil }
            state.nextTicket += 1
            return state.nextTicket
        }
        guard let ticket else { return !Task.isCancelled }
        // As ``RequestSlots/acquire()``: the task is marked cancelled before its handler
        // runs, and the handler takes this lock, so a cancellation is seen here or finds
        // the waiter queued.
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if Self.hasRoom(for: uid, in: state, total: total, perUser: perUser, reserve: reserve) { return true }
                    state.waiting.append(Waiter(ticket: ticket, uid: uid) { continuation.resume(returning: $0) })
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiting.firstIndex(where: { $0.ticket == ticket }) else { return nil }
                return state.waiting.remove(at: index)
            }
            waiter?.resume(false)  // not queued yet (it sees the cancellation), or already resumed
        }
    }

    /// Forgets a wait whose connection has gone. Without it each waiter kept its
    /// closed connection (its handler, its buffers) until the user's answers left:
    /// favoritesd grew by 30 MiB a second to 948 MiB while the daemon, full, closed
    /// attackers' connections that queued behind their unread answers (issue 33).
    public func cancel(_ ticket: UInt64) {
        state.withLock { state in state.waiting.removeAll { $0.ticket == ticket } }
    }

    /// Waits queued now (tests).
    public var waiting: Int { state.withLock { $0.waiting.count } }

    /// Counts an answer of `bytes` handed to `uid`'s socket.
    public func charge(_ uid: UInt32, _ bytes: Int) {
        guard bytes > 0 else { return }
        state.withLock { state in
            state.used += bytes
            state.byUser[uid, default: 0] += bytes
        }
    }

    /// An answer charged to `uid` has been written (or dropped with its connection).
    public func release(_ uid: UInt32, _ bytes: Int) {
        guard bytes > 0 else { return }
        let ready = state.withLock { state -> [Waiter] in
            state.used -= bytes
            let left = state.byUser[uid, default: 0] - bytes
            state.byUser[uid] = left > 0 ? left : nil
            var ready: [Waiter] = [], still: [Waiter] = []
            for waiter in state.waiting {
                if Self.hasRoom(for: waiter.uid, in: state, total: total, perUser: perUser, reserve: reserve) {
                    ready.append(waiter)
                } else {
                    still.append(waiter)
                }
            }
            state.waiting = still
            return ready
        }
        for waiter in ready { waiter.resume(true) }
    }

    /// Unsent bytes in all and of `uid` (tests and diagnostics).
    public func usage(of uid: UInt32) -> (total: Int, user: Int) {
        state.withLock { ($0.used, $0.byUser[uid] ?? 0) }
    }

    private static func hasRoom(for uid: UInt32, in state: State, total: Int, perUser: Int, reserve: Int) -> Bool {
        let own = state.byUser[uid, default: 0]
        return own < perUser && (state.used < total || own < reserve)
    }
}
