import Logging
import STOLDaemon
import STOLServer
import Synchronization
import XCTest

/// The watchdog's decision, driven with explicit instants (no waiting): it pings
/// only while every serving loop has stamped the heartbeat within half the interval.
final class WatchdogServiceTests: XCTestCase {
    private let logger = Logger(label: "stol.tests", factory: { _ in SwiftLogNoOpLogHandler() })

    func testNoPing_beforeAnyLoopServes() {
        let watchdog = WatchdogService(heartbeat: Heartbeat(), interval: .seconds(2), logger: logger) {}
        XCTAssertFalse(watchdog.shouldPing(), "nothing serves yet, so nothing proves the daemon alive")
    }

    func testPings_whileEveryLoopStampsWithinHalfTheInterval() {
        let heartbeat = Heartbeat()
        let start = ContinuousClock.now
        let first = heartbeat.register()
        let second = heartbeat.register()
        heartbeat.beat(first, at: start)
        heartbeat.beat(second, at: start)
        let watchdog = WatchdogService(heartbeat: heartbeat, interval: .seconds(2), logger: logger) {}
        XCTAssertTrue(watchdog.shouldPing(at: start + .milliseconds(999)))
        // Both loops go on stamping: still alive much later.
        heartbeat.beat(first, at: start + .seconds(10))
        heartbeat.beat(second, at: start + .seconds(10))
        XCTAssertTrue(watchdog.shouldPing(at: start + .milliseconds(10_500)))
    }

    func testNoPing_onceOneLoopStopsStamping() {
        let heartbeat = Heartbeat()
        let start = ContinuousClock.now
        let live = heartbeat.register()
        let stuck = heartbeat.register()
        heartbeat.beat(live, at: start)
        heartbeat.beat(stuck, at: start)
        let watchdog = WatchdogService(heartbeat: heartbeat, interval: .seconds(2), logger: logger) {}
        heartbeat.beat(live, at: start + .seconds(5))
        XCTAssertFalse(watchdog.shouldPing(at: start + .seconds(5)), "one stuck loop of two stops the pings")
        XCTAssertFalse(watchdog.shouldPing(at: start + .seconds(1)), "exactly half the interval is already stale")
    }

    func testHeartbeatPeriod_isAQuarterOfTheIntervalAtMostOneSecond() {
        XCTAssertEqual(Heartbeat.period(forWatchdog: .milliseconds(200)), .milliseconds(50))
        XCTAssertEqual(Heartbeat.period(forWatchdog: .seconds(30)), .seconds(1))
        XCTAssertEqual(Heartbeat.period(forWatchdog: nil), .seconds(1))
    }

    /// The service itself: pings while a loop stamps, and returns on cancellation.
    /// A normal start logs no error: the watchdog's first check comes before any loop
    /// stamps. A loop that served and stopped is an error at once; loops that never start
    /// within a whole interval are one too.
    func testWarning_noneWhileStarting_butWhenALoopStopped_orNoneStartedWithinTheInterval() {
        let watchdog = WatchdogService(heartbeat: Heartbeat(), interval: .seconds(4), logger: logger)
        let start = ContinuousClock.now
        XCTAssertNil(watchdog.warning(pingedBefore: false, startedAt: start, at: start))
        XCTAssertNil(watchdog.warning(pingedBefore: false, startedAt: start, at: start + .seconds(3)))
        XCTAssertEqual(watchdog.warning(pingedBefore: false, startedAt: start, at: start + .seconds(4)),
                       "no serving loop started within the watchdog interval: no watchdog pings")
        XCTAssertEqual(watchdog.warning(pingedBefore: true, startedAt: start, at: start + .seconds(1)),
                       "a serving loop has stopped: no more watchdog pings")
    }

    func testService_pingsWhileALoopStamps_andStopsWhenCancelled() async throws {
        let heartbeat = Heartbeat(period: .milliseconds(5))
        let slot = heartbeat.register()
        let pings = Mutex(0)
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let watchdog = WatchdogService(heartbeat: heartbeat, interval: .milliseconds(40), logger: logger) {
            pings.withLock { $0 += 1 }
            continuation.yield()
        }
        let stamping = Task {
            while !Task.isCancelled {
                heartbeat.beat(slot)
                try? await Task.sleep(for: .milliseconds(5))  // the loop under watch, not a synchronisation
            }
        }
        let running = Task { try await watchdog.run() }
        var iterator = stream.makeAsyncIterator()
        for _ in 0..<3 { await iterator.next() }  // waits for three pings
        running.cancel()
        try await running.value
        stamping.cancel()
        XCTAssertGreaterThanOrEqual(pings.withLock { $0 }, 3)
    }
}
