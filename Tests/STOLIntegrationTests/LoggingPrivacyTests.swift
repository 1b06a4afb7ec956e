import Foundation
import XCTest

/// Privacy is a property of the code: at the default log level no daemon writes
/// what a user searched for, or which uid did something.
final class LoggingPrivacyTests: XCTestCase {
    func testDaemonLogs_atDefaultLevel_containNoQueryTextAndNoUids() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run the client as a distinctive uid")
        let stack = try StackHarness()
        stack.environment["STOL_LOG_LEVEL"] = "info"
        try stack.startAll()
        let uid: UInt32 = 61_234
        let secretQuery = "quokkasecretquery"
        XCTAssertEqual(try stack.client(["search", secretQuery], uid: uid).status, 0)
        XCTAssertEqual(try stack.client(["search", "--prefix", "panthe"], uid: uid).status, 0)
        XCTAssertEqual(try stack.client(["fav", "toggle", "9689"], uid: uid).status, 0)
        XCTAssertEqual(try stack.client(["fav", "list"], uid: uid).status, 0)
        XCTAssertEqual(try stack.client(["fav", "add", "-5"], uid: uid).status, 64)  // refused by argument parsing
        XCTAssertEqual(try stack.client(["fav", "add", "0"], uid: uid).status, 6)   // refused by the daemon
        _ = try stack.client(["db", "status"], uid: uid)
        stack.stopAll()

        for daemon in StackHarness.Daemon.allCases {
            let log = stack.log(daemon)
            XCTAssertFalse(log.contains(secretQuery), "\(daemon) logged the query text:\n\(log)")
            XCTAssertFalse(log.contains("panthe"), "\(daemon) logged the prefix:\n\(log)")
            XCTAssertFalse(log.contains(String(uid)), "\(daemon) logged the uid:\n\(log)")
        }
        // The logs are not empty: the daemons did log (so the check above could fail).
        XCTAssertTrue(stack.log(.taxonomy).contains("ready"), stack.log(.taxonomy))
    }
}
