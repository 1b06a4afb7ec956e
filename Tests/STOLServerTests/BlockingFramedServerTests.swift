import Dispatch
import Foundation
import Glibc
import STOLProtocol
import STOLServer
import STOLTestFixtures
import STOLTransport
import XCTest

/// A tiny streaming import service: `status` is one frame; `import_file` answers a
/// progress frame and a final frame that says whether a descriptor came along
/// (and its size by fstat), recording what it read through that descriptor.
/// `delete_reference` blocks on a gate between its two frames (a slow request).
struct TestImportService: StreamingFramedService {
    let events: EventLog
    let gate: Gate
    let slowRequestStarted: DispatchSemaphore

    func respond(to request: Stol_V1_ImportRequest, context: RequestContext,
                 send: (Stol_V1_ImportResponse) throws -> Void) {
        switch request.body {
        case .status:
            try? send(.with { $0.status = .with { $0.importRunning = false } })
        case .importFile:
            try? send(.with { $0.progress = .with { $0.stage = .received; $0.fraction = 1 } })
            var size: UInt64 = 0
            if let fd = context.receivedFileDescriptor {
                var info = stat()
                if fstat(fd.rawValue, &info) == 0 { size = UInt64(info.st_size) }
                var bytes = [UInt8](repeating: 0, count: 64)
                let count = pread(fd.rawValue, &bytes, bytes.count, 0)
                events.record("read: " + String(decoding: bytes.prefix(max(count, 0)), as: UTF8.self))
            }
            try? send(.with {
                $0.done = .with {
                    $0.status.referencePresent = context.receivedFileDescriptor != nil
                    $0.status.referenceSizeBytes = size
                }
            })
        case .deleteReference:
            events.record("slow started")
            try? send(.with { $0.progress = .with { $0.stage = .installing } })
            slowRequestStarted.signal()
            gate.waitUntilOpen()
            events.record("slow finished")
            try? send(.with { $0.done = .init() })
        case nil:
            try? send(Stol_V1_ImportResponse(requestID: request.id, error: ProtocolError(.invalidRequest, "no body")))
        default:
            try? send(Stol_V1_ImportResponse(requestID: request.id, error: .unimplemented("this operation")))
        }
    }
}

final class BlockingFramedServerTests: XCTestCase {
    private let events = EventLog()
    private let gate = Gate()
    private let slowRequestStarted = DispatchSemaphore(value: 0)

    private func startServer(configuration: ServerConfiguration = ServerConfiguration(name: "test")) throws -> ServerHarness {
        let service = TestImportService(events: events, gate: gate, slowRequestStarted: slowRequestStarted)
        let harness = try ServerHarness(self, events: events) { fd in
            // The blocking server does not own the listening socket; close it after the test.
            self.addTeardownBlock { close(fd) }
            return BlockingFramedServer(service: service, source: .listening(fd: fd, activated: false),
                                        configuration: configuration, logger: quietLogger)
        }
        return harness
    }

    private func importFile(_ id: UInt64) -> Stol_V1_ImportRequest {
        .with { $0.id = id; $0.importFile = .init() }
    }

    private func assertServed(_ client: FrameSocket, id: UInt64, file: StaticString = #filePath, line: UInt = #line) {
        do {
            try client.send(Stol_V1_ImportRequest.with { $0.id = id; $0.status = .init() })
            let answer = try client.receive(Stol_V1_ImportResponse.self).message
            XCTAssertEqual(answer.id, id, file: file, line: line)
            XCTAssertEqual(answer.status, Stol_V1_ImportStatus(), file: file, line: line)
        } catch {
            XCTFail("not served: \(error)", file: file, line: line)
        }
    }

    private func temporaryFile(_ contents: String) throws -> Int32 {
        let path = try makeTemporaryDirectory(self) + "/upload.stol"
        try contents.write(toFile: path, atomically: false, encoding: .utf8)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        addTeardownBlock { close(fd) }
        return fd
    }

