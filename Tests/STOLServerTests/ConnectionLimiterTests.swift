import STOLDaemon
import STOLProtocol
import STOLServer
import Synchronization
import XCTest

/// The slots of a daemon: per-user and global limits, and the fair share that
/// keeps several users together from locking a newcomer out.
final class ConnectionLimiterTests: XCTestCase {
    /// Which connections were closed to make room, by name.
    private final class ClosedLog: Sendable {
        let names = Mutex<[String]>([])
        func withLock<T>(_ body: (inout [String]) -> T) -> T { names.withLock { body(&$0) } }
    }
    private let closed = ClosedLog()

    private func admit(_ limiter: ConnectionLimiter, _ uid: UInt32, _ name: String) -> ConnectionLimiter.Admission? {
        let closed = self.closed
        return try? limiter.admit(uid: uid, close: { closed.withLock { $0.append(name) } }).get()
    }

    private func refusal(_ limiter: ConnectionLimiter, _ uid: UInt32) -> ProtocolError? {
        if case .failure(let error) = limiter.admit(uid: uid, close: {}) { return error }
        return nil
    }

    func testPerUserLimit_refusesTheUsersNextConnection_sayingWhy() {
        let limiter = ConnectionLimiter(limit: 10, perUserLimit: 2)
        XCTAssertNotNil(admit(limiter, 1, "a1"))
        XCTAssertNotNil(admit(limiter, 1, "a2"))
        let error = refusal(limiter, 1)
        XCTAssertEqual(error?.code, .busy)
        XCTAssertEqual(error?.details["limit_per_user"], "2")
        XCTAssertNotNil(admit(limiter, 2, "b1"), "another user is not affected")
        XCTAssertEqual(closed.withLock { $0 }, [])
    }

    func testFullDaemon_closesTheOldestConnectionOfTheUserHoldingMost_forANewcomer() {
        let limiter = ConnectionLimiter(limit: 4, perUserLimit: 4)
        var hog = (1...4).compactMap { admit(limiter, 1, "hog\($0)") }
        XCTAssertEqual(hog.count, 4)
        XCTAssertNotNil(admit(limiter, 2, "newcomer1"), "a user with no connection was locked out")
        XCTAssertEqual(closed.withLock { $0 }, ["hog1"], "not the hog's oldest connection")
        // The closed connection goes away and gives its slot back.
        limiter.release(hog.removeFirst())
        XCTAssertEqual(limiter.openConnections, 4)
        XCTAssertNotNil(admit(limiter, 2, "newcomer2"), "3 against 1 is still uneven")
        XCTAssertEqual(closed.withLock { $0 }, ["hog1", "hog2"])
        limiter.release(hog.removeFirst())
        // 2 against 2: even; the newcomer's third is refused, not taken from the other.
        let error = refusal(limiter, 2)
        XCTAssertEqual(error?.code, .busy)
        XCTAssertEqual(error?.details["limit"], "4")
        XCTAssertEqual(closed.withLock { $0 }, ["hog1", "hog2"])
        XCTAssertEqual(limiter.evictions, 2)
    }

    func testFullDaemon_oneConnectionMoreThanANewcomer_isNotEnoughToLoseOne() {
        let limiter = ConnectionLimiter(limit: 3, perUserLimit: 3)
        XCTAssertNotNil(admit(limiter, 1, "a1"))
        XCTAssertNotNil(admit(limiter, 1, "a2"))
        XCTAssertNotNil(admit(limiter, 2, "b1"))
        // uid 2 holds 1, uid 1 holds 2: taking one would only swap who has more.
        XCTAssertEqual(refusal(limiter, 2)?.code, .busy)
        XCTAssertEqual(closed.withLock { $0 }, [])
    }

    func testSlotsTakenWithAcquire_areNeverClosedToMakeRoom() {
        let limiter = ConnectionLimiter(limit: 2, perUserLimit: 2)
        XCTAssertNil(limiter.acquire(uid: 1))
        XCTAssertNil(limiter.acquire(uid: 1))
        XCTAssertEqual(refusal(limiter, 2)?.code, .busy, "a blocking server's connection was taken away")
        limiter.release(uid: 1)
        XCTAssertNotNil(admit(limiter, 2, "b1"))
        XCTAssertEqual(closed.withLock { $0 }, [])
    }

    func testIdleFor_countsFromTheLastRelease() {
        let limiter = ConnectionLimiter(limit: 2, perUserLimit: 2)
        let admission = admit(limiter, 1, "a1")
        XCTAssertNil(limiter.idleFor)
        limiter.release(admission!)
        XCTAssertNotNil(limiter.idleFor)
        XCTAssertEqual(limiter.openConnections, 0)
    }
}
