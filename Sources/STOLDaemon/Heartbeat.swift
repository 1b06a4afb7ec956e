import Synchronization

/// The proof that a daemon's serving loops still run: each loop registers once
/// and then stamps its slot from inside the loop (an event loop's repeated task,
/// the blocking server's accept loop). ``WatchdogService`` pings systemd only
/// while every slot is fresh, so one stuck loop stops the pings; a timer on a
/// thread of its own would keep pinging for a daemon that no longer answers anyone.
public final class Heartbeat: Sendable {
    /// How often a loop stamps its slot.
    public let period: Duration
    private let stamps = Mutex<[ContinuousClock.Instant]>([])

    public init(period: Duration = .seconds(1)) {
        self.period = period
    }

    /// A new slot, stamped now; the loop stamps it with ``beat(_:)`` at least once a ``period``.
    public func register() -> Int {
        stamps.withLock { stamps in
            stamps.append(.now)
            return stamps.count - 1
        }
    }

    public func beat(_ slot: Int, at now: ContinuousClock.Instant = .now) {
        stamps.withLock { $0[slot] = now }
    }

    /// Whether at least one loop serves and every registered loop has stamped
    /// within `window` of `now`. False before any loop has registered: systemd
    /// arms the watchdog once the daemon is ready, and nothing is served before.
    public func isFresh(within window: Duration, at now: ContinuousClock.Instant = .now) -> Bool {
        stamps.withLock { stamps in !stamps.isEmpty && stamps.allSatisfy { now - $0 < window } }
    }

    /// The heartbeat period for a watchdog interval: four stamps per interval, at
    /// most one a second, so a stale slot is seen well before systemd gives up.
    public static func period(forWatchdog interval: Duration?) -> Duration {
        guard let interval else { return .seconds(1) }
        return min(interval / 4, .seconds(1))
    }
}
