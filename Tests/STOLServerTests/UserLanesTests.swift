import Dispatch
import Foundation
import Glibc
import STOLServer
import STOLTestFixtures
import STOLTransport
import Synchronization
import XCTest

/// Each user's requests on threads of their own (``UserLanes``), and the bound on
/// the daemon's unsent answers (``OutputBudget``).
final class UserLanesTests: XCTestCase {
    private func thread(on lane: UserLanes.Lane, _ work: WorkClass = .interactive) async -> UInt {
        await Task(executorPreference: lane.executor(for: work)) { UInt(pthread_self()) }.value
    }

    func testEachUser_hasThreadsOfItsOwn_andAUsersLookupsRunOnOneThreadInOrder() async {
        let lanes = UserLanes()
        let alice = lanes.retain(1000), bob = lanes.retain(1001)
        defer { lanes.release(alice); lanes.release(bob) }
        let aliceThread = await thread(on: alice), bobThread = await thread(on: bob)
        XCTAssertNotEqual(aliceThread, bobThread)
        let again = await thread(on: lanes.retain(1000))
        XCTAssertEqual(again, aliceThread, "the same user, the same lane while it is held")
        lanes.release(alice)
        let bulkThread = await thread(on: alice, .bulk)
        XCTAssertNotEqual(bulkThread, aliceThread, "bulk work has a thread of its own")
        let order = Recorded()
        // Enqueued in order from here; one thread runs them one after another.
        let tasks = (0..<50).map { index in
            Task(executorPreference: alice.executor(for: .interactive)) { order.append(index) }
        }
        for task in tasks { await task.value }
        XCTAssertEqual(order.values, Array(0..<50))
    }

    /// The point of lanes: a user whose work holds its thread (here, blocked) does
    /// not hold up another user, whatever it queued behind.
    func testAUserWhoseWorkHoldsItsThread_doesNotDelayAnotherUser() async {
        let lanes = UserLanes()
        let busy = lanes.retain(2000), other = lanes.retain(2001)
        defer { lanes.release(busy); lanes.release(other) }
        let release = DispatchSemaphore(value: 0)
        let blocked = (0..<4).map { _ in Task(executorPreference: busy.executor(for: .interactive)) { release.wait() } }
        let bulk = (0..<4).map { _ in Task(executorPreference: busy.executor(for: .bulk)) { release.wait() } }
        let answered = await Task(executorPreference: other.executor(for: .interactive)) { "answered" }.value
        XCTAssertEqual(answered, "answered", "the other user was answered while the first one's threads were held")
        for _ in 0..<8 { release.signal() }
        for task in blocked + bulk { await task.value }
    }

    func testBulkLanes_runAtALowerPriority() async {
        let lanes = UserLanes()
        let lane = lanes.retain(3000)
        defer { lanes.release(lane) }
        let base = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let bulk = await Task(executorPreference: lane.executor(for: .bulk)) {
            getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }.value
        let interactive = await Task(executorPreference: lane.executor(for: .interactive)) {
            getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }.value
        XCTAssertEqual(bulk, max(base, UserLanes.bulkNiceness))
        XCTAssertEqual(interactive, base)
    }

    /// Bulk threads ask the kernel for its shortest slice, so that each of their yields
    /// costs them as little of their share as it can (``BackgroundPriority``); lookups keep
    /// the default, and so do threads a bulk thread starts (libdispatch starts its workers,
    /// which then serve every user, from whichever thread needs one: one started by a bulk
    /// lane had kept its slice, and this test, run on such a worker, once read a bulk
    /// lane's slice as the default).
    func testBulkLanes_askForTheShortestSlice_andLookupsAndTheThreadsTheyStartKeepTheDefault() async throws {
        let lanes = UserLanes()
        let lane = lanes.retain(3001)
        defer { lanes.release(lane) }
        let bulk = await Task(executorPreference: lane.executor(for: .bulk)) { callingThreadSlice() }.value
        let startedByBulk = await Task(executorPreference: lane.executor(for: .bulk)) { sliceOfAThreadStartedHere() }.value
        let interactive = await Task(executorPreference: lane.executor(for: .interactive)) { callingThreadSlice() }.value
        // The main thread's: never lowered, and no thread started it.
        let defaultSlice = try XCTUnwrap(processMainThreadSlice(), "the kernel reports no slice in /proc/self/sched")
        XCTAssertEqual(bulk, BackgroundPriority.sliceNanoseconds)
        XCTAssertEqual(interactive, defaultSlice)
        XCTAssertEqual(startedByBulk, defaultSlice)
        XCTAssertGreaterThan(defaultSlice, BackgroundPriority.sliceNanoseconds)
    }

