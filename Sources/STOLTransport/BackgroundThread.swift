import CSTOLSocket
import Glibc
import Synchronization

/// A thread doing background work (``BackgroundPriority``) that a request may come to
/// wait for: the names' indexes built after a start. Waiting for it, the request would
/// otherwise wait for work at nice +19 (``BackgroundPriority/idleNiceness``: below the
/// users' bulk lanes) that steps aside every half millisecond — on a
/// machine whose cores are taken by other programs at the default niceness, for ever:
/// beside six busy loops on two cores a thread at nice +10 yielding every 0.5 ms got
/// 10 ms of CPU in 10 s, and a search after a start did not answer in 40 s. So the first
/// request to wait raises the thread (``raise()``): back to the niceness it had and the
/// kernel's default slice, and its yields stop (they happen only while a thread is as
/// low as when they started). Priority inheritance, done by the waiter.
///
/// Where the process may not raise a thread back (no CAP_SYS_NICE, and an RLIMIT_NICE
/// that does not reach its niceness: a user's own stack started from a shell), the thread
/// is not lowered at all: lookups meanwhile may wait up to a kernel tick behind it, which
/// is better than a request waiting for work it cannot speed up.
public final class BackgroundThread: Sendable {
    private struct State {
        /// The kernel's id of the thread while it is lowered; nil before and once it ends.
        var threadID: Int32?
        /// The niceness it had before it was lowered: what ``raise()`` gives back.
        var niceness: Int32 = 0
        var raised = false
        /// Pooled workers doing part of its work (``helping(_:)``), lowered with it: each
        /// one's id and the niceness it had, given back when its part ends or on ``raise()``.
        var helpers: [Int32: Int32] = [:]
    }

    private let state = Mutex(State())
    private let mayRaiseBack: @Sendable (Int32) -> Bool

    /// `mayRaiseBack` says whether the process could raise a thread back to a niceness
    /// (tests: as a process without the right would).
    public init(mayRaiseBack: @escaping @Sendable (Int32) -> Bool = { stol_may_raise_niceness_to($0) == 1 }) {
        self.mayRaiseBack = mayRaiseBack
    }

    /// Called on the background thread itself: lowers it (``BackgroundPriority/lowerCallingThread(to:)``)
    /// and starts its yields (``BackgroundPriority/startYielding()``) — unless a request
    /// raised it already, before its work got this far, or it could not be raised back.
    public func lowerCallingThread() {
        let niceness = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        guard mayRaiseBack(niceness) else { return }
        state.withLock { state in
            guard !state.raised else { return }
            BackgroundPriority.lowerCallingThread(to: BackgroundPriority.idleNiceness)
            BackgroundPriority.startYielding()
            state.threadID = stol_thread_id()
            state.niceness = niceness
        }
    }

    /// How long no request must have run before work waiting in ``waitUntilRequestsPause()``
    /// starts, counted from the wait's start when none ran yet: longer than a job's gaps
    /// between its requests (a client sends the next while it reads an answer; a script
    /// opens a second connection, reads its next file), so that a job's requests are not
    /// taken for its end. At 5 ms, and counted from nothing before the first request, the
    /// build started in the gaps of a one-off job and took a share of the cores from its
    /// lineages (100,000 of them 0.49–0.83 s after a start against 0.45–0.51 s without).
    /// A request that needs the work raises it at once, whatever the wait.
    public static let quietNanoseconds: UInt64 = 250_000_000

    /// The longest a lowered thread waits in ``waitUntilRequestsPause()``: work nobody
    /// asked for still gets done, lowered, on a daemon that is never quiet.
    public static let longestWaitNanoseconds: UInt64 = 30_000_000_000

