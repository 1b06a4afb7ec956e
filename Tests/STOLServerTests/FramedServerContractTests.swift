import Dispatch
import Foundation
import Glibc
import STOLDaemon
import STOLProtocol
import STOLServer
import STOLTestFixtures
import STOLTransport
import SwiftProtobuf
import XCTest

/// One answer frame of either server, as the contract sees it.
struct ContractAnswer {
    var id: UInt64
    var errorCode: Stol_V1_ErrorCode?
    var errorDetails: [String: String] = [:]
    /// The fixed answer of ``FramedServerContractTests/quickRequest(_:)``.
    var isQuickAnswer = false
    /// The final answer of ``FramedServerContractTests/gatedRequest(_:)``.
    var isGatedAnswer = false
    /// A progress frame of a streamed answer (more frames follow).
    var isProgress = false
    /// It carries a database identity (framing errors must not: no request was read).
    var carriesDatabase = false
}

/// The contract both framed servers keep, written once: limits, error frames for
/// bad frames, BUSY overall and per user, answers in order, the frame deadline,
/// idle timeouts and exits, and a graceful shutdown that answers what is in flight.
///
/// Abstract: each server has one subclass (``NIOFramedServerTests``,
/// ``BlockingFramedServerTests``) that starts it with a small test service and
/// says how its requests and answers look; every test here runs once per
/// subclass. The base class itself runs nothing (its tests are skipped).
/// Linux test discovery lists inherited tests only for a subclass that declares
/// at least one test of its own; both do.
class FramedServerContractTests: XCTestCase {
    /// What the test service did, in order: `start N` / `end N` for the requests
    /// the contract sends, and the harness's `run returned`.
    var events = EventLog()
    /// Opened by a test to let the gated request finish.
    let gate = Gate()
    /// Signalled by the service once the gated request is being served.
    let gatedRequestStarted = DispatchSemaphore(value: 0)

    override func setUpWithError() throws {
        try super.setUpWithError()
        if type(of: self) == FramedServerContractTests.self {
            throw XCTSkip("the abstract contract: it runs in each server's subclass")
        }
    }

    // MARK: What each server's subclass provides

    /// Starts the server under test, with a service built on ``events``, ``gate``
    /// and ``gatedRequestStarted``, listening on a socket of its own.
    func startServer(configuration: ServerConfiguration = ServerConfiguration(name: "test")) throws -> ServerHarness {
        fatalError("\(type(of: self)) must start its server")
    }

    /// Whether stopping closes the listening socket (the blocking server is handed
    /// one it does not own: systemd's, or the test's).
    var stopsListeningOnShutdown: Bool { fatalError("\(type(of: self)) must say") }

    /// A request answered at once with a fixed result (a status).
    func quickRequest(_ id: UInt64) -> any SwiftProtobuf.Message { fatalError("\(type(of: self)) must say") }
    /// A request with no body.
    func requestWithoutBody(_ id: UInt64) -> any SwiftProtobuf.Message { fatalError("\(type(of: self)) must say") }
    /// A request the service records as `start id` … `end id`, sleeping a few milliseconds in between.
    func sleepingRequest(_ id: UInt64) -> any SwiftProtobuf.Message { fatalError("\(type(of: self)) must say") }
    /// A request the service records as `start id`, then waits for ``gate``, then `end id`.
    func gatedRequest(_ id: UInt64) -> any SwiftProtobuf.Message { fatalError("\(type(of: self)) must say") }
    /// A request served on another path than the others (inline on the event loop; a streamed answer).
    func otherRequest(_ id: UInt64) -> any SwiftProtobuf.Message { fatalError("\(type(of: self)) must say") }

    /// Reads one answer frame.
    func receiveAnswer(on socket: FrameSocket) throws -> ContractAnswer { fatalError("\(type(of: self)) must say") }

    /// Receiving on `socket` must end with `expected`.
    func expectReceiving(_ expected: TransportError, on socket: FrameSocket,
                         file: StaticString = #filePath, line: UInt = #line) {
        fatalError("\(type(of: self)) must say")
    }

    // MARK: Helpers

    /// Reads frames until the final one of an answer (progress frames skipped).
    func receiveFinalAnswer(on socket: FrameSocket) throws -> ContractAnswer {
        while true {
            let answer = try receiveAnswer(on: socket)
            if !answer.isProgress { return answer }
        }
    }

    /// Sends the quick request and checks its fixed answer with the echoed id.
    func assertServed(_ client: FrameSocket, id: UInt64, file: StaticString = #filePath, line: UInt = #line) {
        do {
            try client.send(quickRequest(id))
            let answer = try receiveAnswer(on: client)
            XCTAssertEqual(answer.id, id, file: file, line: line)
            XCTAssertTrue(answer.isQuickAnswer, "\(answer)", file: file, line: line)
        } catch {
            XCTFail("not served: \(error)", file: file, line: line)
        }
    }

    func frame(_ message: any SwiftProtobuf.Message) throws -> [UInt8] { try frameBytes(message) }

