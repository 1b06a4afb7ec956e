import Glibc
import STOLTestFixtures
import STOLTransport
import XCTest

/// ``ConnectionWatch``: a peer gone is noticed without reading its socket (a cancelled
/// import stops), and data or a timeout are told apart from it.
final class ConnectionWatchTests: XCTestCase {
    func testAPeerThatCloses_isNoticed_withoutReading_andNeverBefore() throws {
        let (mine, peer) = try makeSocketPair()
        defer { close(mine) }
        XCTAssertFalse(ConnectionWatch.hasClosed(mine), "the peer is there")
        XCTAssertEqual(write(peer, "x", 1), 1)
        XCTAssertFalse(ConnectionWatch.hasClosed(mine), "unread data is no close")
        close(peer)
        XCTAssertTrue(ConnectionWatch.hasClosed(mine))
        var byte: UInt8 = 0
        XCTAssertEqual(read(mine, &byte, 1), 1, "the data sent before the close is still there: nothing was read")
    }

    func testWait_tellsDataFromAPeerGone_andTimesOut() throws {
        let (watched, watchedPeer) = try makeSocketPair()
        let (readable, writer) = try makeSocketPair()
        defer { [watched, readable, writer].forEach { close($0) } }
        XCTAssertEqual(ConnectionWatch.wait(readable: readable, orClosed: watched, timeoutMilliseconds: 10), .timedOut)
        XCTAssertEqual(write(writer, "x", 1), 1)
        XCTAssertEqual(ConnectionWatch.wait(readable: readable, orClosed: watched, timeoutMilliseconds: 10_000), .readable)
        close(watchedPeer)
        XCTAssertEqual(ConnectionWatch.wait(readable: readable, orClosed: watched, timeoutMilliseconds: 10_000), .peerClosed,
                       "a peer gone wins over data waiting")
    }
}
