import Dispatch
import Foundation
import Glibc
import STOLProtocol
import STOLServer
import STOLTransport
import XCTest

/// A tiny taxonomy service: a fixed status, an echoing get_taxon (answered inline
/// on the event loop for positive ids), a gated slow request (taxon -1) and a
/// briefly sleeping one (taxon -2), both on the task pool; and large answers of
/// about 256 KB, inline (children) and on the task pool (search).
struct TestTaxonomyService: FramedService {
    static let gatedTaxonID: Int64 = -1
    static let sleepingTaxonID: Int64 = -2

    let events: EventLog
    let gate: AsyncGate
    let gatedRequestStarted: DispatchSemaphore

    init(events: EventLog, gate: AsyncGate = AsyncGate(), gatedRequestStarted: DispatchSemaphore = DispatchSemaphore(value: 0)) {
        self.events = events
        self.gate = gate
        self.gatedRequestStarted = gatedRequestStarted
    }

    static var fixedStatus: Stol_V1_TaxonomyResponse {
        .with {
            $0.database = .with { $0.kind = .bundled; $0.fingerprint = "test"; $0.schemaVersion = 1 }
            $0.status = .with { $0.taxaCount = 3; $0.serverVersion = "runtime-tests" }
        }
    }

    static func largePage(_ id: UInt64) -> Stol_V1_TaxonomyResponse {
        .with { $0.children = .with { $0.taxa = (0..<1000).map { index in
            .with { $0.id = Int64(index); $0.scientificName = String(repeating: "x", count: 250) }
        } } }
    }

    func respondInline(to request: Stol_V1_TaxonomyRequest, context: RequestContext) -> Stol_V1_TaxonomyResponse? {
        if case .children = request.body {
            events.record("large \(request.id)")
            return Self.largePage(request.id)
        }
        guard case .getTaxon(let get) = request.body, get.taxonID > 0 else { return nil }
        events.record("start \(request.id)")
        events.record("end \(request.id)")
        return .with { $0.taxon = .with { $0.id = get.taxonID; $0.scientificName = "Taxon \(get.taxonID) inline" } }
    }

    func respond(to request: Stol_V1_TaxonomyRequest, context: RequestContext) async -> Stol_V1_TaxonomyResponse {
        switch request.body {
        case .status:
            return Self.fixedStatus
        case .search:
            events.record("large \(request.id)")
            return Self.largePage(request.id)
        case .getTaxon(let get):
            events.record("start \(request.id)")
            if get.taxonID == Self.gatedTaxonID {
                gatedRequestStarted.signal()
                await gate.wait()
            } else if get.taxonID == Self.sleepingTaxonID {
                try? await Task.sleep(for: .milliseconds(5))
            }
            events.record("end \(request.id)")
            return .with {
                $0.taxon = .with { $0.id = get.taxonID; $0.scientificName = "Taxon \(get.taxonID)" }
            }
        case nil:
            return Stol_V1_TaxonomyResponse(requestID: request.id, error: ProtocolError(.invalidRequest, "request without body"))
        default:
            return Stol_V1_TaxonomyResponse(requestID: request.id, error: .unimplemented("this operation"))
        }
    }
}

final class NIOFramedServerTests: XCTestCase {
    private var events = EventLog()
    private var gate = AsyncGate()
    private var gatedRequestStarted = DispatchSemaphore(value: 0)

    private func startServer(configuration: ServerConfiguration = ServerConfiguration(name: "test")) throws -> ServerHarness {
        let service = TestTaxonomyService(events: events, gate: gate, gatedRequestStarted: gatedRequestStarted)
        return try ServerHarness(self, events: events) { fd in
            NIOFramedServer(service: service, listeningSocket: fd, configuration: configuration, logger: quietLogger)
        }
    }

    private func statusRequest(_ id: UInt64) -> Stol_V1_TaxonomyRequest {
        .with { $0.id = id; $0.status = .init() }
    }

    private func getTaxon(_ id: UInt64, _ taxon: Int64) -> Stol_V1_TaxonomyRequest {
        .with { $0.id = id; $0.getTaxon = .with { $0.taxonID = taxon } }
    }

    /// Sends a status request and checks the fixed answer with the echoed id.
    private func assertServed(_ client: FrameSocket, id: UInt64, file: StaticString = #filePath, line: UInt = #line) {
        do {
            try client.send(statusRequest(id))
            let response = try client.receive(Stol_V1_TaxonomyResponse.self).message
            var expected = TestTaxonomyService.fixedStatus
            expected.id = id
            XCTAssertEqual(response, expected, file: file, line: line)
        } catch {
            XCTFail("not served: \(error)", file: file, line: line)
        }
    }

    func testStatusRequestIsAnsweredWithTheServicesResponseAndEchoedID() throws {
        let server = try startServer()
        let client = try server.connect()
        assertServed(client, id: 4711)
        assertServed(client, id: 0)
    }

