import CSTOLSocket
import Foundation
import Glibc
import STOLClientKit
import STOLModel
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest

/// ``ServiceClient/runBatches``, the one loop of every batch command, through a real
/// Unix socket and the client's real pipelining, against a taxonomy service played by a
/// thread of the test (the daemons' own answers are `STOLIntegrationTests`'): every
/// request within the protocol's 64 KiB whatever the queries' sizes and the pinned
/// release, answers and local lines in input order, a query too large for any request
/// answered in its place, and a failed input answered up to where it failed.
final class BatchRunnerTests: XCTestCase {
    /// The played service: answers each `lineage_batch` with one result per query (its
    /// taxon id the query's length) and records each request frame's size.
    final class Responder: @unchecked Sendable {
        let path: String
        private let listener: Int32
        private let lock = NSLock()
        private var frames: [Int] = []
        private var failure: String?

        init(directory: String) throws {
            path = directory + "/taxonomy.sock"
            listener = stol_bind_unix(path, 0o600, 8)
            guard listener >= 0 else { throw TestSupportError("bind \(path): \(String(cString: strerror(errno)))") }
            Thread.detachNewThread { [self] in serve() }
        }

        deinit { close(listener) }

        var frameSizes: [Int] { lock.withLock { frames } }
        var error: String? { lock.withLock { failure } }

        private func serve() {
            let descriptor = accept(listener, nil, nil)
            guard descriptor >= 0 else { return }
            let socket = FrameSocket(descriptor: descriptor, maximumIncomingFrameBytes: ProtocolLimits.maximumRequestFrameBytes,
                                     maximumOutgoingFrameBytes: ProtocolLimits.maximumResponseFrameBytes)
            defer { socket.close() }
            while true {
                let body: [UInt8]
                do throws(TransportError) {
                    let (frame, _) = try socket.receiveFrame()
                    body = Array(frame.readableBytesView)
                } catch {
                    if error == .closedByPeer { return }
                    lock.withLock { failure = "the request could not be read: \(error)" }
                    return
                }
                lock.withLock { frames.append(body.count) }
                do {
                    let request = try Stol_V1_TaxonomyRequest(serializedBytes: body)
                    var response = Stol_V1_TaxonomyResponse()
                    response.id = request.id
                    response.lineageBatch = .with {
                        $0.results = request.lineageBatch.queries.map { query in
                            .with { $0.query = query; $0.taxon = .with { $0.id = Int64(query.utf8.count) } }
                        }
                    }
                    try socket.send(response)
                } catch {
                    lock.withLock { failure = "\(error)" }
                    return
                }
            }
        }
    }

    private enum Local: Equatable {
        case comment(String)
        case refused(String, BatchRefusal)
    }

    /// Runs lineage batches of `lines` (a `#` line is answered here) against a new responder;
    /// returns the output lines, the request frames' sizes, and the error the run threw.
    private func run(_ lines: [String], release: String = "", failAfter: Int? = nil, maximumQueries: Int = 1000)
        throws -> (output: [String], frames: [Int], error: ClientError?) {
        let responder = try Responder(directory: try makeTemporaryDirectory(self, prefix: "stolbr"))
        let client = TaxonomyClient(service: "taxonomy", path: responder.path, timeout: .seconds(30))
        client.prepare = { $0.release = release }
        var pending = Array(lines.enumerated())[...]
        var output: [String] = []
        var thrown: ClientError?
        do {
            try client.runBatches(
                maximumQueries: maximumQueries,
                input: { () throws(ClientError) -> BatchEntry<String, Local>? in
                    if let failAfter, lines.count - pending.count == failAfter { throw .badFile("line \(failAfter + 1) is too long") }
                    guard let (number, line) = pending.popFirst() else { return nil }
                    return line.hasPrefix("#") ? .local(.comment(line)) : .query(line, line: number + 1)
                },
                bytes: { ProtobufSize.string(field: 1, $0) },
                request: { queries in .with { $0.lineageBatch = .with { $0.queries = queries; $0.form = .ids } } },
                refuse: { .refused($0, $1) },
                local: { line in
                    switch line {
                    case .comment(let text): output.append(text)
                    case .refused(let query, let refusal): output.append("refused \(query.utf8.count) at line \(refusal.line)")
                    }
                },
                answer: { (response, _, batch) throws(ClientError) in
                    guard case .lineageBatch(let answer) = response.result else { throw .local("unexpected answer") }
                    try batch.expect(results: answer.results.count)
                    batch.walk(answer: { position in
                        let result = answer.results[position]
                        XCTAssertEqual(result.query, batch.queries[position])
                        output.append("\(result.query.prefix(12)) \(result.taxon.id)")
                    }, local: { line in
                        switch line {
                        case .comment(let text): output.append(text)
                        case .refused(let query, let refusal): output.append("refused \(query.utf8.count) at line \(refusal.line)")
                        }
                    })
                })
        } catch {
            thrown = error
        }
        XCTAssertNil(responder.error)
        return (output, responder.frameSizes, thrown)
    }