    /// Called on the lowered thread before its work: returns once no request ran for
    /// ``quietNanoseconds`` (``RequestActivity``), once a request waits for the work
    /// (``raise()``), or after ``longestWaitNanoseconds``; at once where the thread is not
    /// lowered. A lowered thread still takes a share of a core beside the users' requests
    /// (its caches and memory traffic too); the names' build right after a start needs
    /// none of the cores a first job's requests are using.
    public func waitUntilRequestsPause(quiet: UInt64 = BackgroundThread.quietNanoseconds,
                                       longest: UInt64 = BackgroundThread.longestWaitNanoseconds) {
        let started = RequestActivity.now()
        let deadline = started &+ longest
        while state.withLock({ $0.threadID != nil && !$0.raised }), !RequestActivity.isQuiet(for: quiet, since: started),
              RequestActivity.now() < deadline {
            pausePolls.add(1, ordering: .relaxed)
            var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
            nanosleep(&pause, nil)
        }
    }

    /// How often ``waitUntilRequestsPause()`` found requests running (tests).
    public var requestPausePolls: Int { pausePolls.load(ordering: .relaxed) }
    private let pausePolls = Atomic<Int>(0)

    /// Called from any thread once a request waits for the work: the thread runs at the
    /// niceness it had before (the process's) with the default slice, and yields no more.
    /// Only once.
    public func raise() {
        state.withLock { state in
            guard !state.raised else { return }
            state.raised = true
            for (helper, niceness) in state.helpers { Self.setScheduling(of: helper, niceness: niceness) }
            state.helpers = [:]
            guard let thread = state.threadID else { return }
            Self.setScheduling(of: thread, niceness: state.niceness)
        }
    }

    /// Runs `body`, part of the background work handed to a pooled worker (libdispatch's:
    /// the start's sort of the prominent names beside the names' read), on the calling
    /// worker at the background thread's priority: lowered and yielding while the thread
    /// is lowered, raised with it by ``raise()`` (a request that waits for the build waits
    /// for this part too), and its own priority given back when `body` ends, since the
    /// pool's next work is not background work. Before the thread is lowered, after it was
    /// raised, or where it is never lowered, `body` runs as it is.
    ///
    /// Linux lowers the calling thread only: a pooled worker inherits nothing from the
    /// thread that queued its work. Run at the daemon's priority, that sort competed with
    /// the users' requests on equal terms: 8 % of the CPU samples of a one-off job's
    /// 100,000 lineages on a fresh start (two cores), beside the lineages' own lane.
    public func helping<T>(_ body: () throws -> T) rethrows -> T {
        let niceness = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let thread = stol_thread_id()
        let lowered = mayRaiseBack(niceness) && state.withLock { state in
            guard state.threadID != nil, !state.raised else { return false }
            BackgroundPriority.lowerCallingThread(to: BackgroundPriority.idleNiceness)
            BackgroundPriority.startYielding()
            state.helpers[thread] = niceness
            return true
        }
        defer {
            if lowered {
                state.withLock { state in
                    if state.helpers.removeValue(forKey: thread) != nil { Self.setScheduling(of: thread, niceness: niceness) }
                    BackgroundPriority.endCallingThread()
                }
            }
        }
        return try body()
    }

    /// The ids of the pooled workers running part of the work lowered now (tests read
    /// their niceness in /proc).
    public var loweredHelperIDs: [Int32] { state.withLock { Array($0.helpers.keys) } }

    /// A thread's niceness and the kernel's default slice; the niceness alone where
    /// `sched_setattr` is refused.
    private static func setScheduling(of thread: Int32, niceness: Int32) {
        if stol_set_scheduling_of(thread, niceness, 0) != 0 {
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(thread), niceness)
        }
    }

    /// Whether a request raised the thread (tests, diagnostics).
    public var wasRaised: Bool { state.withLock { $0.raised } }

    /// The thread's id while it is lowered (tests read its niceness in /proc).
    public var loweredThreadID: Int32? { state.withLock { $0.threadID } }

    /// Called on the background thread before it ends: its timer goes, and the id is
    /// forgotten under the lock, so that a later ``raise()`` never reaches a thread the
    /// kernel gave the same id since.
    public func endCallingThread() {
        state.withLock { state in
            state.threadID = nil
            BackgroundPriority.endCallingThread()
        }
    }
}
