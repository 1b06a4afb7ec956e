@testable import STOLServer
import STOLTransport
import Synchronization
import XCTest

/// A user's recent CPU use (``LaneMeter``) and what it changes: above a tenth of a
/// core its lookups run as bulk work (nice +10), and it is light again once its use
/// decays. Tried on a clock the test moves: a user keeping a core busy, one asking a
/// lookup every 10 ms, and the heavy one after it stops.
final class LaneMeterTests: XCTestCase {
    private final class TestClock: Sendable {
        let now = Mutex(100.0)
        func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
        var read: @Sendable () -> Double { { [self] in now.withLock { $0 } } }
    }

    func testAUserKeepingACoreBusy_isHeavy_andItsLookupsRunAsBulkWork_untilItsUseDecays() {
        let clock = TestClock()
        let meter = LaneMeter(clock: clock.read)
        let lane = UserLanes.Lane(key: .user(4242), meter: meter)
        defer { lane.interactive.stop(); lane.bulk.stop() }
        XCTAssertEqual(lane.workClass(for: .interactive), .interactive, "a new user is light")
        for _ in 0..<100 {  // one second of 10 ms jobs back to back: a core busy
            clock.advance(0.01)
            meter.add(0.01)
        }
        XCTAssertGreaterThan(meter.load, 0.6)
        XCTAssertTrue(meter.isHeavy)
        XCTAssertEqual(lane.workClass(for: .interactive), .bulk, "a heavy user's lookups go to its bulk lane")
        XCTAssertEqual(lane.workClass(for: .bulk), .bulk)
        clock.advance(3)  // three time constants idle
        XCTAssertFalse(meter.isHeavy, "light again once its use decays: \(meter.load)")
        XCTAssertEqual(lane.workClass(for: .interactive), .interactive)
    }

    /// A heavy user stays heavy until its use falls well below the threshold it
    /// crossed: a user near it does not go back and forth.
    func testAHeavyUser_staysHeavyBetweenTheTwoThresholds_andALightOneStaysLight() {
        let clock = TestClock()
        let meter = LaneMeter(clock: clock.read)
        meter.add(0.08)
        XCTAssertFalse(meter.isHeavy, "below the heavy threshold")
        meter.add(0.04)
        XCTAssertTrue(meter.isHeavy, "over it: \(meter.load)")
        clock.advance(0.5)  // 0.12 × e^-0.5 ≈ 0.073: between the thresholds
        XCTAssertGreaterThan(meter.load, LaneMeter.lightLoad)
        XCTAssertLessThan(meter.load, LaneMeter.heavyLoad)
        XCTAssertTrue(meter.isHeavy, "a heavy user between the thresholds stays heavy")
        clock.advance(1.5)  // ≈ 0.016
        XCTAssertFalse(meter.isHeavy, "below the light threshold: light again")
        meter.add(0.06)     // ≈ 0.076: between the thresholds again, from below
        XCTAssertFalse(meter.isHeavy, "a light user between the thresholds stays light")
    }

    func testAUserAskingALookupEvery10ms_staysLight() {
        let clock = TestClock()
        let meter = LaneMeter(clock: clock.read)
        for _ in 0..<1000 {  // ten seconds of 0.5 ms lookups every 10 ms: 5 % of a core
            clock.advance(0.01)
            meter.add(0.0005)
        }
        XCTAssertEqual(meter.load, 0.05, accuracy: 0.01)
        XCTAssertLessThan(meter.load, LaneMeter.heavyLoad)
        XCTAssertFalse(meter.isHeavy)
    }

    /// The executors count the CPU time of what they run to their lane's meter.
    func testALanesExecutors_countTheCPUTimeOfTheirJobs() async {
        let lanes = UserLanes()
        let lane = lanes.retain(77)
        defer { lanes.release(lane) }
        let before = lane.meter.load
        await Task(executorPreference: lane.executor(for: .interactive)) {
            let start = LaneMeter.threadCPUSeconds()
            var x = 0.0
            while LaneMeter.threadCPUSeconds() - start < 0.05 { x += 1 }  // 50 ms of CPU
            XCTAssertGreaterThan(x, 0)
        }.value
        // The executor counts a job once it has returned, after the task has already
        // completed: the next job on the same serial lane starts only after that.
        await Task(executorPreference: lane.executor(for: .interactive)) {}.value
        XCTAssertGreaterThan(lane.meter.load - before, 0.03, "the job's CPU time was counted")
    }
}
