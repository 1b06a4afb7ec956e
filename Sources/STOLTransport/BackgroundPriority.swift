import CSTOLSocket
import Glibc

/// How a thread that does work nobody is waiting on at once (a user's bulk lane, the
/// names' indexes built after a start) steps aside for the threads that answer lookups.
///
/// A lower niceness alone is not enough on Linux 6.6 and later (EEVDF): a thread keeps
/// the core for its slice once picked, and the kernel notices the slice's end only at
/// its next tick (4 ms at 250 Hz), so another user's lookup woken meanwhile waited up to
/// a tick behind eight users' bulk work at nice +10 (`stol-bench attack`: `taxon` p99
/// 3.2–5.3 ms against 0.7–0.9 quiet while eight users listed 50,000 favourites each).
/// So background threads also yield every half millisecond while they work
/// (``yieldingOften(_:)``), and ask for the kernel's *shortest* slice, 0.1 ms: a yield
/// moves the thread's next turn one slice (over its weight) further away, and with a
/// long slice beside programs that keep the cores busy the yields starved it (20 ms at
/// nice +10: 10 ms of CPU in 10 s where the same thread without yields got 322; 0.1 ms:
/// 267). Work someone comes to wait for is raised back (``BackgroundThread``).
public enum BackgroundPriority {
    /// The niceness of background work (lowering it needs no privilege; raising it back would).
    public static let niceness: Int32 = 10

    /// The niceness of work nobody asked for (``BackgroundThread``: the names' indexes
    /// built after a start), below the users' bulk lanes (``niceness``): at the same
    /// niceness a one-off job's batch of lineages, run on its user's bulk lane, took turns
    /// with the build on the core it had: 100,000 ids answered in 0.92–0.97 s right after
    /// a start against 0.57–0.59 s once the build was done. Nice 19 weighs 15 against the
    /// lane's 110 (the kernel's weights): the build now takes what the users leave.
    public static let idleNiceness: Int32 = 19

    /// The slice background threads ask for: the kernel's shortest (it takes 0.1–100 ms),
    /// so that each yield costs the thread as little of its share as the kernel allows.
    public static let sliceNanoseconds: UInt64 = 100_000

    /// Lowers the calling thread: ``niceness`` and a ``sliceNanoseconds`` slice, or the
    /// niceness alone where `sched_setattr` is refused (an older seccomp filter) or
    /// missing. Linux applies both to the calling thread only. Refused everything (a
    /// sandbox), the thread keeps the process's priority.
    public static func lowerCallingThread(to niceness: Int32 = BackgroundPriority.niceness) {
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let target = max(current, niceness)
        if stol_set_thread_scheduling(target, sliceNanoseconds) != 0 {
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, target)
        }
    }

    /// How often a background thread yields while it works (``yieldingOften(_:)``).
    public static let yieldIntervalNanoseconds: UInt64 = 500_000

    /// Runs `body` with the calling thread yielding the core every
    /// ``yieldIntervalNanoseconds``: whichever thread the kernel would rather run (a
    /// lookup woken meanwhile) runs then, not at the kernel's next tick.
    ///
    /// A woken thread preempts background work at once only if the kernel finds it
    /// *eligible* (EEVDF); one that ran a little earlier is not, and waited for the next
    /// tick, 4 ms at 250 Hz: while eight users listed 50,000 favourites each, another
    /// user's `taxon` p99 was 3.2–5.3 ms against 0.8 quiet (`stol-bench attack`,
    /// fav-list-2-8uids). A timer on the
    /// thread's CPU clock fires only at ticks too (1.2–2.5 ms); a wall-clock timer every
    /// 0.5 ms, 0.7–1.0 ms (docs/benchmarks.md §19.10). A signal yields only once the
    /// thread ran half an interval of CPU since its last yield: where others take the
    /// cores a yield can last longer than the interval, and yields chained back to back
    /// would leave the work itself no time at all. Where the kernel has nobody else to
    /// run, a yield returns at once; the timer runs only while `body` does, so an idle
    /// thread is not woken.
    public static func yieldingOften<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        startYielding()
        defer { stol_stop_thread_yields() }
        return try body()
    }

    /// Starts the calling thread's yields until the thread calls ``endCallingThread()``
    /// (a thread whose whole remaining work is background work). Where the kernel
    /// refuses a timer (a sandbox without the call), the thread works without yields.
    public static func startYielding() {
        _ = stol_start_thread_yields(yieldIntervalNanoseconds)
    }

    /// Called by a thread that yielded (``yieldingOften(_:)``, ``startYielding()``)
    /// before it ends: its timer belongs to the process and would outlive it.
    public static func endCallingThread() {
        stol_end_thread_yields()
    }

    /// The yields the calling thread made (tests).
    public static var callingThreadYields: UInt64 { UInt64(stol_thread_yield_count()) }

    /// The yield timer's signals the calling thread received, yielding or not (tests).
    public static var callingThreadYieldSignals: UInt64 { UInt64(stol_thread_yield_signal_count()) }
}
