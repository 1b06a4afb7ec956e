import Foundation
import Glibc
import STOLProtocol
import STOLTestFixtures
import XCTest

/// Activation and deactivation switch the taxonomy server without a failed
/// request: a client querying in a loop through every switch sees no error, and
/// every answer names the database (bundled or reference) that produced it.
final class DatabaseSwitchIntegrationTests: XCTestCase {
    func testClientLoopingThroughActivateAndDeactivate_seesNoError_andEveryAnswerNamesItsDatabase() throws {
        let stack = try StackHarness()
        try stack.startImportStack()
        let (file, _) = try stack.signedDatabase(name: "reference", builtAt: "2026-11-11T11:11:11Z")
        XCTAssertEqual(try stack.client(["db", "import", file]).status, 0)

        let observed = TaxonomyProbe(socket: stack.socketPath(.taxonomy))
        XCTAssertTrue(waitUntil { observed.last == .bundled }, "the bundled database answers first")
        let switches = 10
        for round in 0..<switches {
            let activate = round % 2 == 0
            let result = try stack.client(["db", activate ? "activate" : "deactivate"])
            XCTAssertEqual(result.status, 0, result.stderr)
            let expected: Stol_V1_DatabaseKind = activate ? .reference : .bundled
            XCTAssertTrue(waitUntil { observed.last == expected }, "round \(round): answers never came from the \(expected) database")
        }
        let seen = observed.stop()
        XCTAssertEqual(seen.errors, [], "no request failed during the switches")
        var transitions = 0
        for (previous, next) in zip(seen.kinds, seen.kinds.dropFirst()) where previous != next { transitions += 1 }
        XCTAssertEqual(transitions, switches, "each switch changed the answering database once, with no flapping")
        XCTAssertTrue(seen.kinds.allSatisfy { $0 == .bundled || $0 == .reference })
        XCTAssertEqual(seen.fingerprints.count, 2, "exactly two databases answered: \(seen.fingerprints)")
        XCTAssertTrue(seen.fingerprints.contains(try stack.importStatus()["reference_fingerprint"] as? String ?? ""))
        print("database switch: \(switches) activations/deactivations under \(seen.kinds.count) requests, 0 errors")
    }
}