    // MARK: The contract

    func testQuickRequestIsAnsweredWithTheServicesAnswerAndEchoedID() throws {
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
        let answer = try receiveAnswer(on: offender)
        XCTAssertEqual(answer.id, 0, "framing errors are answered with id 0")
        XCTAssertEqual(answer.errorCode, .malformedFrame)
        XCTAssertFalse(answer.carriesDatabase)
        expectReceiving(.closedByPeer, on: offender)

        assertServed(bystander, id: 2)
        assertServed(try server.connect(), id: 3)
    }

    func testOversizedLengthPrefixGetsFrameTooLargeThenClose() throws {
        let server = try startServer()
        let client = try server.connect()
        let announced = UInt32(ProtocolLimits.maximumRequestFrameBytes + 1)
        try client.sendRaw(lengthPrefix(announced))
        let answer = try receiveAnswer(on: client)
        XCTAssertEqual(answer.id, 0)
        XCTAssertEqual(answer.errorCode, .frameTooLarge)
        XCTAssertEqual(answer.errorDetails,
                       ["length": String(announced), "limit": String(ProtocolLimits.maximumRequestFrameBytes)])
        expectReceiving(.closedByPeer, on: client)
        assertServed(try server.connect(), id: 9)
    }

    func testFrameAtTheRequestLimitIsAccepted() throws {
        let server = try startServer()
        let client = try server.connect()
        // The quick request padded with an unknown field up to exactly the limit:
        // accepted, and the unknown field is ignored.
        let limit = ProtocolLimits.maximumRequestFrameBytes
        var body: [UInt8] = try quickRequest(5).serializedBytes()
        body += [0xba, 0x3e]                                   // tag of field 999, wire type 2 (length-delimited)
        let padding = limit - body.count - 3                   // its length is a 3-byte varint
        body += [UInt8(padding & 0x7f) | 0x80, UInt8(padding >> 7 & 0x7f) | 0x80, UInt8(padding >> 14)]
        body += [UInt8](repeating: 0x61, count: padding)
        XCTAssertEqual(body.count, limit)
        try client.sendRaw(lengthPrefix(UInt32(body.count)) + body)
        let answer = try receiveAnswer(on: client)
        XCTAssertEqual(answer.id, 5)
        XCTAssertNil(answer.errorCode)
        XCTAssertTrue(answer.isQuickAnswer, "\(answer)")
    }

    func testRequestWithoutBodyIsAnsweredInvalidRequest_andTheConnectionStaysUsable() throws {
        let server = try startServer()
        let client = try server.connect()
        try client.send(requestWithoutBody(31))
        let answer = try receiveAnswer(on: client)
        XCTAssertEqual(answer.id, 31)
        XCTAssertEqual(answer.errorCode, .invalidRequest)
        assertServed(client, id: 32)
    }

    func testPipelinedRequestsOnOneConnectionAreAnsweredInOrderOneAtATime() throws {
        let server = try startServer()
        let client = try server.connect()
        var stream: [UInt8] = []
        for id in UInt64(1)...20 {
            // Odd ids sleep, so out-of-order or concurrent handling would show.
            stream += try frame(id % 2 == 1 ? sleepingRequest(id) : quickRequest(id))
        }
        try client.sendRaw(stream)   // all twenty in one write
        for id in UInt64(1)...20 {
            let answer = try receiveFinalAnswer(on: client)
            XCTAssertEqual(answer.id, id)
            XCTAssertEqual(answer.isQuickAnswer, id % 2 == 0, "answer \(id): \(answer)")
        }
        let expected = stride(from: 1, through: 20, by: 2).flatMap { ["start \($0)", "end \($0)"] }
        XCTAssertEqual(events.events, expected, "requests of one connection overlapped or ran out of order")
    }

    /// Found by the socket fuzzer (`Tests/tools/socket_fuzzer.py`), whose probe sends a
    /// request and ends its side of the stream (`shutdown(SHUT_WR)`, as `nc -N` or a
    /// script piping requests in does): the NIO server closed the connection as soon
    /// as it read the end of the stream, dropping the answers of requests still to be
    /// served on the task pool, while those answered inline got through. Every request
    /// sent before the end is answered, in order, then the connection closes.
    func testAClientThatEndsItsStreamAfterPipelinedRequests_getsEveryAnswerInOrder_thenEOF() throws {
        let server = try startServer()
        let client = try server.connect()
        // The end of the stream comes while request 1 is in flight and three more
        // wait in the socket (one sleeping, one on the other path, one quick).
        try client.send(gatedRequest(1))
        XCTAssertEqual(gatedRequestStarted.wait(timeout: .now() + 5), .success)
        try client.sendRaw(try frame(sleepingRequest(2)) + frame(otherRequest(3)) + frame(quickRequest(4)))
        XCTAssertEqual(shutdown(client.descriptor, Int32(SHUT_WR)), 0)
        gate.open()
        for id in UInt64(1)...4 {
            let answer = try? receiveFinalAnswer(on: client)
            XCTAssertEqual(answer?.id, id, "request \(id) was not answered")
            XCTAssertNil(answer?.errorCode)
        }
        expectReceiving(.closedByPeer, on: client)
    }

