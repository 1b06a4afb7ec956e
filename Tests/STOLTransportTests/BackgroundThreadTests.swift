import Dispatch
import Foundation
import Glibc
import STOLTestFixtures
import STOLTransport
import Synchronization
import XCTest

/// Background work (``BackgroundPriority``, ``BackgroundThread``) on a machine whose cores
/// other programs take, and once a request waits for it.
final class BackgroundThreadTests: XCTestCase {
    private let base = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)

    /// Raising a thread back needs CAP_SYS_NICE or an RLIMIT_NICE that allows it, as the
    /// units give the daemons (LimitNICE=): the test takes the limit as far as it goes.
    private func allowRaisingBack() throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(__RLIMIT_NICE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(__rlimit_resource_t(__RLIMIT_NICE.rawValue), &limit)
        guard getuid() == 0 || Int(limit.rlim_max) >= 20 - Int(base) else {
            throw TestSupportError("raising a thread back to niceness \(base) needs root or an RLIMIT_NICE of \(20 - base)")
        }
    }

    /// The failure this pins: the names' indexes, built at nice +10 yielding every half
    /// millisecond, got no CPU beside busy cores, and a search after a start waited for
    /// them more than 40 s (`make test`'s CI: "did not answer within 20 s"). A request
    /// that waits raises the thread: the niceness and slice it had, and no more yields.
    func testABackgroundThreadARequestWaitsFor_isRaisedBack_andYieldsNoMore() throws {
        try allowRaisingBack()
        let background = BackgroundThread()
        let worker = Worker.lowered(by: background)
        XCTAssertTrue(waitUntil(seconds: 20) { worker.yields.load(ordering: .relaxed) >= 5 }, "a lowered thread yields")
        let thread = try XCTUnwrap(background.loweredThreadID)
        XCTAssertEqual(niceness(of: thread), max(base, BackgroundPriority.idleNiceness))
        XCTAssertGreaterThan(BackgroundPriority.idleNiceness, BackgroundPriority.niceness,
                             "below the users' bulk lanes, which run at BackgroundPriority.niceness")
        XCTAssertEqual(slice(of: thread), BackgroundPriority.sliceNanoseconds)

        background.raise()
        XCTAssertEqual(niceness(of: thread), base, "raised to the niceness it had")
        XCTAssertEqual(slice(of: thread), slice(of: getpid()), "and the kernel's default slice")
        // The thread's timer still signals it (it ends with the thread); it yields no more.
        let yieldsAtRaise = worker.yields.load(ordering: .relaxed)
        let signalsAtRaise = worker.signals.load(ordering: .relaxed)
        XCTAssertTrue(waitUntil(seconds: 20) { worker.signals.load(ordering: .relaxed) >= signalsAtRaise + 20 })
        // One yield may have been under way as the thread was raised (published after it).
        XCTAssertLessThanOrEqual(worker.yields.load(ordering: .relaxed) - yieldsAtRaise, 1, "a raised thread still yields")

        worker.stop()
        XCTAssertNil(background.loweredThreadID, "an ended thread is forgotten: its id may be another's by now")
        background.raise()  // nothing left to raise: no effect, no other thread touched
    }

    /// Part of the build handed to a pooled worker (the start's sort of the prominent
    /// names, on libdispatch's pool) ran at the daemon's priority beside the users'
    /// requests while the build itself was lowered. Now: lowered with the build, raised
    /// with it when a request waits, and the worker's own priority given back when its
    /// part ends (the pool's next work is not background work); once the build is
    /// raised, a part runs as it is.
    func testAPooledHelper_takesTheThreadsPriority_isRaisedWithIt_andGetsItsOwnBack() throws {
        try allowRaisingBack()
        let background = BackgroundThread()
        let owner = Worker.lowered(by: background)
        XCTAssertTrue(waitUntil(seconds: 20) { background.loweredThreadID != nil })
        let lowered = max(base, BackgroundPriority.idleNiceness)

        let first = PooledPart(background)
        XCTAssertEqual(first.nicenessInside, lowered, "a part runs as low as the build")
        let firstThread = try XCTUnwrap(first.thread, "the build lists its lowered part")
        XCTAssertEqual(slice(of: firstThread), BackgroundPriority.sliceNanoseconds)
        XCTAssertEqual(background.loweredHelperIDs, [firstThread])
        first.finish()
        XCTAssertEqual(first.nicenessAfter, first.nicenessBefore, "the worker's own niceness back")
        XCTAssertEqual(background.loweredHelperIDs, [])

        let second = PooledPart(background)
        XCTAssertEqual(second.nicenessInside, lowered)
        let secondThread = try XCTUnwrap(second.thread)
        background.raise()  // a request waits for the build
        XCTAssertEqual(niceness(of: secondThread), second.nicenessBefore, "raised with the build")
        XCTAssertEqual(slice(of: secondThread), slice(of: getpid()), "and the kernel's default slice")
        XCTAssertEqual(background.loweredHelperIDs, [])
        second.finish()
        XCTAssertEqual(second.nicenessAfter, second.nicenessBefore)

        let third = PooledPart(background)
        XCTAssertEqual(third.nicenessInside, third.nicenessBefore, "after a raise a part runs as it is")
        XCTAssertEqual(background.loweredHelperIDs, [])
        third.finish()
        owner.stop()
    }

    /// The names' build after a start, lowered, still took a share of a core from a one-off
    /// job's lineages: it now starts once no request ran for a moment. Tried: a request
    /// running while the lowered thread waits (it polls and does not return), the request's
    /// end (it returns), a raise while a request runs (it returns: someone waits for the
    /// work), the longest wait (it returns with the request still running), no request at all
    /// (it waits the quiet moment from its own start: a daemon just started, its first
    /// request on its way), and a thread never lowered (it returns at once, without polling).
    func testLoweredWork_startsOnceRequestsPause_orWhenRaised_orAfterTheLongestWait() throws {
        try allowRaisingBack()
        func waiter(_ background: BackgroundThread, longest: UInt64 = BackgroundThread.longestWaitNanoseconds,
                    lower: Bool = true) -> DispatchSemaphore {
            let returned = DispatchSemaphore(value: 0)
            Thread(named: "stol.test.pause") {
                if lower { background.lowerCallingThread() }
                background.waitUntilRequestsPause(longest: longest)
                returned.signal()
                background.endCallingThread()
            }.start()
            return returned
        }

        RequestActivity.begin()
        let quiet = BackgroundThread()
        let afterEnd = waiter(quiet)
        XCTAssertTrue(waitUntil(seconds: 20) { quiet.requestPausePolls >= 5 }, "it waits while a request runs")
        XCTAssertEqual(afterEnd.wait(timeout: .now()), .timedOut, "and has not started")
        RequestActivity.end()
        XCTAssertEqual(afterEnd.wait(timeout: .now() + 20), .success, "it starts once the requests pause")

        RequestActivity.begin()
        defer { RequestActivity.end() }
        let raised = BackgroundThread()
        let afterRaise = waiter(raised)
        XCTAssertTrue(waitUntil(seconds: 20) { raised.requestPausePolls >= 3 })
        raised.raise()  // a request waits for the names
        XCTAssertEqual(afterRaise.wait(timeout: .now() + 20), .success, "a raised thread waits no more")

        let bounded = BackgroundThread()
        XCTAssertEqual(waiter(bounded, longest: 50_000_000).wait(timeout: .now() + 20), .success,
                       "the longest wait ends it, requests or not")
        XCTAssertGreaterThan(bounded.requestPausePolls, 0)

        RequestActivity.end()  // none running: a wait that began now still waits its quiet moment
        let fromItsStart = BackgroundThread()
        let returned = DispatchSemaphore(value: 0)
        Thread(named: "stol.test.pause") {
            fromItsStart.lowerCallingThread()
            fromItsStart.waitUntilRequestsPause(quiet: 60_000_000)
            returned.signal()
            fromItsStart.endCallingThread()
        }.start()
        XCTAssertEqual(returned.wait(timeout: .now() + 20), .success)
        XCTAssertGreaterThan(fromItsStart.requestPausePolls, 0, "no request ran, yet it waited")
        RequestActivity.begin()

        let neverLowered = BackgroundThread()
        XCTAssertEqual(waiter(neverLowered, lower: false).wait(timeout: .now() + 20), .success)
        XCTAssertEqual(neverLowered.requestPausePolls, 0, "work at the daemon's priority does not wait")
        XCTAssertGreaterThanOrEqual(RequestActivity.running, 1)
    }

    /// A request may wait before the build got as far as lowering itself: then it is
    /// never lowered, and never yields.
    func testARequestThatWaitedFirst_keepsTheThreadAtItsPriority() throws {
        let background = BackgroundThread()
        background.raise()
        let seen = runLoweredWork(background)
        XCTAssertEqual(seen.niceness, base)
        XCTAssertEqual(seen.yields, 0)
        XCTAssertTrue(background.wasRaised)
    }

    /// A process that could not raise the thread back (no CAP_SYS_NICE, an RLIMIT_NICE that
    /// does not reach: a user's own stack) does not lower it: a request may come to wait for it.
    func testAThreadThatCouldNotBeRaisedBack_isNotLowered() throws {
        let background = BackgroundThread(mayRaiseBack: { _ in false })
        let seen = runLoweredWork(background)
        XCTAssertEqual(seen.niceness, base)
        XCTAssertEqual(seen.yields, 0)
        XCTAssertNil(background.loweredThreadID)
    }

    /// Yields must not starve background work where other programs take the cores. At
    /// nice +10 with a 20 ms slice, each yield put the thread's next turn a whole slice
    /// further away in the kernel's reckoning (EEVDF's `yield_task_fair`: the slice over
    /// the thread's weight, 186 ms at nice +10), and beside busy cores it ran 10 ms in 10 s
    /// where the same thread without yields ran 322 (a C probe, six busy loops on two
    /// cores). Tried here side by side: background work as the lanes and the indexes run
    /// it, and a thread at the same niceness that never yields, beside two busy loops per
    /// core for two seconds: the first gets at least a quarter of the second's CPU.
    func testBackgroundWorkBesideBusyCores_getsMostOfTheCPUItsNicenessAloneWouldGet() {
        let spinners = Spinners(count: 2 * ProcessInfo.processInfo.activeProcessorCount)
        defer { spinners.stop() }
        let results = Mutex<[String: (cpu: Double, yields: UInt64)]>([:])
        let done = DispatchGroup()
        for yielding in [true, false] {
            done.enter()
            Thread(named: "stol.test.share") {
                if yielding {
                    BackgroundPriority.lowerCallingThread()
                    BackgroundPriority.startYielding()
                } else {
                    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, BackgroundPriority.niceness)
                }
                let end = DispatchTime.now().uptimeNanoseconds + 2_000_000_000
                while DispatchTime.now().uptimeNanoseconds < end {}
                let cpu = callingThreadCPUSeconds()
                results.withLock { $0[yielding ? "yielding" : "plain"] = (cpu, BackgroundPriority.callingThreadYields) }
                BackgroundPriority.endCallingThread()
                done.leave()
            }.start()
        }
        done.wait()
        let yielding = results.withLock { $0["yielding"] }, plain = results.withLock { $0["plain"] }
        XCTAssertGreaterThan(yielding?.yields ?? 0, 0, "the background thread yielded")
        XCTAssertGreaterThanOrEqual(yielding?.cpu ?? 0, (plain?.cpu ?? 0) / 4,
                                    "background work ran \(yielding?.cpu ?? 0) s of CPU, the same niceness without yields \(plain?.cpu ?? 0) s")
    }
}

