import Logging
import STOLDaemon
import ServiceLifecycle

/// systemd's watchdog as one service of the daemon's group: every quarter of the
/// interval it pings (`WATCHDOG=1`) if, and only if, every serving loop has
/// stamped the ``Heartbeat`` within half the interval. A daemon whose loops stop
/// serving stops pinging, and systemd kills and restarts it; a daemon whose
/// service group stops (this task no longer runs) stops pinging as well.
public struct WatchdogService: Service {
    private let heartbeat: Heartbeat
    private let interval: Duration
    private let ping: @Sendable () -> Void
    private let logger: Logger

    /// - Parameters:
    ///   - interval: systemd's `WatchdogSec=` (``SystemdNotifier/watchdogInterval``).
    ///   - ping: sends one `WATCHDOG=1` (injectable for tests).
    public init(heartbeat: Heartbeat, interval: Duration, logger: Logger,
                ping: @escaping @Sendable () -> Void = { SystemdNotifier().pingWatchdog() }) {
        self.heartbeat = heartbeat
        self.interval = interval
        self.ping = ping
        self.logger = logger
    }

    /// Whether a ping is due at `now`: every loop stamped within half the interval.
    public func shouldPing(at now: ContinuousClock.Instant = .now) -> Bool {
        heartbeat.isFresh(within: interval / 2, at: now)
    }

    /// What to log when no ping is due: nothing while the loops may still be starting
    /// (a daemon is checked before its first loop stamps, and a start is no error); once
    /// one pinged, that a loop stopped; if none ever stamped within a whole interval, that
    /// none started. systemd acts on the missing pings either way.
    public func warning(pingedBefore: Bool, startedAt start: ContinuousClock.Instant,
                        at now: ContinuousClock.Instant = .now) -> String? {
        if pingedBefore { return "a serving loop has stopped: no more watchdog pings" }
        if now - start >= interval { return "no serving loop started within the watchdog interval: no watchdog pings" }
        return nil
    }

    public func run() async throws {
        logger.debug("watchdog fed by the serving loops", metadata: ["interval": "\(interval)"])
        let started = ContinuousClock.now
        var warned = false, pinged = false
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            if shouldPing() {
                ping()
                warned = false
                pinged = true
            } else if !warned, let warning = warning(pingedBefore: pinged, startedAt: started) {
                logger.error("\(warning)")
                warned = true
            }
            // Cut short by graceful shutdown: the daemon is stopping then.
            let period = interval / 4
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: period) }
        }
    }
}