    func testGracefulShutdownLetsTheInFlightRequestFinishAndBeAnsweredBeforeClosing() throws {
        let server = try startServer()
        let busy = try server.connect()
        let idle = try server.connect()
        assertServed(idle, id: 1)
        try busy.send(gatedRequest(77))
        XCTAssertEqual(gatedRequestStarted.wait(timeout: .now() + 5), .success)

        server.triggerGracefulShutdown()
        if stopsListeningOnShutdown {
            XCTAssertTrue(waitUntilRefusingConnections(server.path), "the server kept accepting during shutdown")
        }
        // An idle connection is closed at once, without an answer: the shutdown has reached the server.
        expectReceiving(.closedByPeer, on: idle)
        // Give a server that would not wait for in-flight work the chance to return early.
        _ = server.waitUntilFinished(timeout: 0.2)
        gate.open()

        let answer = try receiveFinalAnswer(on: busy)
        XCTAssertEqual(answer.id, 77)
        XCTAssertTrue(answer.isGatedAnswer, "\(answer)")
        expectReceiving(.closedByPeer, on: busy)
        XCTAssertTrue(server.waitUntilFinished())
        XCTAssertEqual(events.events, ["start 77", "end 77", "run returned"],
                       "run() must not return before in-flight requests are answered")
    }

    /// Cancelling the server's task (not a graceful shutdown) also answers what is
    /// in flight first, then returns.
    func testCancellationAlsoLetsTheInFlightRequestFinishAndBeAnswered() throws {
        let server = try startServer()
        let busy = try server.connect()
        try busy.send(gatedRequest(78))
        XCTAssertEqual(gatedRequestStarted.wait(timeout: .now() + 5), .success)

        server.cancel()
        if stopsListeningOnShutdown {
            XCTAssertTrue(waitUntilRefusingConnections(server.path), "the server kept accepting after cancellation")
        }
        // Give a server that would not wait for in-flight work the chance to return early.
        _ = server.waitUntilFinished(timeout: 0.2)
        gate.open()

        let answer = try receiveFinalAnswer(on: busy)
        XCTAssertEqual(answer.id, 78)
        XCTAssertTrue(answer.isGatedAnswer, "\(answer)")
        expectReceiving(.closedByPeer, on: busy)
        XCTAssertTrue(server.waitUntilFinished(), "run() did not return after cancellation")
        XCTAssertEqual(events.events, ["start 78", "end 78", "run returned"])
    }

    func testConnectionOverTheLimitGetsBusyThenClose() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", maximumConnections: 1))
        let first = try server.connect()
        assertServed(first, id: 1)
        let second = try server.connect()
        let refusal = try receiveAnswer(on: second)
        XCTAssertEqual(refusal.id, 0)
        XCTAssertEqual(refusal.errorCode, .busy)
        expectReceiving(.closedByPeer, on: second)
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
        let refusal = try receiveAnswer(on: third)
        XCTAssertEqual(refusal.errorCode, .busy)
        XCTAssertEqual(refusal.errorDetails["limit_per_user"], "2")
        expectReceiving(.closedByPeer, on: third)
        first.close()
        // The slot is free again once the server has seen the close: a refused
        // connection is answered BUSY at once, a served one answers the request.
        var served = false
        for attempt in 0..<500 where !served {
            let again = try server.connect()
            try? again.send(quickRequest(UInt64(10 + attempt)))  // a refused connection may already be closed: its BUSY frame is still there to read
            let answer = try receiveAnswer(on: again)
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

    /// The idle timeout restarts with every byte; the frame deadline does not.
    func testATrickleOfBytes_isCutAtTheFrameDeadline_whileWholeFramesSlowlyAreServed() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", frameDeadline: .milliseconds(500)))
        let trickler = try server.connect()
        let patient = try server.connect()
        let bytes = try frame(quickRequest(7))
        let started = Date()
        var cut = false
        for byte in bytes.prefix(bytes.count - 1) {
            do { try trickler.sendRaw([byte]) } catch { cut = true; break }
            assertServed(patient, id: 1)  // whole frames, one at a time, keep being served
            Thread.sleep(forTimeInterval: 0.1)  // the attack: one byte every 100 ms (its pace, not a synchronisation)
            if Date().timeIntervalSince(started) > 3 { break }
        }
        if !cut { expectReceiving(.closedByPeer, on: trickler) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "the trickle was cut at the 500 ms deadline")
        assertServed(patient, id: 2)
        assertServed(try server.connect(), id: 3)
    }

    func testIdleConnectionIsClosedWithoutAnAnswer() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", idleTimeout: .milliseconds(200)))
        let client = try server.connect()
        assertServed(client, id: 1)
        expectReceiving(.closedByPeer, on: client)
        assertServed(try server.connect(), id: 2)
    }
}
