import Dispatch
import Foundation
import GRDB
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import STOLTransport
import XCTest

/// Each user reads the database through connections of their own (``UserReaders``):
/// no wait behind another user's query, no page cache another user warmed.
final class UserReadersTests: XCTestCase {
    private func context(_ uid: UInt32) -> RequestContext {
        RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid), logger: quietLogger)
    }

    func testEachUsersRequests_readThroughConnectionsOfTheirOwn_oneForLookupsAndOneForBulkWork() async throws {
        let harness = try ServiceHarness(self)
        await harness.waitForTreeLoaded()
        let readers = harness.provider.current().database.userReaders
        let search = Stol_V1_TaxonomyRequest.with { $0.search = .with { $0.query = "lion" } }
        let batch = Stol_V1_TaxonomyRequest.with { $0.lineageBatch = .with { $0.queries = ["9689"] } }
        _ = await harness.service.respond(to: search, context: context(1000))
        XCTAssertEqual(readers.openCount, 1)
        _ = await harness.service.respond(to: search, context: context(1000))
        XCTAssertEqual(readers.openCount, 1, "the same user's next request reuses its connection")
        _ = await harness.service.respond(to: search, context: context(1001))
        XCTAssertEqual(readers.openCount, 2, "another user reads through a connection of its own")
        _ = await harness.service.respond(to: batch, context: context(1001))
        XCTAssertEqual(readers.openCount, 3, "bulk work has its own, beside the user's lookups")
        let answer = harness.service.respondNow(to: search, context: context(1002))
        XCTAssertFalse(answer.search.hits.isEmpty)
        XCTAssertEqual(readers.openCount, 3, "a synchronous call outside a request reads through the shared connections")
    }

    /// A request's many reads check its connection out once (``ReaderLease``): the
    /// lock of all users' connections is taken per request, not per read.
    func testARequestsReads_checkItsConnectionOutOnce_andHandItBackAtTheEnd() async throws {
        let harness = try ServiceHarness(self)
        await harness.waitForTreeLoaded()
        let readers = harness.provider.current().database.userReaders
        let roots = Stol_V1_TaxonomyRequest.with { $0.roots = .init() }
        let before = readers.checkOutCount
        let answer = await harness.service.respond(to: roots, context: context(1000))
        XCTAssertGreaterThan(answer.roots.taxa.count, 1)
        XCTAssertEqual(readers.checkOutCount - before, 1, "one check-out for all of the request's reads")
        readers.close()
        XCTAssertEqual(readers.openCount, 0, "handed back at the end of the request: idle, so closed")
    }

    /// A close (a switch away, the idle sweep) spares a connection a request holds.
    func testAConnectionHeldByARequest_isNotClosed_untilItsLeaseEnds() throws {
        let harness = try ServiceHarness(self)
        let readers = UserReaders { try DatabaseQueue(path: harness.bundledPath) }
        let lease = ReaderLease(key: ReaderKey(uid: 5, bulk: false))
        let queue = try lease.queue(of: readers)
        readers.close()
        XCTAssertEqual(readers.openCount, 1, "held by the request: not closed")
        XCTAssertEqual(try queue.inDatabase { try Int.fetchOne($0, sql: "SELECT 1") }, 1)
        XCTAssertTrue(try lease.queue(of: readers) === queue, "the request's later reads use the same connection")
        XCTAssertEqual(readers.checkOutCount, 1)
        lease.end()
        readers.close()
        XCTAssertEqual(readers.openCount, 0, "handed back: closed")
    }

    func testAUsersReadInProgress_doesNotHoldUpAnotherUsersRead() throws {
        let harness = try ServiceHarness(self)
        let readers = UserReaders { try DatabaseQueue(path: harness.bundledPath) }
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let holder = Thread {
            _ = try? readers.read(ReaderKey(uid: 1, bulk: false)) { _ in
                started.signal()
                release.wait()
            }
        }
        holder.start()
        started.wait()
        let count = try readers.read(ReaderKey(uid: 2, bulk: false)) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa") }
        XCTAssertGreaterThan(count ?? 0, 0, "answered while the other user's read was still in progress")
        release.signal()
    }

    func testBeyondTheMaximum_theLeastRecentlyUsedIdleConnectionCloses() throws {
        let harness = try ServiceHarness(self)
        let readers = UserReaders { try DatabaseQueue(path: harness.bundledPath) }
        for uid in 0..<UInt32(UserReaders.maximumOpen + 5) {
            _ = try readers.read(ReaderKey(uid: uid, bulk: false)) { db in try Int.fetchOne(db, sql: "SELECT 1") }
        }
        XCTAssertEqual(readers.openCount, UserReaders.maximumOpen)
        readers.close()
        XCTAssertEqual(readers.openCount, 0)
    }
}
