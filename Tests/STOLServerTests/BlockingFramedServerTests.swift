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

/// A tiny streaming import service: `status` is one frame; `import_file` answers a
/// progress frame and a final frame that says whether a descriptor came along
/// (and its size by fstat), recording what it read through that descriptor.
/// `delete_reference` blocks on a gate between its two frames (a slow request);
/// `activate` sleeps briefly.
struct TestImportService: StreamingFramedService {
    let events: EventLog
    let gate: Gate
    let gatedRequestStarted: DispatchSemaphore

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
            events.record("start \(request.id)")
            try? send(.with { $0.progress = .with { $0.stage = .installing } })
            gatedRequestStarted.signal()
            gate.waitUntilOpen()
            events.record("end \(request.id)")
            try? send(.with { $0.done = .init() })
        case .activate:
            events.record("start \(request.id)")
            usleep(5_000)
            events.record("end \(request.id)")
            try? send(.with { $0.done = .init() })
        case nil:
            try? send(Stol_V1_ImportResponse(requestID: request.id, error: ProtocolError(.invalidRequest, "no body")))
        default:
            try? send(Stol_V1_ImportResponse(requestID: request.id, error: .unimplemented("this operation")))
        }
    }
}

/// The blocking server (import, verifier): the contract of ``FramedServerContractTests``
/// runs here with ``TestImportService``, plus what only this server does: descriptors
/// passed with a request, streamed answers, and serving one accepted connection.
final class BlockingFramedServerTests: FramedServerContractTests {
    override func startServer(configuration: ServerConfiguration = ServerConfiguration(name: "test")) throws -> ServerHarness {
        let service = TestImportService(events: events, gate: gate, gatedRequestStarted: gatedRequestStarted)
        return try ServerHarness(self, events: events) { fd in
            // The blocking server does not own the listening socket; close it after the test.
            self.addTeardownBlock { close(fd) }
            return BlockingFramedServer(service: service, source: .listening(fd: fd, activated: false),
                                        configuration: configuration, logger: quietLogger)
        }
    }

    override var stopsListeningOnShutdown: Bool { false }

    override func quickRequest(_ id: UInt64) -> any SwiftProtobuf.Message { Stol_V1_ImportRequest.with { $0.id = id; $0.status = .init() } }
    override func requestWithoutBody(_ id: UInt64) -> any SwiftProtobuf.Message { Stol_V1_ImportRequest.with { $0.id = id } }
    override func sleepingRequest(_ id: UInt64) -> any SwiftProtobuf.Message { Stol_V1_ImportRequest.with { $0.id = id; $0.activate = .init() } }
    override func gatedRequest(_ id: UInt64) -> any SwiftProtobuf.Message { Stol_V1_ImportRequest.with { $0.id = id; $0.deleteReference = .init() } }
    /// A streamed answer: progress, then done.
    override func otherRequest(_ id: UInt64) -> any SwiftProtobuf.Message { importFile(id) }

    override func receiveAnswer(on socket: FrameSocket) throws -> ContractAnswer {
        let response = try socket.receive(Stol_V1_ImportResponse.self).message
        var isProgress = false, isDone = false
        if case .progress = response.result { isProgress = true }
        if case .done = response.result { isDone = true }
        return ContractAnswer(id: response.id, errorCode: response.errorCode,
                              errorDetails: response.protocolError?.details ?? [:],
                              isQuickAnswer: response == Stol_V1_ImportResponse.with { $0.id = response.id; $0.status = .init() },
                              isGatedAnswer: isDone, isProgress: isProgress)
    }

    override func expectReceiving(_ expected: TransportError, on socket: FrameSocket,
                                  file: StaticString = #filePath, line: UInt = #line) {
        TransportError.expect(expected, receiving: Stol_V1_ImportResponse.self, on: socket, file: file, line: line)
    }

    private func importFile(_ id: UInt64) -> Stol_V1_ImportRequest {
        .with { $0.id = id; $0.importFile = .init() }
    }

    private func temporaryFile(_ contents: String) throws -> Int32 {
        let path = try makeTemporaryDirectory(self) + "/upload.stol"
        try contents.write(toFile: path, atomically: false, encoding: .utf8)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        addTeardownBlock { close(fd) }
        return fd
    }

    // MARK: The contract (FramedServerContractTests), on this server

