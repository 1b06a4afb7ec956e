import Foundation
import Glibc
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest

/// The blocking framed transport with SCM_RIGHTS, over real socketpairs.
final class FrameSocketTests: XCTestCase {
    private func request(_ id: UInt64, taxon: Int64 = 9689) -> Stol_V1_TaxonomyRequest {
        var request = Stol_V1_TaxonomyRequest()
        request.id = id
        request.getTaxon = .with { $0.taxonID = taxon }
        return request
    }

    /// A temporary file holding `contents`, opened read-only; closed after the test.
    private func openTemporaryFile(contents: String) throws -> Int32 {
        let directory = try makeTemporaryDirectory(self)
        let path = directory + "/payload"
        try contents.write(toFile: path, atomically: false, encoding: .utf8)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        addTeardownBlock { close(fd) }
        return fd
    }

    private func readAll(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        while true {
            let count = pread(fd, &chunk, chunk.count, off_t(bytes.count))
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func testFramesTravelInBothDirections() throws {
        let (client, server) = try makeFrameSocketPair()
        try client.send(request(1))
        try client.send(request(2, taxon: 42))
        XCTAssertEqual(try server.receive(Stol_V1_TaxonomyRequest.self).message, request(1))
        XCTAssertEqual(try server.receive(Stol_V1_TaxonomyRequest.self).message, request(2, taxon: 42))

        var response = Stol_V1_TaxonomyResponse()
        response.id = 2
        response.taxon = .with { $0.id = 42; $0.scientificName = "Answer" }
        try server.send(response)
        XCTAssertEqual(try client.receive(Stol_V1_TaxonomyResponse.self).message, response)
    }

    func testPassedFileDescriptorArrivesAndRefersToTheSameOpenFile() throws {
        let (client, server) = try makeFrameSocketPair()
        let fd = try openTemporaryFile(contents: "STOL\u{0}DB\u{1} payload")
        try client.send(request(7), passing: fd)
        let received = try server.receive(Stol_V1_TaxonomyRequest.self)
        XCTAssertEqual(received.message, request(7))
        let passed = try XCTUnwrap(received.fileDescriptor, "the descriptor did not arrive")
        XCTAssertNotEqual(passed.rawValue, fd, "a new descriptor number is installed in the receiver")
        // Same open file: same inode, and reading through it yields the content.
        var mine = stat(), theirs = stat()
        XCTAssertEqual(fstat(fd, &mine), 0)
        XCTAssertEqual(fstat(passed.rawValue, &theirs), 0)
        XCTAssertEqual(mine.st_ino, theirs.st_ino)
        XCTAssertEqual(mine.st_dev, theirs.st_dev)
        XCTAssertEqual(readAll(passed.rawValue), "STOL\u{0}DB\u{1} payload")
        // Installed close-on-exec, so a daemon never leaks it into children.
        XCTAssertNotEqual(fcntl(passed.rawValue, F_GETFD) & FD_CLOEXEC, 0)
        passed.close()
    }

    func testFrameWithoutDescriptorHasNone() throws {
        let (client, server) = try makeFrameSocketPair()
        try client.send(request(1))
        XCTAssertNil(try server.receive(Stol_V1_TaxonomyRequest.self).fileDescriptor)
    }

    /// Descriptors belong to the frame they were sent with, even when the receiver
    /// reads several frames in one recvmsg(2) (the kernel glues plain bytes and the
    /// bytes that carry the descriptor into one read).
    func testDescriptorStaysWithItsFrameWhenFramesArriveTogether() throws {
        let (client, server) = try makeFrameSocketPair()
        let fd = try openTemporaryFile(contents: "attached to the second frame")
        try client.send(request(1))
        try client.send(request(2), passing: fd)
        try client.send(request(3))

        let first = try server.receive(Stol_V1_TaxonomyRequest.self)
        XCTAssertEqual(first.message.id, 1)
        XCTAssertNil(first.fileDescriptor, "the descriptor was attributed to the frame before its own")
        let second = try server.receive(Stol_V1_TaxonomyRequest.self)
        XCTAssertEqual(second.message.id, 2)
        let passed = try XCTUnwrap(second.fileDescriptor, "the descriptor did not arrive with its frame")
        XCTAssertEqual(readAll(passed.rawValue), "attached to the second frame")
        let third = try server.receive(Stol_V1_TaxonomyRequest.self)
        XCTAssertEqual(third.message.id, 3)
        XCTAssertNil(third.fileDescriptor)
    }

    func testPeerClosingInTheMiddleOfAFrameIsATruncatedFrame() throws {
        let (client, server) = try makeFrameSocketPair()
        let whole = try frameBytes(request(1))
        try client.sendRaw(Array(whole.prefix(whole.count - 2)))
        client.close()
        TransportError.expect(.framing(.truncatedFrame(receivedBytes: whole.count - 2)),
                              receiving: Stol_V1_TaxonomyRequest.self, on: server)
    }

    func testPeerClosingBetweenFramesIsClosedByPeer() throws {
        let (client, server) = try makeFrameSocketPair()
        try client.send(request(1))
        client.close()
        XCTAssertEqual(try server.receive(Stol_V1_TaxonomyRequest.self).message.id, 1)
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyRequest.self, on: server)
    }

    func testOversizedIncomingLengthIsFrameTooLargeWithoutWaitingForTheBody() throws {
        let (client, server) = try makeFrameSocketPair(limit: 1024)
        // Only the prefix is sent and the connection stays open: the receiver must
        // decide from the prefix alone (otherwise it would time out instead).
        try client.sendRaw(lengthPrefix(1025))
        TransportError.expect(.framing(.frameTooLarge(length: 1025, limit: 1024)),
                              receiving: Stol_V1_TaxonomyRequest.self, on: server)
    }

    func testUndecodableFrameIsAFramingError() throws {
        let (client, server) = try makeFrameSocketPair()
        try client.sendRaw(undecodableFrame)
        TransportError.expect(.framing(.undecodableMessage("stol.v1.TaxonomyRequest")),
                              receiving: Stol_V1_TaxonomyRequest.self, on: server)
    }

    func testSendingAMessageOverTheOutgoingLimitFailsAndSendsNothing() throws {
        let (a, b) = try makeSocketPair()
        let small = FrameSocket(descriptor: a, maximumIncomingFrameBytes: 1024, maximumOutgoingFrameBytes: 4)
        let peer = FrameSocket(descriptor: b, maximumIncomingFrameBytes: 1024, maximumOutgoingFrameBytes: 1024)
        peer.setReceiveTimeout(.seconds(5))
        XCTAssertThrowsError(try small.send(request(1))) { error in
            guard case .encoding = error as? TransportError else {
                return XCTFail("expected an encoding error, got \(error)")
            }
        }
        small.close()
        TransportError.expect(.closedByPeer, receiving: Stol_V1_TaxonomyRequest.self, on: peer)
    }

    func testReceiveTimeoutIsReportedAsTimedOut() throws {
        let (client, server) = try makeFrameSocketPair()
        server.setReceiveTimeout(.milliseconds(20))
        // Half a frame, then silence from a peer that stays connected.
        try client.sendRaw(lengthPrefix(8) + [1, 2])
        TransportError.expect(.timedOut, receiving: Stol_V1_TaxonomyRequest.self, on: server)
        withExtendedLifetime(client) {}
    }

    func testHasBufferedFrameIsFalseUntilAWholeFrameIsIn() throws {
        let (client, server) = try makeFrameSocketPair()
        XCTAssertFalse(server.hasBufferedFrame)
        try client.send(request(1))
        try client.send(request(2))
        _ = try server.receive(Stol_V1_TaxonomyRequest.self)
        // Both frames were read by one recv; the second is now buffered.
        XCTAssertTrue(server.hasBufferedFrame)
        XCTAssertEqual(try server.receive(Stol_V1_TaxonomyRequest.self).message.id, 2)
        XCTAssertFalse(server.hasBufferedFrame)
    }
}