    /// Bulk work yields the core every ``BackgroundPriority/yieldIntervalNanoseconds``
    /// while a job runs (a timer of the thread's own), so that a lookup woken meanwhile
    /// runs then instead of at the kernel's next tick; a lookup's thread does not yield,
    /// and a bulk thread between jobs is not woken.
    ///
    /// Tried beside threads that take every core: there a yield lasts longer than the
    /// interval, and a handler that yielded at every signal chained yield to yield (the
    /// job's own code never ran again: 106 yields counted where its loop stops at 10).
    func testBulkJobs_yieldOftenWhileTheyRun_andNeitherLookupsNorIdleBulkThreadsDo() async {
        let spinners = Spinners(count: ProcessInfo.processInfo.activeProcessorCount)
        defer { spinners.stop() }
        let lanes = UserLanes()
        let lane = lanes.retain(3002)
        defer { lanes.release(lane) }
        let bulk = await Task(executorPreference: lane.executor(for: .bulk)) { spinUntil(yields: 10, orSeconds: 5) }.value
        let interactive = await Task(executorPreference: lane.executor(for: .interactive)) { spinUntil(yields: 10, orSeconds: 0.05) }.value
        XCTAssertEqual(bulk.during, 10, "a bulk job yields every \(BackgroundPriority.yieldIntervalNanoseconds) ns")
        XCTAssertEqual(bulk.largestStep, 1, "the job's own code runs between two yields")
        XCTAssertEqual(interactive.during, 0, "a lookup's thread keeps its core (0.05 s spun)")
        // The bulk thread idles now (its job ended) for 200 intervals: a timer left running
        // would signal it about 200 times. A few may come on a loaded machine at the edges of
        // the jobs (after the first job's last look, before the timer's stop; after the next
        // job's start, before its look), none in between.
        let signalsAfterTheJob = await Task(executorPreference: lane.executor(for: .bulk)) {
            BackgroundPriority.callingThreadYieldSignals
        }.value
        usleep(useconds_t(200 * BackgroundPriority.yieldIntervalNanoseconds / 1000))
        let next = await Task(executorPreference: lane.executor(for: .bulk)) { BackgroundPriority.callingThreadYieldSignals }.value
        XCTAssertLessThanOrEqual(next - signalsAfterTheJob, 5, "the timer is stopped between jobs, so an idle bulk thread is not woken")
        let names = await (Task(executorPreference: lane.executor(for: .bulk)) { callingThreadName() }.value,
                           Task(executorPreference: lane.executor(for: .interactive)) { callingThreadName() }.value)
        XCTAssertEqual(names.0, "stol.lane.bulk", "what perf and top show for it")
        XCTAssertEqual(names.1, "stol.lane")
    }

    /// A timer belongs to the process, not to the thread that made it: a lane's bulk
    /// thread deletes its own before it ends, or each user that came and went would
    /// leave one behind.
    func testLanesThatEnd_leaveNoTimerBehind() async throws {
        let before = try posixTimerCount()
        let lanes = UserLanes()
        for user in 0..<20 {
            let lane = lanes.retain(UInt32(6000 + user))
            _ = await Task(executorPreference: lane.executor(for: .bulk)) { spinUntil(yields: 1, orSeconds: 5) }.value
            lanes.release(lane)
        }
        XCTAssertEqual(lanes.laneCount, 0)
        // Each ended lane's thread deletes its timer as it ends, after the release returned.
        let deadline = ContinuousClock.now + .seconds(20)
        var count = try posixTimerCount()
        while count > before, ContinuousClock.now < deadline {
            await Task.yield()
            count = try posixTimerCount()
        }
        XCTAssertLessThanOrEqual(count, before, "timers of ended lanes are still in /proc/self/timers")
    }

