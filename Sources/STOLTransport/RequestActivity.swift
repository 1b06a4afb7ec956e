import Glibc
import Synchronization

/// Whether the daemon is answering requests now: each request counted from when it is
/// queued on its user's lane until its answer is handed back (``begin()``/``end()``:
/// suspended too, waiting for a slot or for the tree), and when the last one ended. Work
/// nobody asked for waits for a quiet moment before it starts
/// (``BackgroundThread/waitUntilRequestsPause(quiet:longest:)``): lowered alone, the names'
/// build right after a start still took a share of a core from the first job's requests,
/// a one-off job's 100,000 lineages 0.51–0.97 s against 0.57–0.59 s once the build was done.
public enum RequestActivity {
    private static let inFlight = Atomic<Int>(0)
    /// The monotonic clock's nanoseconds when the last request ended (0: none yet).
    private static let lastEnded = Atomic<UInt64>(0)

    /// A request is queued: it runs until ``end()``.
    public static func begin() {
        inFlight.add(1, ordering: .relaxed)
    }

    /// A request begun with ``begin()`` is answered (or dropped).
    public static func end() {
        lastEnded.store(now(), ordering: .relaxed)
        inFlight.subtract(1, ordering: .relaxed)
    }

    /// Requests running now.
    public static var running: Int { inFlight.load(ordering: .relaxed) }

    /// Whether no request ran for `quiet` nanoseconds: none running, and none ended since,
    /// nor since `since` (a wait's start: a daemon just started has answered nothing yet,
    /// and its first request may be on its way).
    public static func isQuiet(for quiet: UInt64, since: UInt64 = 0) -> Bool {
        running == 0 && now() &- max(lastEnded.load(ordering: .relaxed), since) >= quiet
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
