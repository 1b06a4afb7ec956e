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
///
/// No lock is taken on a request's path (issue 33, docs/benchmarks.md §19.7): each
/// user's unsent bytes are an atomic counter in its ``Account``, which its
/// connections hold, and the total another; a lock is taken when a connection of a
/// user opens or closes, and when a wait is queued or resumed (only when the budget
/// is full). One mutex over every user's counts, taken three times by each request,
/// was 35 % of favoritesd's CPU once every user's connections had a loop of their own
/// (eight users pipelining `fav count` on 512 connections), and another user's
/// `fav count` waited for it behind theirs.
public final class OutputBudget: Sendable {
    /// Unsent bytes in all beyond which no connection starts a request.
    public let total: Int
    /// Unsent bytes of one user beyond which that user's connections start none.
    public let perUser: Int
    /// Unsent bytes of one user below which the total does not stop it.
    public let reserve: Int

    /// One user's unsent bytes, shared by its open connections (``open(_:)``).
    public final class Account: Sendable {
        public let uid: UInt32
        fileprivate let used = Atomic<Int>(0)

        fileprivate init(uid: UInt32) {
            self.uid = uid
        }

        /// This user's unsent bytes now.
        public var unsent: Int { used.load(ordering: .sequentiallyConsistent) }
    }

    private struct Waiter {
        let ticket: UInt64
        let account: Account
        /// True: there is room; false: its task was cancelled (``room(for:)`` only).
        let resume: @Sendable (Bool) -> Void
    }

    private struct Waiting {
        var waiters: [Waiter] = []
        var nextTicket: UInt64 = 0
    }

    private let used = Atomic<Int>(0)
    /// The open accounts and how many connections hold each (taken at a connection's open and close).
    private let accounts = Mutex<[UInt32: (account: Account, holders: Int)]>([:])
    private let waiting = Mutex(Waiting())
    /// Waits queued: read without the lock by ``release(_:_:)``. Raised before a wait
    /// checks for room again and read after bytes are given back, both sequentially
    /// consistent, so a release either sees the wait or the wait sees the room.
    private let waiters = Atomic<Int>(0)

    public init(total: Int, perUser: Int, reserve: Int = 256 * 1024) {
        self.total = max(1, total)
        self.perUser = max(1, min(perUser, total))
        self.reserve = max(0, min(reserve, self.perUser))
    }

    /// `uid`'s account, for one more of its connections; give it back with ``close(_:)``.
    public func open(_ uid: UInt32) -> Account {
        accounts.withLock { accounts in
            if let entry = accounts[uid] {
                accounts[uid] = (entry.account, entry.holders + 1)
                return entry.account
            }
            let account = Account(uid: uid)
            accounts[uid] = (account, 1)
            return account
        }
    }

    /// One connection holding `account` has closed. Answers still charged to it are
    /// given back to it as they leave or are dropped (``release(_:_:)``).
    public func close(_ account: Account) {
        accounts.withLock { accounts in
            guard let entry = accounts[account.uid], entry.account === account else { return }
            accounts[account.uid] = entry.holders > 1 ? (account, entry.holders - 1) : nil
        }
    }

    /// Whether `account`'s user may start a request now.
    public func hasRoom(for account: Account) -> Bool {
        let own = account.used.load(ordering: .sequentiallyConsistent)
        return own < perUser && (own < reserve || used.load(ordering: .sequentiallyConsistent) < total)
    }

    /// Calls `resume` once `account`'s user may start a request: now, or when enough
    /// answers have been written (on the thread that wrote them: `resume` hops itself).
    /// Returns the wait's ticket (nil when `resume` ran now), for ``cancel(_:)``.
    @discardableResult
    public func whenRoom(for account: Account, _ resume: @escaping @Sendable () -> Void) -> UInt64? {
        if hasRoom(for: account) {
            resume()
            return nil
        }
        let ticket = enqueue(account) { _ in resume() }
        // Room may have come between the check and the queueing: the release that made
        // it may not have seen this wait.
        if hasRoom(for: account), let waiter = dequeue(ticket) { waiter.resume(true) }
        return ticket
    }