    func testALane_endsWithItsLastUse_andAUserGetsANewOneAfterwards() async {
        let lanes = UserLanes()
        let connection = lanes.retain(4000)
        lanes.retain(connection)  // a request of that connection
        XCTAssertEqual(lanes.laneCount, 1)
        lanes.release(connection)
        XCTAssertEqual(lanes.laneCount, 1, "the request still holds it")
        lanes.release(connection)
        XCTAssertEqual(lanes.laneCount, 0)
        let next = lanes.retain(4000)
        XCTAssertFalse(next === connection, "a lane that ended is not handed out again")
        let answer = await Task(executorPreference: next.executor(for: .interactive)) { 42 }.value
        XCTAssertEqual(answer, 42)
        lanes.release(next)
    }

    func testBeyondTheMaximum_usersShareLanes_andTheCountStaysBounded() {
        let lanes = UserLanes(maximumLanes: 2, sharedLanes: 1)
        let held = (0..<10).map { lanes.retain(UInt32(5000 + $0)) }
        XCTAssertEqual(lanes.laneCount, 3, "two users' own lanes and one shared lane")
        XCTAssertTrue(held[2] === held[9], "users beyond the maximum share a lane")
        XCTAssertFalse(held[0] === held[1])
        for lane in held { lanes.release(lane) }
        XCTAssertEqual(lanes.laneCount, 0)
    }

    // MARK: - RequestSlots

    func testRequestsBeyondTheSlots_waitForOneToFree_inTurn() async {
        let slots = RequestSlots(count: 2)
        let first = await slots.acquire(), second = await slots.acquire()
        XCTAssertTrue(first && second)
        XCTAssertEqual(slots.free, 0)
        let order = Recorded()
        let third = Task { if await slots.acquire() { order.append(3) } }
        await waitUntilWaiting(slots, 1)
        let fourth = Task { if await slots.acquire() { order.append(4) } }
        await waitUntilWaiting(slots, 2)
        slots.release()
        await third.value
        XCTAssertEqual(order.values, [3], "one slot freed, the first waiter admitted")
        slots.release()
        await fourth.value
        XCTAssertEqual(order.values, [3, 4])
        slots.release()
        slots.release()
        XCTAssertEqual(slots.free, 2)
    }

    /// A request whose peer left while it waited leaves the queue at once: it takes no
    /// slot, and the next waiter gets the one freed.
    func testAWaiterWhoseTaskIsCancelled_leavesTheQueueAtOnce_andTakesNoSlot() async {
        let slots = RequestSlots(count: 1)
        let held = await slots.acquire()
        XCTAssertTrue(held)
        let leaving = Task { await slots.acquire() }
        await waitUntilWaiting(slots, 1)
        let staying = Task { await slots.acquire() }
        await waitUntilWaiting(slots, 2)
        leaving.cancel()
        let leavingGotOne = await leaving.value
        XCTAssertFalse(leavingGotOne, "a cancelled waiter got a slot")
        XCTAssertEqual(slots.waiting, 1, "the cancelled waiter is still queued")
        slots.release()
        let stayingGotOne = await staying.value
        XCTAssertTrue(stayingGotOne)
        slots.release()
        XCTAssertEqual(slots.free, 1, "a slot was lost or made")
    }

    func testATaskCancelledBeforeItAsks_getsNoSlotWhenNoneIsFree() async {
        let slots = RequestSlots(count: 1)
        _ = await slots.acquire()
        let task = Task {
            while !Task.isCancelled { await Task.yield() }
            return await slots.acquire()
        }
        task.cancel()
        let got = await task.value
        XCTAssertFalse(got)
        XCTAssertEqual(slots.waiting, 0)
        slots.release()
        XCTAssertEqual(slots.free, 1)
    }

    /// A lane's slots: a few lookups in progress at once, bulk work one at a time.
    func testALane_hasFewLookupsAndOneBulkRequestInProgress_apart() {
        let lanes = UserLanes()
        let lane = lanes.retain(7)
        XCTAssertEqual(lane.slots(for: .interactive).count, UserLanes.interactiveInProgress)
        XCTAssertEqual(lane.slots(for: .bulk).count, 1)
        XCTAssertFalse(lane.slots(for: .interactive) === lane.slots(for: .bulk))
        XCTAssertTrue(lanes.retain(7).slots(for: .bulk) === lane.slots(for: .bulk), "one user, one lane")
        lanes.release(lane)
        lanes.release(lane)
    }

    private func waitUntilWaiting(_ slots: RequestSlots, _ count: Int) async {
        while slots.waiting < count { await Task.yield() }
    }

    // MARK: - OutputBudget

