import STOLTaxonomy
import STOLTestFixtures
import Synchronization
import XCTest

/// One user holds at most its share of the task pool: its further requests wait,
/// in order and holding no thread, while another user's go ahead at once.
final class PerUserShareTests: XCTestCase {
    func testAUsersSecondRequest_waitsForItsFirst_whileAnotherUserGoesAhead() async throws {
        let share = PerUserShare(perUser: 1)
        await share.acquire(1000)
        let order = Mutex<[String]>([])
        let second = Task {
            await share.acquire(1000)
            order.withLock { $0.append("user 1000, second") }
            share.release(1000)
        }
        XCTAssertTrue(waitUntil { share.load(of: 1000).waiting == 1 }, "the second request of user 1000 waits")
        await share.acquire(2000)  // another user: admitted while user 1000 holds its share
        order.withLock { $0.append("user 2000") }
        XCTAssertEqual(share.load(of: 2000).running, 1)
        share.release(2000)
        XCTAssertEqual(order.withLock { $0 }, ["user 2000"], "user 1000's second request still waits")
        share.release(1000)  // the slot passes to user 1000's waiting request
        await second.value
        XCTAssertEqual(order.withLock { $0 }, ["user 2000", "user 1000, second"])
        XCTAssertEqual(share.load(of: 1000).running, 0)
        XCTAssertEqual(share.load(of: 1000).waiting, 0)
    }

    func testAShareOfTwo_admitsTwoAtOnce_andQueuesTheThirdInOrder() async throws {
        let share = PerUserShare(perUser: 2)
        await share.acquire(7)
        await share.acquire(7)
        XCTAssertEqual(share.load(of: 7).running, 2)
        let served = Served()
        let third = Task { await share.acquire(7); served.list.withLock { $0.append(3) } }
        XCTAssertTrue(waitUntil { share.load(of: 7).waiting == 1 })
        let fourth = Task { await share.acquire(7); served.list.withLock { $0.append(4) } }
        XCTAssertTrue(waitUntil { share.load(of: 7).waiting == 2 })
        share.release(7)
        await third.value
        share.release(7)
        await fourth.value
        XCTAssertEqual(served.list.withLock { $0 }, [3, 4], "waiting requests of a user are served in order")
        share.release(7)
        share.release(7)
        XCTAssertEqual(share.load(of: 7).running, 0)
    }
}

/// What the waiting tasks record, shared with them.
private final class Served: Sendable {
    let list = Mutex<[Int]>([])
}