    private func expected(_ lines: [String], refusedOver limit: Int = .max) -> [String] {
        lines.enumerated().map { number, line in
            line.hasPrefix("#") ? line
                : line.utf8.count > limit ? "refused \(line.utf8.count) at line \(number + 1)"
                : "\(line.prefix(12)) \(line.utf8.count)"
        }
    }

    func testLongNames_areCutBySize_everyRequestWithinTheProtocol_andAnsweredInOrder() throws {
        // Issue 34: 3,000 influenza names of about 74 bytes are 3 requests by count, 222 KB.
        var random = SplitMix64(for: self)
        let names = (0..<3000).map { number in
            number % 97 == 0 ? "# sample \(number)"
                : "Influenza A virus (A/swine/Iowa/A0\(number)/2019(H1N1)) segment \(Int.random(in: 1...8, using: &random))"
                + String(repeating: "x", count: Int.random(in: 0...20, using: &random))
        }
        for release in ["", String(repeating: "r", count: 2000)] {
            let (output, frames, error) = try run(names, release: release)
            XCTAssertNil(error)
            XCTAssertEqual(output, expected(names), "one line per input line, in order")
            XCTAssertTrue(frames.allSatisfy { $0 <= ProtocolLimits.maximumRequestFrameBytes }, "\(frames)")
            XCTAssertGreaterThan(frames.count, 3, "more requests than 1000 queries each: cut by size")
            XCTAssertTrue(frames.dropLast().allSatisfy { $0 > ProtocolLimits.maximumRequestFrameBytes - 200 },
                          "each request but the last is full (its next name did not fit): \(frames)")
        }
    }

    func testAQueryTooLargeForAnyRequest_isAnsweredInItsPlace_andTheOthersAreSent() throws {
        let huge = String(repeating: "h", count: ProtocolLimits.maximumRequestFrameBytes - 10)
        let lines = ["9606", "# before", huge, "Panthera leo", huge + "h", "# after", "9685"]
        let (output, frames, error) = try run(lines, maximumQueries: 2)
        XCTAssertNil(error)
        let budget = TaxonomyClient(service: "taxonomy", path: "/nonexistent")
            .queryBytes(in: .with { $0.lineageBatch = .with { $0.form = .ids } })
        XCTAssertEqual(output, expected(lines, refusedOver: budget - 4))
        XCTAssertEqual(output[2], "refused \(huge.utf8.count) at line 3")
        XCTAssertEqual(frames.count, 2, "9606 and Panthera leo, then 9685")
    }

    func testAFailedInput_isAnsweredUpToWhereItFailed_thenThrown() throws {
        let lines = (1...2500).map { String($0) }
        let (output, _, error) = try run(lines, failAfter: 1700)
        XCTAssertEqual(error?.exitCode, .badFile)
        XCTAssertEqual(output, expected(Array(lines.prefix(1700))), "every line read before the failure answered, in order")
    }

    func testTheBudget_leavesRoomForTheEnvelopeAsSent() throws {
        var random = SplitMix64(for: self)
        for _ in 0..<50 {
            let release = Bool.random(using: &random) ? "" : String(repeating: "é", count: Int.random(in: 0...3000, using: &random))
            let client = TaxonomyClient(service: "taxonomy", path: "/nonexistent")
            client.prepare = { $0.release = release }
            let empty = Stol_V1_TaxonomyRequest.with { $0.nameLookup = .with { $0.within = "Insecta" } }
            let budget = client.queryBytes(in: empty)
            // Fill a request to the budget with names of random sizes, as the queue would.
            var names: [String] = [], bytes = 0
            while true {
                let name = String(repeating: "n", count: Int.random(in: 1...300, using: &random))
                let size = ProtobufSize.string(field: 1, name)
                if bytes + size > budget { break }
                names.append(name)
                bytes += size
            }
            var request = empty
            request.nameLookup.names = names
            client.prepare?(&request)
            // Pinned only later, by the run's first answer: the longest release name a database may have.
            if release.isEmpty { request.release = String(repeating: "9", count: ReleaseName.maximumLength) }
            request.id = .max
            let encoded = (try request.serializedBytes() as [UInt8]).count
            XCTAssertLessThanOrEqual(encoded, ProtocolLimits.maximumRequestFrameBytes)
            XCTAssertGreaterThan(encoded, ProtocolLimits.maximumRequestFrameBytes - 300 - 100, "and little is wasted")
        }
    }
}
