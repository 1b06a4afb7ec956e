import STOLTaxonomy
import XCTest

/// A user's bulk work is paced only while another user is active, in proportion
/// to how long its last bulk request took, and never longer than the longest wait.
final class BulkPacerTests: XCTestCase {
    let start = ContinuousClock.now

    func testAUserAlone_isNeverPaced() {
        let pacer = BulkPacer()
        pacer.noteActivity(of: 1, at: start)
        pacer.charge(1, from: start, to: start + .milliseconds(80))
        XCTAssertEqual(pacer.delay(for: 1, at: start + .milliseconds(81)), .zero)
    }

    func testWithAnotherUserActive_theNextBulkWaitsInProportionToTheLast() {
        let pacer = BulkPacer()
        pacer.noteActivity(of: 2, at: start)
        pacer.noteActivity(of: 1, at: start)
        pacer.charge(1, from: start, to: start + .milliseconds(80))
        let pause = Duration.milliseconds(80) * BulkPacer.paceFactor
        XCTAssertEqual(pacer.delay(for: 1, at: start + .milliseconds(80)), pause)
        XCTAssertEqual(pacer.delay(for: 1, at: start + .milliseconds(130)), pause - .milliseconds(50))
        XCTAssertEqual(pacer.delay(for: 1, at: start + .milliseconds(80) + pause), .zero, "the pace allows it again")
        XCTAssertEqual(pacer.delay(for: 2, at: start + .milliseconds(80)), .zero, "the other user is not paced for it")
    }

    func testTwoConnectionsOfOneUser_shareOnePace() {
        let pacer = BulkPacer()
        pacer.noteActivity(of: 2, at: start)
        pacer.charge(1, from: start, to: start + .milliseconds(40))
        pacer.charge(1, from: start, to: start + .milliseconds(40))  // the second connection's request, run alongside
        XCTAssertEqual(pacer.delay(for: 1, at: start + .milliseconds(40)), .milliseconds(80) * BulkPacer.paceFactor)
    }

    func testTheOtherUserGone_endsThePacing_andAWaitIsBounded() {
        let pacer = BulkPacer()
        pacer.noteActivity(of: 2, at: start + .milliseconds(1900))
        pacer.charge(1, from: start, to: start + .seconds(2))
        XCTAssertEqual(pacer.delay(for: 1, at: start + .milliseconds(2500)), BulkPacer.longestWait)
        XCTAssertEqual(pacer.delay(for: 1, at: start + .seconds(3)), .zero, "no other user in the last second")
    }
}