    func testTheBudget_stopsAUserAtItsShare_andAtTheTotalEveryoneAboveTheReserve() {
        let budget = OutputBudget(total: 100, perUser: 60, reserve: 10)
        let one = budget.open(1), two = budget.open(2), three = budget.open(3)
        budget.charge(one, 60)
        XCTAssertFalse(budget.hasRoom(for: one), "user 1 is at its share")
        XCTAssertTrue(budget.hasRoom(for: two))
        budget.charge(two, 40)
        XCTAssertFalse(budget.hasRoom(for: two), "the total is reached: a user above the reserve waits")
        XCTAssertTrue(budget.hasRoom(for: three), "a user with nothing unsent is not held up by the others")
        budget.charge(three, 9)
        XCTAssertTrue(budget.hasRoom(for: three), "below the reserve")
        budget.charge(three, 1)
        XCTAssertFalse(budget.hasRoom(for: three), "at the reserve, over the total: it waits too")
        budget.release(two, 40)
        XCTAssertTrue(budget.hasRoom(for: three))
        XCTAssertEqual(budget.unsent, 70)
    }

    /// A user's connections share one account (its share is the user's, not each
    /// connection's), until the last of them closes; answers charged to it are still
    /// given back after.
    func testAUsersConnections_shareOneAccount_untilTheLastCloses() {
        let budget = OutputBudget(total: 100, perUser: 50, reserve: 0)
        let first = budget.open(1), second = budget.open(1)
        XCTAssertTrue(first === second)
        budget.charge(first, 30)
        budget.charge(second, 20)
        XCTAssertFalse(budget.hasRoom(for: first), "two connections of one user each got the user's share")
        budget.close(first)
        let third = budget.open(1)
        XCTAssertTrue(third === second, "closed with a connection still open")
        budget.close(second)
        budget.close(third)
        let fresh = budget.open(1)
        XCTAssertFalse(fresh === first, "the account outlived its user's connections")
        budget.release(first, 50)
        XCTAssertEqual(budget.unsent, 0)
        XCTAssertEqual(first.unsent, 0)
    }

    /// A connection that leaves while it waits for room takes its wait with it: the
    /// budget holds nothing of it (each wait kept its whole connection before).
    func testAWaitCancelledByALeavingConnection_isForgotten_andNeverResumed() {
        let budget = OutputBudget(total: 100, perUser: 50)
        let one = budget.open(1)
        budget.charge(one, 50)
        let resumed = Recorded()
        let leaving = budget.whenRoom(for: one) { resumed.append(1) }
        let staying = budget.whenRoom(for: one) { resumed.append(2) }
        XCTAssertNotNil(leaving)
        XCTAssertNotNil(staying)
        XCTAssertEqual(budget.waitingCount, 2)
        budget.cancel(leaving!)
        XCTAssertEqual(budget.waitingCount, 1)
        budget.release(one, 50)
        XCTAssertEqual(resumed.values, [2], "the cancelled wait was resumed, or the other was not")
        XCTAssertEqual(budget.waitingCount, 0)
        XCTAssertNil(budget.whenRoom(for: one) { resumed.append(3) }, "room now: no ticket")
        XCTAssertEqual(resumed.values, [2, 3])
    }

    /// A request checks the budget again just before it makes its answer
    /// (``OutputBudget/room(for:)``): it waits while its user's answers are unsent,
    /// goes on once they are written, and one whose connection left gives up and
    /// leaves nothing queued.
    func testARequestAboutToAnswer_waitsForRoom_andACancelledOneGivesUp() async {
        let budget = OutputBudget(total: 100, perUser: 50)
        let one = budget.open(1), two = budget.open(2)
        budget.charge(one, 50)
        let staying = Task { await budget.room(for: one) }
        let leaving = Task { await budget.room(for: one) }
        await waitUntilWaiting(budget, 2)
        leaving.cancel()
        let leavingGoesOn = await leaving.value
        XCTAssertFalse(leavingGoesOn, "a cancelled wait went on to answer")
        XCTAssertEqual(budget.waitingCount, 1, "the cancelled wait is still queued")
        budget.release(one, 50)
        let stayingGoesOn = await staying.value
        XCTAssertTrue(stayingGoesOn)
        XCTAssertEqual(budget.waitingCount, 0)
        let other = await budget.room(for: two)
        XCTAssertTrue(other, "a user with room goes on at once")
    }

    private func waitUntilWaiting(_ budget: OutputBudget, _ count: Int) async {
        while budget.waitingCount < count { await Task.yield() }
    }

