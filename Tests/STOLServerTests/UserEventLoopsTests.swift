import Dispatch
import Foundation
import Glibc
import NIOCore
import STOLServer
import XCTest

/// Which event loop a user's connections are on (``UserEventLoops``): one loop per
/// user while there are no more users than loops, a user's connections together,
/// and a loop free again once its user's last connection has closed.
final class UserEventLoopsTests: XCTestCase {
    private var loops: UserEventLoops!

    override func tearDown() {
        try? loops?.group.syncShutdownGracefully()
        loops = nil
    }

    func testUsersUpToTheLoopCount_eachHaveALoopOfTheirOwn_andAUsersConnectionsShareIt() {
        loops = UserEventLoops(count: 4)
        let tickets = (0..<4).map { loops.acquire(UInt32(1000 + $0)) }
        XCTAssertEqual(Set(tickets.map { ObjectIdentifier($0.loop) }).count, 4, "two users on one loop")
        XCTAssertEqual(Set((0..<4).compactMap { loops.loopIndex(of: UInt32(1000 + $0)) }), [0, 1, 2, 3])
        let again = loops.acquire(1002)
        XCTAssertTrue(again.loop === tickets[2].loop, "a user's second connection on another loop")
        // The fifth user shares the loop with the fewest users: all have one, the first.
        let fifth = loops.acquire(2000)
        XCTAssertEqual(loops.loopIndex(of: 2000), 0)
        // Its second connection joins it there, not a loop chosen afresh.
        let fifthAgain = loops.acquire(2000)
        XCTAssertTrue(fifthAgain.loop === fifth.loop)
        for ticket in tickets + [again, fifth, fifthAgain] { ticket.release() }
    }

    func testALoopIsFreeAgain_onceItsUsersLastConnectionHasClosed_andAReleaseCountsOnce() {
        loops = UserEventLoops(count: 2)
        let alice = loops.acquire(1000), aliceAgain = loops.acquire(1000)
        let bob = loops.acquire(1001)
        XCTAssertEqual(loops.loopIndex(of: 1000), 0)
        XCTAssertEqual(loops.loopIndex(of: 1001), 1)
        alice.release()
        alice.release()  // the close and a failed registration may both give it back
        XCTAssertEqual(loops.loopIndex(of: 1000), 0, "one of alice's connections is still open")
        aliceAgain.release()
        XCTAssertNil(loops.loopIndex(of: 1000))
        // Loop 0 serves nobody now: the next user gets it, not bob's.
        let carol = loops.acquire(1002)
        XCTAssertEqual(loops.loopIndex(of: 1002), 0)
        XCTAssertFalse(carol.loop === bob.loop)
        carol.release()
        bob.release()
    }

    /// The loops run at the daemon's own niceness, whatever the thread that made the
    /// group ran at: it is made on a concurrency pool thread, which libdispatch sets
    /// to -2 from its QoS where it may (as root here), and the lanes a loop starts
    /// inherit the loop's.
    func testEveryLoop_runsAtTheProcessNiceness_evenWhenMadeOnAThreadBelowIt() throws {
        let base = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
        let made = Made()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            // Lowering a niceness needs the privilege libdispatch has when it does it.
            if getuid() == 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, base - 2) }
            made.loops = UserEventLoops(count: 3)
            done.signal()
        }
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        loops = try XCTUnwrap(made.loops)
        for loop in loops.group.makeIterator() {
            let niceness = try loop.submit { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }.wait()
            XCTAssertEqual(niceness, base)
        }
    }
}

private final class Made: @unchecked Sendable {
    var loops: UserEventLoops?
}