/// Work on a thread of its own as the indexes' build does it: `background` lowers it,
/// it spins for 20 yield intervals, and says the niceness and yields it had by then.
private func runLoweredWork(_ background: BackgroundThread) -> (niceness: Int32, yields: UInt64) {
    let seen = Mutex<(niceness: Int32, yields: UInt64)>((0, 0))
    let done = DispatchSemaphore(value: 0)
    Thread(named: "stol.test.bg") {
        background.lowerCallingThread()
        let end = DispatchTime.now().uptimeNanoseconds + 20 * BackgroundPriority.yieldIntervalNanoseconds
        while DispatchTime.now().uptimeNanoseconds < end {}
        seen.withLock { $0 = (getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), BackgroundPriority.callingThreadYields) }
        background.endCallingThread()
        done.signal()
    }.start()
    done.wait()
    return seen.withLock { $0 }
}

/// One part of the work on libdispatch's pool through ``BackgroundThread/helping(_:)``,
/// held inside until ``finish()``: its worker's niceness before, inside and after.
private final class PooledPart: Sendable {
    private struct Seen {
        var before: Int32 = 0, inside: Int32 = 0, after: Int32 = 0, thread: Int32?
    }
    private let seen = Mutex(Seen())
    private let entered = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    init(_ background: BackgroundThread) {
        DispatchQueue.global().async { [self] in
            let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            background.helping {
                let inside = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
                // Its id, where the build lists it (a part that runs as it is is not listed).
                let listed = background.loweredHelperIDs.first { niceness(of: $0) == inside }
                seen.withLock { $0 = Seen(before: before, inside: inside, thread: listed) }
                entered.signal()
                release.wait()
            }
            let after = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            seen.withLock { $0.after = after }
            ended.signal()
        }
        entered.wait()
    }

