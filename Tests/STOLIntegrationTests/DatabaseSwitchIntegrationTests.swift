import Foundation
import Glibc
import STOLProtocol
import STOLRuntime
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

        final class Observations: @unchecked Sendable {
            let lock = NSLock()
            var kinds: [Stol_V1_DatabaseKind] = []
            var fingerprints: Set<String> = []
            var errors: [String] = []
            var stop = false
            func record(_ response: Stol_V1_TaxonomyResponse) {
                lock.lock(); defer { lock.unlock() }
                if let error = response.protocolError { errors.append("\(error)") }
                if case .taxon(let taxon) = response.result, taxon.id != 9689 { errors.append("wrong taxon \(taxon.id)") }
                kinds.append(response.database.kind)
                fingerprints.insert(response.database.fingerprint)
            }
            var last: Stol_V1_DatabaseKind? { lock.lock(); defer { lock.unlock() }; return kinds.last }
            var shouldStop: Bool { lock.lock(); defer { lock.unlock() }; return stop }
        }
        let observed = Observations()
        let path = stack.socketPath(.taxonomy)
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer { done.signal() }
            do {
                let socket = try FrameSocket.connect(path: path)
                var id: UInt64 = 0
                while !observed.shouldStop {
                    id += 1
                    var request = Stol_V1_TaxonomyRequest()
                    request.id = id
                    var get = Stol_V1_GetTaxonRequest()
                    get.taxonID = 9689
                    request.getTaxon = get
                    try socket.send(request)
                    observed.record(try socket.receive(Stol_V1_TaxonomyResponse.self).message)
                }
            } catch {
                observed.lock.lock(); observed.errors.append("transport: \(error)"); observed.lock.unlock()
            }
        }.start()

        XCTAssertTrue(stack.waitUntil { observed.last == .bundled }, "the bundled database answers first")
        let switches = 10
        for round in 0..<switches {
            let activate = round % 2 == 0
            let result = try stack.client(["db", activate ? "activate" : "deactivate"])
            XCTAssertEqual(result.status, 0, result.stderr)
            let expected: Stol_V1_DatabaseKind = activate ? .reference : .bundled
            XCTAssertTrue(stack.waitUntil { observed.last == expected }, "round \(round): answers never came from the \(expected) database")
        }
        observed.lock.lock(); observed.stop = true; observed.lock.unlock()
        done.wait()

        XCTAssertEqual(observed.errors, [], "no request failed during the switches")
        var transitions = 0
        for (previous, next) in zip(observed.kinds, observed.kinds.dropFirst()) where previous != next { transitions += 1 }
        XCTAssertEqual(transitions, switches, "each switch changed the answering database once, with no flapping")
        XCTAssertTrue(observed.kinds.allSatisfy { $0 == .bundled || $0 == .reference })
        XCTAssertEqual(observed.fingerprints.count, 2, "exactly two databases answered: \(observed.fingerprints)")
        XCTAssertTrue(observed.fingerprints.contains(try stack.importStatus()["reference_fingerprint"] as? String ?? ""))
        print("database switch: \(switches) activations/deactivations under \(observed.kinds.count) requests, 0 errors")
    }
}