    /// Waits until `account`'s user may start a request (``whenRoom(for:_:)``); false
    /// when the task was cancelled meanwhile (its connection left). A request checks
    /// again here once it holds its user's lane slot, just before its answer is made:
    /// passing the connection's check did not reserve anything, so 512 connections
    /// of 8 users all passed it while the total was empty, queued on their lanes,
    /// and each then made its 50,000-favourite list (favoritesd: 891 MiB, issue 33).
    public func room(for account: Account) async -> Bool {
        if hasRoom(for: account) { return !Task.isCancelled }
        let ticket = waiting.withLock { waiting -> UInt64 in
            waiting.nextTicket += 1
            return waiting.nextTicket
        }
        // As ``RequestSlots/acquire()``: the task is marked cancelled before its handler
        // runs, and the handler takes this lock, so a cancellation is seen here or finds
        // the waiter queued.
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let queued = waiting.withLock { waiting -> Bool in
                    if Task.isCancelled { return false }
                    waiting.waiters.append(Waiter(ticket: ticket, account: account) { continuation.resume(returning: $0) })
                    waiters.add(1, ordering: .sequentiallyConsistent)
                    return true
                }
                guard queued else { return continuation.resume(returning: false) }
                if hasRoom(for: account), let waiter = dequeue(ticket) { waiter.resume(true) }
            }
        } onCancel: {
            dequeue(ticket)?.resume(false)  // not queued yet (it sees the cancellation), or already resumed
        }
    }

    /// Forgets a wait whose connection has gone. Without it each waiter kept its
    /// closed connection (its handler, its buffers) until the user's answers left:
    /// favoritesd grew by 30 MiB a second to 948 MiB while the daemon, full, closed
    /// attackers' connections that queued behind their unread answers (issue 33).
    public func cancel(_ ticket: UInt64) {
        _ = dequeue(ticket)
    }

    /// Waits queued now (tests).
    public var waitingCount: Int { waiting.withLock { $0.waiters.count } }

    /// Counts an answer of `bytes` handed to a socket of `account`'s user.
    public func charge(_ account: Account, _ bytes: Int) {
        guard bytes > 0 else { return }
        account.used.add(bytes, ordering: .sequentiallyConsistent)
        used.add(bytes, ordering: .sequentiallyConsistent)
    }

    /// An answer charged to `account` has been written (or dropped with its connection).
    public func release(_ account: Account, _ bytes: Int) {
        guard bytes > 0 else { return }
        account.used.subtract(bytes, ordering: .sequentiallyConsistent)
        used.subtract(bytes, ordering: .sequentiallyConsistent)
        guard waiters.load(ordering: .sequentiallyConsistent) > 0 else { return }
        let ready = waiting.withLock { waiting -> [Waiter] in
            var ready: [Waiter] = [], still: [Waiter] = []
            for waiter in waiting.waiters {
                if hasRoom(for: waiter.account) { ready.append(waiter) } else { still.append(waiter) }
            }
            waiting.waiters = still
            waiters.subtract(ready.count, ordering: .sequentiallyConsistent)
            return ready
        }
        for waiter in ready { waiter.resume(true) }
    }

    /// Unsent bytes in all (tests and diagnostics).
    public var unsent: Int { used.load(ordering: .sequentiallyConsistent) }

    private func enqueue(_ account: Account, _ resume: @escaping @Sendable (Bool) -> Void) -> UInt64 {
        waiting.withLock { waiting in
            waiting.nextTicket += 1
            waiting.waiters.append(Waiter(ticket: waiting.nextTicket, account: account, resume: resume))
            waiters.add(1, ordering: .sequentiallyConsistent)
            return waiting.nextTicket
        }
    }

    /// Takes the wait `ticket` off the queue (nil: already resumed or never queued).
    private func dequeue(_ ticket: UInt64) -> Waiter? {
        waiting.withLock { waiting in
            guard let index = waiting.waiters.firstIndex(where: { $0.ticket == ticket }) else { return nil }
            waiters.subtract(1, ordering: .sequentiallyConsistent)
            return waiting.waiters.remove(at: index)
        }
    }
}