    var thread: Int32? { seen.withLock { $0.thread } }
    var nicenessBefore: Int32 { seen.withLock { $0.before } }
    var nicenessInside: Int32 { seen.withLock { $0.inside } }
    var nicenessAfter: Int32 { seen.withLock { $0.after } }

    func finish() {
        release.signal()
        ended.wait()
    }
}

/// A thread's work: spins, publishing its yields and yield signals, until stopped.
private final class Worker: Sendable {
    let yields = Atomic<UInt64>(0)
    let signals = Atomic<UInt64>(0)
    private let running = Atomic<Bool>(true)
    let ended = DispatchSemaphore(value: 0)

    func spinUntilStopped() {
        while running.load(ordering: .relaxed) {
            yields.store(BackgroundPriority.callingThreadYields, ordering: .relaxed)
            signals.store(BackgroundPriority.callingThreadYieldSignals, ordering: .relaxed)
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        ended.wait()
    }

    /// A worker on a thread of its own that `background` lowers, as the names' build is.
    static func lowered(by background: BackgroundThread) -> Worker {
        let worker = Worker()
        Thread(named: "stol.test.bg") {
            background.lowerCallingThread()
            worker.spinUntilStopped()
            background.endCallingThread()
            worker.ended.signal()
        }.start()
        return worker
    }
}

/// A thread's niceness, as /proc shows it (field 19 of its stat, after the name's parenthesis).
private func niceness(of thread: Int32) -> Int32? {
    guard let stat = try? String(contentsOfFile: "/proc/self/task/\(thread)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    return fields.count > 16 ? Int32(fields[16]) : nil
}

/// A thread's time slice in nanoseconds.
private func slice(of thread: Int32) -> UInt64? { schedulerSlice(inFile: "/proc/self/task/\(thread)/sched") }

private func callingThreadCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
