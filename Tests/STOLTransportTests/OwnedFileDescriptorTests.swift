import Dispatch
import Glibc
import STOLTestFixtures
import STOLTransport
import XCTest

/// ``OwnedFileDescriptor``: a descriptor a peer handed over is closed exactly once,
/// by whoever lets go of it, or given up to one taker.
final class OwnedFileDescriptorTests: XCTestCase {
    private func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) != -1 }

    func testLettingGo_closesIt_andTakingIt_handsItOver() throws {
        let (a, b) = try makeSocketPair()
        do {
            let owned = OwnedFileDescriptor(a)
            XCTAssertEqual(owned.rawValue, a)
        }
        XCTAssertFalse(isOpen(a), "closed when its owner went")
        let owned = OwnedFileDescriptor(b)
        XCTAssertEqual(owned.take(), b)
        XCTAssertEqual(owned.rawValue, -1)
        XCTAssertEqual(owned.take(), -1, "taken once")
        owned.close()
        XCTAssertTrue(isOpen(b), "the taker owns it now")
        close(b)
    }

    func testTakeAndCloseRacing_giveTheDescriptorToExactlyOne() throws {
        for _ in 0..<200 {
            let (a, b) = try makeSocketPair()
            close(b)
            let owned = OwnedFileDescriptor(a)
            let taken = LockedLog<Int32>()
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                if index % 2 == 0 { owned.close() } else { taken.append(contentsOf: [owned.take()]) }
            }
            let got = taken.all.filter { $0 >= 0 }
            XCTAssertLessThanOrEqual(got.count, 1)
            if let fd = got.first {
                XCTAssertEqual(fd, a)
                XCTAssertTrue(isOpen(a), "taken, so not closed")
                close(a)
            } else {
                XCTAssertFalse(isOpen(a), "closed once")
            }
        }
    }
}