    func testAWaiter_resumesOnceAnswersAreWritten_andOnlyThen() {
        let budget = OutputBudget(total: 100, perUser: 50)
        let one = budget.open(1), two = budget.open(2)
        budget.charge(one, 50)
        let resumed = Recorded()
        budget.whenRoom(for: one) { resumed.append(1) }
        budget.whenRoom(for: two) { resumed.append(2) }
        XCTAssertEqual(resumed.values, [2], "user 2 had room: at once")
        budget.release(one, 10)
        XCTAssertEqual(resumed.values, [2, 1], "user 1 resumed when its answers left")
        budget.release(one, 40)
        XCTAssertEqual(resumed.values, [2, 1], "once")
    }

    /// A wait and the release that makes room, on two threads at the same moment,
    /// many times: no wait is lost between its check and its queueing (the release
    /// may not see it queued; then the wait sees the room), none is resumed twice,
    /// and the counts end at zero.
    func testAWaitAndTheReleaseRacing_loseNoWait_andResumeItOnce() {
        let budget = OutputBudget(total: 1_000, perUser: 100, reserve: 0)
        let account = budget.open(1)
        let resumed = Recorded()
        let go = Atomic<Int>(0), released = Atomic<Int>(0)
        let rounds = 20_000
        let releaser = Thread {
            for round in 1...rounds {
                while go.load(ordering: .acquiring) < round {}  // spin: start with the wait
                budget.release(account, 100)
                released.store(round, ordering: .releasing)
            }
        }
        releaser.start()
        for round in 1...rounds {
            budget.charge(account, 100)  // full: the wait has to wait for the release
            let done = DispatchSemaphore(value: 0)
            go.store(round, ordering: .releasing)
            budget.whenRoom(for: account) { resumed.append(round); done.signal() }
            while released.load(ordering: .acquiring) < round {}
            // The release has run: a wait not resumed by now never will be.
            guard done.wait(timeout: .now() + 2) == .success else {
                XCTFail("wait \(round) was lost: its user had room and it never went on")
                go.store(rounds, ordering: .releasing)  // let the releaser finish
                return
            }
        }
        XCTAssertEqual(resumed.values.count, rounds)
        XCTAssertEqual(Set(resumed.values).count, rounds, "a wait resumed twice")
        XCTAssertEqual(budget.unsent, 0)
        XCTAssertEqual(budget.waitingCount, 0)
    }
}

/// Values appended from any thread, in the order they came.
private final class Recorded: Sendable {
    private let list = Mutex<[Int]>([])
    func append(_ value: Int) { list.withLock { $0.append(value) } }
    var values: [Int] { list.withLock { $0 } }
}

/// The calling thread's time slice in nanoseconds as the kernel reports it
/// (`/proc/thread-self/sched`, on kernels built with scheduler debugging), or nil.
/// Spins on the calling thread until it has yielded `yields` times or `seconds` have
/// passed; its yields meanwhile, and the most yields it saw come at
/// once between two looks (more than one: yields chained without its code running).
private func spinUntil(yields: UInt64, orSeconds seconds: Double) -> (during: UInt64, largestStep: UInt64) {
    let before = BackgroundPriority.callingThreadYields
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    var seen = before, largestStep: UInt64 = 0
    while seen - before < yields, DispatchTime.now().uptimeNanoseconds < end {
        let now = BackgroundPriority.callingThreadYields
        largestStep = max(largestStep, now - seen)
        seen = now
    }
    return (seen - before, largestStep)
}

private func callingThreadName() -> String? {
    (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// The process's POSIX timers, as the kernel lists them.
private func posixTimerCount() throws -> Int {
    let text = try String(contentsOfFile: "/proc/self/timers", encoding: .utf8)
    return text.split(separator: "\n").filter { $0.hasPrefix("ID:") }.count
}

private func callingThreadSlice() -> UInt64? { schedulerSlice(inFile: "/proc/thread-self/sched") }

private func processMainThreadSlice() -> UInt64? { schedulerSlice(inFile: "/proc/self/sched") }

/// The slice of a thread started by the calling thread, read by that thread.
private func sliceOfAThreadStartedHere() -> UInt64? {
    let read = Mutex<UInt64?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
        read.withLock { $0 = callingThreadSlice() }
        done.signal()
    }.start()
    done.wait()
    return read.withLock { $0 }
}
