import Logging
import STOLTestFixtures
import STOLTransport
import Synchronization
import XCTest

final class RateLimitedLogTests: XCTestCase {
    /// At stop the count of the window in progress is logged at once: a restart loses none.
    func testFlush_logsWhatWasCounted_atOnce_andOnlyOnce() {
        let captured = CapturedLog()
        let log = RateLimitedLog(window: .seconds(3600), first: "import request refused", more: "more import requests refused")
        for _ in 0..<4 { log.record(code: "KEY_REVOKED", logger: captured.logger) }
        XCTAssertEqual(captured.lines.withLock { $0.count }, 1)
        log.flush(logger: captured.logger)
        let lines = captured.lines.withLock { $0 }
        XCTAssertEqual(lines.count, 2)
        XCTAssertTrue(lines.last?.contains("count=3") == true && lines.last?.contains("KEY_REVOKED=3") == true, lines.description)
        log.flush(logger: captured.logger)
        XCTAssertEqual(captured.lines.withLock { $0.count }, 2, "nothing counted twice")
    }

    func testAFloodOfFramingErrors_isOneLinePerWindowAndOneSummary_notOnePerFrame() throws {
        let captured = CapturedLog()
        let log = RateLimitedLog.framingErrors(window: .milliseconds(200))
        let started = ContinuousClock.now  // no later than the window's start
        for index in 0..<1000 { log.record(code: index % 2 == 0 ? "MALFORMED_FRAME" : "FRAME_TOO_LARGE", logger: captured.logger) }
        XCTAssertEqual(captured.lines.withLock { $0.count }, 1, "the first is logged, the next 999 are counted")
        log.flushIfDue(logger: captured.logger)
        if ContinuousClock.now - started < .milliseconds(200) {
            XCTAssertEqual(captured.lines.withLock { $0.count }, 1, "summed up before the window passed")
        }
        // The summary comes once the window has passed: waited for, not slept through.
        XCTAssertTrue(waitUntil(seconds: 10) {
            log.flushIfDue(logger: captured.logger)
            return captured.lines.withLock { $0.count } >= 2
        })
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(200), "summed up before the window passed")
        let lines = captured.lines.withLock { $0 }
        XCTAssertEqual(lines.count, 2)
        XCTAssertTrue(lines[1].contains("count=999"), lines[1])
        XCTAssertTrue(lines[1].contains("FRAME_TOO_LARGE=500") && lines[1].contains("MALFORMED_FRAME=499"), lines[1])
        log.flushIfDue(logger: captured.logger)
        XCTAssertEqual(captured.lines.withLock { $0.count }, 2, "nothing more to sum up")
        log.record(code: "MALFORMED_FRAME", logger: captured.logger)
        XCTAssertEqual(captured.lines.withLock { $0.count }, 3, "a new window logs its first error again")
    }
}