    func testQuickRequestIsAnsweredWithTheServicesAnswerAndEchoedID() throws { try contractQuickRequestIsAnsweredWithTheServicesAnswerAndEchoedID() }
    func testUndecodableFrameGetsMalformedFrameThenEOFWhileAnotherClientKeepsBeingAnswered() throws { try contractUndecodableFrameGetsMalformedFrameThenEOFWhileAnotherClientKeepsBeingAnswered() }
    func testOversizedLengthPrefixGetsFrameTooLargeThenClose() throws { try contractOversizedLengthPrefixGetsFrameTooLargeThenClose() }
    func testFrameAtTheRequestLimitIsAccepted() throws { try contractFrameAtTheRequestLimitIsAccepted() }
    func testRequestWithoutBodyIsAnsweredInvalidRequest_andTheConnectionStaysUsable() throws { try contractRequestWithoutBodyIsAnsweredInvalidRequest_andTheConnectionStaysUsable() }
    func testPipelinedRequestsOnOneConnectionAreAnsweredInOrderOneAtATime() throws { try contractPipelinedRequestsOnOneConnectionAreAnsweredInOrderOneAtATime() }
    func testAClientThatEndsItsStreamAfterPipelinedRequests_getsEveryAnswerInOrder_thenEOF() throws { try contractAClientThatEndsItsStreamAfterPipelinedRequests_getsEveryAnswerInOrder_thenEOF() }
    func testGracefulShutdownLetsTheInFlightRequestFinishAndBeAnsweredBeforeClosing() throws { try contractGracefulShutdownLetsTheInFlightRequestFinishAndBeAnsweredBeforeClosing() }
    func testCancellationAlsoLetsTheInFlightRequestFinishAndBeAnswered() throws { try contractCancellationAlsoLetsTheInFlightRequestFinishAndBeAnswered() }
    func testConnectionOverTheLimitGetsBusyThenClose() throws { try contractConnectionOverTheLimitGetsBusyThenClose() }
    func testOneUserOverItsPerUserLimit_getsBusyNamingTheLimit_whileTheServerHasRoom() throws { try contractOneUserOverItsPerUserLimit_getsBusyNamingTheLimit_whileTheServerHasRoom() }
    func testIdleExit_returnsOnceNoConnectionWasOpenForThePeriod_notWhileOneIs() throws { try contractIdleExit_returnsOnceNoConnectionWasOpenForThePeriod_notWhileOneIs() }
    func testATrickleOfBytes_isCutAtTheFrameDeadline_whileWholeFramesSlowlyAreServed() throws { try contractATrickleOfBytes_isCutAtTheFrameDeadline_whileWholeFramesSlowlyAreServed() }
    func testIdleConnectionIsClosedWithoutAnAnswer() throws { try contractIdleConnectionIsClosedWithoutAnAnswer() }

    // MARK: What only this server does

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

    /// After another connection sent an undecodable frame (and was closed), a
    /// descriptor still passes on this one.
    func testAfterAnotherConnectionsBadFrame_aDescriptorStillPassesWithARequest() throws {
        let server = try startServer()
        let bystander = try server.connect()
        let offender = try server.connect()
        try offender.sendRaw(undecodableFrame)
        XCTAssertEqual(try receiveAnswer(on: offender).errorCode, .malformedFrame)
        expectReceiving(.closedByPeer, on: offender)

        try bystander.send(importFile(2), passing: try temporaryFile("still here"))
        XCTAssertEqual(try bystander.receive(Stol_V1_ImportResponse.self).message.progress.stage, .received)
        XCTAssertTrue(try bystander.receive(Stol_V1_ImportResponse.self).message.done.status.referencePresent)
        XCTAssertEqual(events.events, ["read: still here"])
    }

    func testAcceptedConnectionSourceServesExactlyThatConnection() throws {
        // `Accept=yes` (the verifier): the server is handed one connected socket.
        let (serverEnd, clientEnd) = try makeSocketPair()
        let client = FrameSocket(descriptor: clientEnd, maximumIncomingFrameBytes: ProtocolLimits.maximumResponseFrameBytes,
                                 maximumOutgoingFrameBytes: ProtocolLimits.maximumRequestFrameBytes)
        client.setReceiveTimeout(.seconds(5))
        let service = TestImportService(events: events, gate: gate, gatedRequestStarted: gatedRequestStarted)
        let server = BlockingFramedServer(service: service, source: .accepted(fd: serverEnd),
                                          configuration: ServerConfiguration(name: "test"), logger: quietLogger)
        let done = DispatchSemaphore(value: 0)
        Task { try? await server.run(); done.signal() }

        assertServed(client, id: 1)
        client.close()
        XCTAssertEqual(done.wait(timeout: .now() + 5), .success, "run() returns when its one connection ends")
    }
}