    func testFileDescriptorPassedWithARequestReachesTheServiceAndProgressPrecedesTheFinalFrame() throws {
        let server = try startServer()
        let client = try server.connect()
        let contents = "STOL\u{0}DB\u{1} a reference database"
        let fd = try temporaryFile(contents)
        try client.send(importFile(11), passing: fd)

        let progress = try client.receive(Stol_V1_ImportResponse.self)
        XCTAssertEqual(progress.message.id, 11, "every frame of a streamed answer carries the request id")
        XCTAssertEqual(progress.message.progress.stage, .received)
        XCTAssertNil(progress.fileDescriptor)
        let final = try client.receive(Stol_V1_ImportResponse.self).message
        XCTAssertEqual(final.id, 11)
        XCTAssertTrue(final.done.status.referencePresent, "the service did not receive the descriptor")
        XCTAssertEqual(final.done.status.referenceSizeBytes, UInt64(contents.utf8.count))
        XCTAssertEqual(events.events, ["read: " + contents])
        // The connection serves further requests.
        assertServed(client, id: 12)
    }

    func testRequestWithoutDescriptorReachesTheServiceWithout() throws {
        let server = try startServer()
        let client = try server.connect()
        try client.send(importFile(21))
        XCTAssertEqual(try client.receive(Stol_V1_ImportResponse.self).message.progress.stage, .received)
        let final = try client.receive(Stol_V1_ImportResponse.self).message
        XCTAssertEqual(final.id, 21)
        XCTAssertFalse(final.done.status.referencePresent)
        XCTAssertEqual(events.events, [])
    }

    func testRequestWithoutBodyIsAnsweredPerTheService() throws {
        let server = try startServer()
        let client = try server.connect()
        try client.send(Stol_V1_ImportRequest.with { $0.id = 5 })
        let answer = try client.receive(Stol_V1_ImportResponse.self).message
        XCTAssertEqual(answer.id, 5)
        XCTAssertEqual(answer.errorCode, .invalidRequest)
    }

    func testUndecodableFrameGetsMalformedFrameAndCloseWhileAnotherConnectionKeepsWorking() throws {
        let server = try startServer()
        let bystander = try server.connect()
        let offender = try server.connect()
        assertServed(bystander, id: 1)

        try offender.sendRaw(undecodableFrame)
        let answer = try offender.receive(Stol_V1_ImportResponse.self).message
        XCTAssertEqual(answer.id, 0)
        XCTAssertEqual(answer.errorCode, .malformedFrame)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_ImportResponse.self, on: offender)

