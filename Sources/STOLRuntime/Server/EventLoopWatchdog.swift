import Foundation
import Logging
import NIOCore
import Synchronization

/// systemd's watchdog fed by the event loops themselves.
///
/// Every event loop of the group stamps the time on a repeated task every quarter
/// of the watchdog interval, and pings (`WATCHDOG=1`) only when every loop's stamp
/// is fresh (younger than half the interval). One loop stuck in a handler stops
/// the pings, and systemd kills and restarts the daemon; a timer on a thread of
/// its own would keep pinging for a daemon that no longer answers anyone.
final class EventLoopWatchdog: Sendable {
    private let loops: [any EventLoop]
    private let interval: Duration
    private let notifier: SystemdNotifier
    private let stamps: Mutex<[ContinuousClock.Instant]>
    private let tasks = Mutex<[RepeatedTask]>([])

    init(group: any EventLoopGroup, interval: Duration, notifier: SystemdNotifier) {
        loops = Array(group.makeIterator())
        self.interval = interval
        self.notifier = notifier
        stamps = Mutex(Array(repeating: .now, count: loops.count))
    }

    func start(logger: Logger) {
        logger.debug("watchdog fed by the event loops", metadata: ["interval": "\(interval)", "loops": "\(loops.count)"])
        let period = TimeAmount.nanoseconds(Int64(interval.components.seconds) * 1_000_000_000 / 4
                                            + interval.components.attoseconds / 4_000_000_000)
        let fresh = interval / 2
        for (index, loop) in loops.enumerated() {
            let task = loop.scheduleRepeatedTask(initialDelay: .zero, delay: period) { [self] _ in
                let now = ContinuousClock.now
                let allAlive = stamps.withLock { stamps in
                    stamps[index] = now
                    return stamps.allSatisfy { now - $0 < fresh }
                }
                if allAlive { notifier.pingWatchdog() }
            }
            tasks.withLock { $0.append(task) }
        }
    }

    func stop() {
        tasks.withLock { tasks in
            tasks.forEach { $0.cancel() }
            tasks.removeAll()
        }
    }
}

/// Test-only: with `STOL_TEST_HANG_ON_SIGUSR2=1`, SIGUSR2 blocks one event loop
/// for good, as a handler stuck in a loop would, so that a system test can see
/// the watchdog kill and restart the daemon.
enum EventLoopHangHook {
    static let variable = "STOL_TEST_HANG_ON_SIGUSR2"

    static func installIfRequested(group: any EventLoopGroup, logger: Logger) -> DispatchSourceSignal? {
        guard ProcessInfo.processInfo.environment[variable] == "1" else { return nil }
        logger.warning("test hook armed: SIGUSR2 blocks an event loop")
        signal(SIGUSR2, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR2)
        let loop = group.next()
        source.setEventHandler {
            logger.warning("test hook: blocking an event loop")
            loop.execute { while true { sleep(3600) } }
        }
        source.resume()
        return source
    }
}