    func testUndecodableFrameGetsMalformedFrameThenEOFWhileAnotherClientKeepsBeingAnswered() throws {
        let server = try startServer()
        let bystander = try server.connect()
        let offender = try server.connect()
        assertServed(bystander, id: 1)

        try offender.sendRaw(undecodableFrame)
        let answer = try offender.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(answer.id, 0, "framing errors are answered with id 0")
        XCTAssertEqual(answer.errorCode, .malformedFrame)
        XCTAssertFalse(answer.hasDatabase)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: offender)

        assertServed(bystander, id: 2)
        assertServed(try server.connect(), id: 3)
    }

    func testOversizedLengthPrefixGetsFrameTooLargeThenClose() throws {
        let server = try startServer()
        let client = try server.connect()
        let announced = UInt32(ProtocolLimits.maximumRequestFrameBytes + 1)
        try client.sendRaw(lengthPrefix(announced))
        let answer = try client.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(answer.id, 0)
        XCTAssertEqual(answer.errorCode, .frameTooLarge)
        XCTAssertEqual(answer.protocolError?.details,
                       ["length": String(announced), "limit": String(ProtocolLimits.maximumRequestFrameBytes)])
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: client)
        assertServed(try server.connect(), id: 9)
    }

    func testFrameAtTheRequestLimitIsAccepted() throws {
        let server = try startServer()
        let client = try server.connect()
        // A status request padded with an unknown field up to exactly the limit:
        // accepted, and the unknown field is ignored.
        let limit = ProtocolLimits.maximumRequestFrameBytes
        var body: [UInt8] = try statusRequest(5).serializedBytes()
        body += [0xba, 0x3e]                                   // tag of field 999, wire type 2 (length-delimited)
        let padding = limit - body.count - 3                   // its length is a 3-byte varint
        body += [UInt8(padding & 0x7f) | 0x80, UInt8(padding >> 7 & 0x7f) | 0x80, UInt8(padding >> 14)]
        body += [UInt8](repeating: 0x61, count: padding)
        XCTAssertEqual(body.count, limit)
        let frame = lengthPrefix(UInt32(body.count)) + body
        try client.sendRaw(frame)
        let answer = try client.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(answer.id, 5)
        XCTAssertNil(answer.errorCode)
        XCTAssertEqual(answer.status.serverVersion, "runtime-tests")
    }

    func testRequestWithoutBodyIsAnsweredPerTheService() throws {
        let server = try startServer()
        let client = try server.connect()
        try client.send(Stol_V1_TaxonomyRequest.with { $0.id = 31 })
        let answer = try client.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(answer.id, 31)
        XCTAssertEqual(answer.errorCode, .invalidRequest)
        // The connection stays usable after an error answer.
        assertServed(client, id: 32)
    }

    func testPipelinedRequestsOnOneConnectionAreAnsweredInOrderOneAtATime() throws {
        let server = try startServer()
        let client = try server.connect()
        var stream: [UInt8] = []
        for id in UInt64(1)...20 {
            // Odd ids sleep, so out-of-order or concurrent handling would show.
            stream += try frameBytes(getTaxon(id, id % 2 == 1 ? TestTaxonomyService.sleepingTaxonID : Int64(id)))
        }
        try client.sendRaw(stream)   // all twenty in one write
        for id in UInt64(1)...20 {
            let answer = try client.receive(Stol_V1_TaxonomyResponse.self).message
            XCTAssertEqual(answer.id, id)
            XCTAssertEqual(answer.taxon.id, id % 2 == 1 ? TestTaxonomyService.sleepingTaxonID : Int64(id))
        }
        let expected = (1...20).flatMap { ["start \($0)", "end \($0)"] }
        XCTAssertEqual(events.events, expected, "requests of one connection overlapped or ran out of order")
    }

    func testPipelinedInlineAndTaskPoolRequestsAreAnsweredInOrder_inlineOnesByTheEventLoop() throws {
        let server = try startServer()
        let client = try server.connect()
        var stream: [UInt8] = []
        // Ids 1…100: every tenth sleeps on the task pool, the rest are answered inline.
        for id in UInt64(1)...100 {
            stream += try frameBytes(getTaxon(id, id % 10 == 0 ? TestTaxonomyService.sleepingTaxonID : Int64(id)))
        }
        try client.sendRaw(stream)
        for id in UInt64(1)...100 {
            let answer = try client.receive(Stol_V1_TaxonomyResponse.self).message
            XCTAssertEqual(answer.id, id)
            if id % 10 == 0 {
                XCTAssertEqual(answer.taxon.scientificName, "Taxon -2")
            } else {
                XCTAssertEqual(answer.taxon.scientificName, "Taxon \(id) inline", "short request not answered inline")
            }
        }
        XCTAssertEqual(events.events, (1...100).flatMap { ["start \($0)", "end \($0)"] })
        assertServed(client, id: 101)
    }

    /// Found by the socket fuzzer (`Tests/tools/socket_fuzzer.py`), whose probe sends a
    /// request and ends its side of the stream (`shutdown(SHUT_WR)`, as `nc -N` or a
    /// script piping requests in does): the server closed the connection as soon as it
    /// read the end of the stream, dropping the answers of requests still to be served
    /// on the task pool, while those answered inline got through. Now every request
    /// sent before the end is answered, in order, then the connection closes.
    func testAClientThatEndsItsStreamAfterPipelinedRequests_getsEveryAnswerInOrder_thenEOF() throws {
        let server = try startServer()
        let client = try server.connect()
        // The end of the stream comes while request 1 is in flight on the task pool and
        // three more wait in the socket (one on the task pool, one inline, one status).
        try client.send(getTaxon(1, TestTaxonomyService.gatedTaxonID))
        XCTAssertEqual(gatedRequestStarted.wait(timeout: .now() + 5), .success)
        try client.sendRaw(try frameBytes(getTaxon(2, TestTaxonomyService.sleepingTaxonID))
                           + frameBytes(getTaxon(3, 3)) + frameBytes(statusRequest(4)))
        XCTAssertEqual(shutdown(client.descriptor, Int32(SHUT_WR)), 0)
        gate.open()
        for id in UInt64(1)...4 {
            let answer = try? client.receive(Stol_V1_TaxonomyResponse.self).message
            XCTAssertEqual(answer?.id, id, "request \(id) was not answered")
        }
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: client)
    }

    func testGracefulShutdownLetsTheInFlightRequestFinishAndBeAnsweredBeforeClosing() throws {
        let server = try startServer()
        let busy = try server.connect()
        let idle = try server.connect()
        assertServed(idle, id: 1)
        try busy.send(getTaxon(77, TestTaxonomyService.gatedTaxonID))
        XCTAssertEqual(gatedRequestStarted.wait(timeout: .now() + 5), .success)

        server.triggerGracefulShutdown()
        XCTAssertTrue(waitUntilRefusingConnections(server.path), "the server kept accepting during shutdown")
        // An idle connection is closed at once, without an answer.
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: idle)
        // Give a server that would not wait for in-flight work the chance to return early.
        _ = server.waitUntilFinished(timeout: 0.2)
        gate.open()

        let answer = try busy.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(answer.id, 77)
        XCTAssertEqual(answer.taxon.id, TestTaxonomyService.gatedTaxonID)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: busy)
        XCTAssertTrue(server.waitUntilFinished())
        XCTAssertEqual(events.events, ["start 77", "end 77", "run returned"],
                       "run() must not return before in-flight requests are answered")
    }

    func testCancellationAlsoLetsTheInFlightRequestFinishAndBeAnswered() throws {
        let server = try startServer()
        let busy = try server.connect()
        try busy.send(getTaxon(78, TestTaxonomyService.gatedTaxonID))
        XCTAssertEqual(gatedRequestStarted.wait(timeout: .now() + 5), .success)

        server.cancel()
        XCTAssertTrue(waitUntilRefusingConnections(server.path))
        _ = server.waitUntilFinished(timeout: 0.2)
        gate.open()

        let answer = try busy.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(answer.id, 78)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: busy)
        XCTAssertTrue(server.waitUntilFinished())
        XCTAssertEqual(events.events.first, "start 78")
        XCTAssertEqual(Array(events.events.dropFirst()), ["end 78", "run returned"])
    }

    func testConnectionOverTheLimitGetsBusyThenClose() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", maximumConnections: 1))
        let first = try server.connect()
        assertServed(first, id: 1)
        let second = try server.connect()
        let refusal = try second.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(refusal.id, 0)
        XCTAssertEqual(refusal.errorCode, .busy)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: second)
        assertServed(first, id: 2)
    }

    func testOneUserOverItsPerUserLimit_getsBusyNamingTheLimit_whileTheServerHasRoom() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", maximumConnections: 10,
                                                                        maximumConnectionsPerUser: 2))
        let first = try server.connect()
        let second = try server.connect()
        assertServed(first, id: 1)
        assertServed(second, id: 2)
        let third = try server.connect()
        let refusal = try third.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(refusal.errorCode, .busy)
        XCTAssertEqual(refusal.protocolError?.details["limit_per_user"], "2")
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: third)
        first.close()
        // The slot is free again once the server has seen the close: a refused
        // connection is answered BUSY at once, a served one answers the request.
        var served = false
        for attempt in 0..<500 where !served {
            let again = try server.connect()
            try? again.send(statusRequest(UInt64(10 + attempt)))  // a refused connection may already be closed: its BUSY frame is still there to read
            let answer = try again.receive(Stol_V1_TaxonomyResponse.self).message
            served = answer.errorCode != .busy
            if served { XCTAssertEqual(answer.id, UInt64(10 + attempt)) }
        }
        XCTAssertTrue(served)
    }

    func testIdleExit_returnsOnceNoConnectionWasOpenForThePeriod_notWhileOneIs() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", idleExit: .milliseconds(300)))
        let client = try server.connect()
        assertServed(client, id: 1)
        XCTAssertFalse(server.waitUntilFinished(timeout: 1), "an open connection keeps the server")
        assertServed(client, id: 2)
        client.close()
        XCTAssertTrue(server.waitUntilFinished(timeout: 10), "no connection for 300 ms: the server returned")
    }

    /// A client that pipelines requests for large answers and reads none: the server
    /// stops reading it once unsent answers pass the high water mark, so it holds a
    /// bounded number of answers however many requests wait, and serves them all
    /// once the client reads. Inline answers (children) and task-pool ones (search).
    func testPipeliningWithoutReading_isStoppedByBackPressure_thenServedInOrder() throws {
        for (name, body) in [("inline", Stol_V1_TaxonomyRequest.OneOf_Body.children(.init())), ("task pool", .search(.init()))] {
            events = EventLog()
            let server = try startServer()
            let client = try server.connect()
            let count = 80
            var burst: [UInt8] = []
            for id in 1...count { burst += try frameBytes(Stol_V1_TaxonomyRequest.with { $0.id = UInt64(id); $0.body = body }) }
            try client.sendRaw(burst)  // about 4 KB: all of it fits the socket buffer
            // What the server produced while nobody read: wait until it stops growing.
            var produced = -1
            while produced != events.events.count {
                produced = events.events.count
                Thread.sleep(forTimeInterval: 0.2)
            }
            // 1 MiB water mark + about 256 KB per answer + the socket buffers: far below 80 answers (20 MB).
            XCTAssertLessThan(produced, 20, "\(name): answers produced without a reader: \(produced)")
            print("back-pressure (\(name)): \(produced) of \(count) pipelined requests answered while the client read nothing")
            XCTAssertGreaterThan(produced, 0)
            for id in 1...count {
                let answer = try client.receive(Stol_V1_TaxonomyResponse.self).message
                XCTAssertEqual(answer.id, UInt64(id))
            }
            XCTAssertEqual(events.events.count, count, "every request was answered once the client read")
        }
    }

    func testAClientThatDoesNotReadItsAnswers_isClosedAfterTheSlowReaderTimeout() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", slowReaderTimeout: .milliseconds(300)))
        let client = try server.connect()
        var burst: [UInt8] = []
        for id in 1...200 { burst += try frameBytes(Stol_V1_TaxonomyRequest.with { $0.id = UInt64(id); $0.children = .init() }) }
        try client.sendRaw(burst)
        let other = try server.connect()
        assertServed(other, id: 999)  // another client is served meanwhile
        Thread.sleep(forTimeInterval: 1)  // the attack: not reading, for more than the 300 ms timeout
        // The stalled connection is cut: reading it ends before all 200 answers.
        var answers = 0
        do {
            while true {
                _ = try client.receive(Stol_V1_TaxonomyResponse.self)
                answers += 1
            }
        } catch {
            // Cut between frames, or in the middle of one: either way the server closed it.
            switch error as? TransportError {
            case .closedByPeer?, .framing(.truncatedFrame)?: break
            default: XCTFail("expected the connection to be closed, got \(error)")
            }
        }
        XCTAssertLessThan(answers, 200)
    }

    /// The idle timeout restarts with every byte; the frame deadline does not.
    func testATrickleOfBytes_isCutAtTheFrameDeadline_whileWholeFramesSlowlyAreServed() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", frameDeadline: .milliseconds(500)))
        let trickler = try server.connect()
        let patient = try server.connect()
        let frame = try frameBytes(statusRequest(7))
        let started = Date()
        var cut = false
        for byte in frame.prefix(frame.count - 1) {
            do { try trickler.sendRaw([byte]) } catch { cut = true; break }
            assertServed(patient, id: 1)  // whole frames, one at a time, keep being served
            Thread.sleep(forTimeInterval: 0.1)  // the attack: one byte every 100 ms
            if Date().timeIntervalSince(started) > 3 { break }
        }
        if !cut { TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: trickler) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "the trickle was cut at the 500 ms deadline")
        assertServed(patient, id: 2)
    }

    func testIdleConnectionIsClosedWithoutAnAnswer() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", idleTimeout: .milliseconds(200)))
        let client = try server.connect()
        assertServed(client, id: 1)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyResponse.self, on: client)
        assertServed(try server.connect(), id: 2)
    }
}
