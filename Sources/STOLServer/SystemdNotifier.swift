import CSystemd
import Glibc
import Logging

/// `sd_notify(3)` for the service manager: READY=1 once the socket is served,
/// STOPPING=1 when a graceful shutdown begins, and WATCHDOG=1 pings when
/// `WATCHDOG_USEC` is set (sent by ``WatchdogService`` while the serving loops
/// stamp their ``Heartbeat``). Outside systemd every call is a no-op.
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
}
