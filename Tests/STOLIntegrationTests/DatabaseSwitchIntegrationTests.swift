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

    /// Two releases installed; one client asks without a release, two pin one each,
    /// while the default goes back and forth between them: no request fails, each
    /// pinned client only ever hears its own release, and the unpinned one follows
    /// the default, switching once per switch.
    func testSwitchingTheDefault_whilePinnedAndUnpinnedClientsQuery_losesNoRequest_andEveryAnswerNamesItsRelease() throws {
        let stack = try StackHarness()
        try stack.startImportStack()
        for release in ["2023.11.4", "2024.9.7"] {
            let (file, _) = try stack.signedDatabase(name: release, release: release)
            XCTAssertEqual(try stack.client(["db", "import", file]).status, 0)
        }
        XCTAssertEqual(try stack.client(["db", "activate", "2023.11.4"]).status, 0)
        let unpinned = TaxonomyProbe(socket: stack.socketPath(.taxonomy))
        let pinned = ["2023.11.4", "2024.9.7"].map { TaxonomyProbe(socket: stack.socketPath(.taxonomy), release: $0) }
        XCTAssertTrue(waitUntil { unpinned.lastRelease == "2023.11.4" && pinned.allSatisfy { $0.lastRelease != nil } })
        let switches = 8
        for round in 0..<switches {
            let release = round % 2 == 0 ? "2024.9.7" : "2023.11.4"
            let result = try stack.client(["db", "activate", release])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertTrue(waitUntil { unpinned.lastRelease == release }, "round \(round): the default never answered from \(release)")
        }
        let seen = unpinned.stop()
        XCTAssertEqual(seen.errors, [], "no unpinned request failed")
        let releases = unpinned.releases
        XCTAssertTrue(releases.allSatisfy { $0 == "2023.11.4" || $0 == "2024.9.7" }, "\(Set(releases))")
        XCTAssertEqual(zip(releases, releases.dropFirst()).filter { $0 != $1 }.count, switches, "no flapping")
        for (probe, release) in zip(pinned, ["2023.11.4", "2024.9.7"]) {
            let answers = probe.releases
            XCTAssertEqual(probe.stop().errors, [], "no request pinned to \(release) failed")
            XCTAssertEqual(Set(answers), [release], "every answer pinned to \(release) came from it")
            XCTAssertGreaterThan(answers.count, switches, release)
        }
        print("release switch: \(switches) switches of the default under \(releases.count) unpinned and "
              + "\(pinned.map { $0.releases.count }.reduce(0, +)) pinned requests, 0 errors")
    }
}