        let fd = try temporaryFile("still here")
        try bystander.send(importFile(2), passing: fd)
        XCTAssertEqual(try bystander.receive(Stol_V1_ImportResponse.self).message.progress.stage, .received)
        XCTAssertTrue(try bystander.receive(Stol_V1_ImportResponse.self).message.done.status.referencePresent)
        assertServed(try server.connect(), id: 3)
    }

    func testOversizedLengthPrefixGetsFrameTooLargeThenClose() throws {
        let server = try startServer()
        let client = try server.connect()
        try client.sendRaw(lengthPrefix(UInt32(ProtocolLimits.maximumRequestFrameBytes + 1)))
        let answer = try client.receive(Stol_V1_ImportResponse.self).message
        XCTAssertEqual(answer.id, 0)
        XCTAssertEqual(answer.errorCode, .frameTooLarge)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_ImportResponse.self, on: client)
    }

    func testConnectionOverTheLimitGetsBusyThenClose() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", maximumConnections: 1))
        let first = try server.connect()
        assertServed(first, id: 1)
        let second = try server.connect()
        let refusal = try second.receive(Stol_V1_ImportResponse.self).message
        XCTAssertEqual(refusal.id, 0)
        XCTAssertEqual(refusal.errorCode, .busy)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_ImportResponse.self, on: second)
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
        let refusal = try third.receive(Stol_V1_ImportResponse.self).message
        XCTAssertEqual(refusal.errorCode, .busy)
        XCTAssertEqual(refusal.protocolError?.details["limit_per_user"], "2")
        TransportError.expect(.closedByPeer, receiving: Stol_V1_ImportResponse.self, on: third)
        first.close()
        // The slot is free again once the server has seen the close: a refused
        // connection is answered BUSY at once, a served one answers the request.
        var served = false
        for attempt in 0..<500 where !served {
            let again = try server.connect()
            try? again.send(Stol_V1_ImportRequest.with { $0.id = UInt64(10 + attempt); $0.status = .init() })  // a refused connection may already be closed: its BUSY frame is still there to read
            let answer = try again.receive(Stol_V1_ImportResponse.self).message
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
    func testATrickleOfBytes_isCutAtTheFrameDeadline() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", frameDeadline: .milliseconds(500)))
        let trickler = try server.connect()
        let frame = try frameBytes(Stol_V1_ImportRequest.with { $0.id = 7; $0.status = .init() })
        let started = Date()
        var cut = false
        for byte in frame.prefix(frame.count - 1) {
            do { try trickler.sendRaw([byte]) } catch { cut = true; break }
            Thread.sleep(forTimeInterval: 0.1)  // the attack: one byte every 100 ms
            if Date().timeIntervalSince(started) > 3 { break }
        }
        if !cut { TransportError.expect(.closedByPeer, receiving: Stol_V1_ImportResponse.self, on: trickler) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "the trickle was cut at the 500 ms deadline")
        assertServed(try server.connect(), id: 2)
    }

    func testIdleConnectionIsClosedWithoutAnAnswer() throws {
        let server = try startServer(configuration: ServerConfiguration(name: "test", idleTimeout: .milliseconds(200)))
        let client = try server.connect()
        assertServed(client, id: 1)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_ImportResponse.self, on: client)
    }

    func testGracefulShutdownFinishesTheInFlightStreamedAnswerBeforeClosing() throws {
        let server = try startServer()
        let busy = try server.connect()
        let idle = try server.connect()
        assertServed(idle, id: 1)
        try busy.send(Stol_V1_ImportRequest.with { $0.id = 40; $0.deleteReference = .init() })
        XCTAssertEqual(try busy.receive(Stol_V1_ImportResponse.self).message.progress.stage, .installing)
        XCTAssertEqual(slowRequestStarted.wait(timeout: .now() + 5), .success)

        server.triggerGracefulShutdown()
        // The idle connection is closed at once: the shutdown has reached the server.
        TransportError.expect(.closedByPeer, receiving: Stol_V1_ImportResponse.self, on: idle)
        _ = server.waitUntilFinished(timeout: 0.2)
        gate.openGate()

        let final = try busy.receive(Stol_V1_ImportResponse.self).message
        XCTAssertEqual(final.id, 40)
        guard case .done = final.result else { return XCTFail("expected the final done frame, got \(final)") }
        TransportError.expect(.closedByPeer, receiving: Stol_V1_ImportResponse.self, on: busy)
        XCTAssertTrue(server.waitUntilFinished())
        XCTAssertEqual(events.events, ["slow started", "slow finished", "run returned"])
    }

    func testAcceptedConnectionSourceServesExactlyThatConnection() throws {
        // `Accept=yes` (the verifier): the server is handed one connected socket.
        let (serverEnd, clientEnd) = try makeSocketPair()
        let client = FrameSocket(descriptor: clientEnd, maximumIncomingFrameBytes: ProtocolLimits.maximumResponseFrameBytes,
                                 maximumOutgoingFrameBytes: ProtocolLimits.maximumRequestFrameBytes)
        client.setReceiveTimeout(.seconds(5))
        let service = TestImportService(events: events, gate: gate, slowRequestStarted: slowRequestStarted)
        let server = BlockingFramedServer(service: service, source: .accepted(fd: serverEnd),
                                          configuration: ServerConfiguration(name: "test"), logger: quietLogger)
        let done = DispatchSemaphore(value: 0)
        Task { try? await server.run(); done.signal() }

        assertServed(client, id: 1)
        client.close()
        XCTAssertEqual(done.wait(timeout: .now() + 5), .success, "run() returns when its one connection ends")
    }
}
