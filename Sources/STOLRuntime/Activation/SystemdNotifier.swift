import CSystemd
import Glibc
import Logging

/// `sd_notify(3)` for the service manager: READY=1 once the socket is served,
/// STOPPING=1 when a graceful shutdown begins, and WATCHDOG=1 pings at half the
/// interval when `WATCHDOG_USEC` is set. Outside systemd every call is a no-op.
public struct SystemdNotifier: Sendable {
    public init() {}

    public func ready(status: String) {
        _ = sd_notify(0, "READY=1\nSTATUS=\(status)")
    }

    public func stopping() {
        _ = sd_notify(0, "STOPPING=1")
    }

    /// The watchdog interval requested by the service manager, if any.
    public var watchdogInterval: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec))
    }

    /// One WATCHDOG=1 ping.
    public func pingWatchdog() {
        _ = sd_notify(0, "WATCHDOG=1")
    }

    /// Pings the watchdog at half its interval until the task is cancelled.
    public func runWatchdog(logger: Logger) async {
        guard let interval = watchdogInterval else { return }
        logger.debug("watchdog enabled", metadata: ["interval": "\(interval)"])
        while !Task.isCancelled {
            _ = sd_notify(0, "WATCHDOG=1")
            try? await Task.sleep(for: interval / 2)
        }
    }
}
