import CSTOLSocket
import Glibc

/// How a thread that does work nobody is waiting on at once (a user's bulk lane, the
/// names' indexes built after a start) steps aside for the threads that answer lookups.
///
/// A lower niceness alone is not enough on Linux 6.6 and later (EEVDF): a thread keeps
/// the core for its slice once picked, and the kernel notices the slice's end only at
/// its next tick (4 ms at 250 Hz), so another user's lookup woken meanwhile waited up to
/// a tick behind eight users' bulk work at nice +10 (`stol-bench attack`: `taxon` p99
/// 3.2–4.7 ms against 0.7 quiet while eight users listed 50,000 favourites each; the
/// kernel's scheduler trace showed the victim's threads waiting 3.8 ms for bulk lanes
/// to reach a tick). Asking for a *long* slice as well lets a woken thread with the
/// default, shorter slice preempt the bulk thread at once (the kernel's PREEMPT_SHORT):
/// a throughput thread does not need short slices, a lookup does.
public enum BackgroundPriority {
    /// The niceness of background work (lowering it needs no privilege; raising it back would).
    public static let niceness: Int32 = 10

    /// The slice background threads ask for: long, so that any thread woken with the
    /// default slice (0.7–3 ms) preempts them. The kernel takes 0.1–100 ms.
    public static let sliceNanoseconds: UInt64 = 20_000_000

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
}
