import CSTOLSocket
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import SwiftProtobuf
import XCTest

/// A daemon restarted under a client (a package upgrade, `systemctl restart`) closes the
/// connection it had accepted without answering. The client asks a request that is safe
/// to repeat again on a new connection; one that is not (a toggle) it never sends
/// twice, and says "service unavailable" (exit 5) instead of a bare failure. Played by a thread of the test on a real Unix socket: the
/// first connection is read and closed unanswered, the second is answered.
final class ServiceClientRetryTests: XCTestCase {
    final class RestartingService: @unchecked Sendable {
        let path: String
        private let listener: Int32
        private let lock = NSLock()
        private var received: [[UInt8]] = []

        init(directory: String, name: String, answer: @escaping @Sendable ([UInt8]) -> any SwiftProtobuf.Message) throws {
            path = directory + "/\(name).sock"
            listener = stol_bind_unix(path, 0o600, 8)
            guard listener >= 0 else { throw TestSupportError("bind \(path): \(String(cString: strerror(errno)))") }
            Thread.detachNewThread { [self] in
                for connection in 0..<2 {
                    let descriptor = accept(listener, nil, nil)
                    guard descriptor >= 0 else { break }
                    let socket = FrameSocket(descriptor: descriptor, maximumIncomingFrameBytes: 1 << 16,
                                             maximumOutgoingFrameBytes: 1 << 16)
                    if let (frame, _) = try? socket.receiveFrame() {
                        let body = Array(frame.readableBytesView)
                        lock.withLock { received.append(body) }
                        // The first connection: the old daemon exits without answering.
                        if connection == 1 { try? socket.send(answer(body)) }
                    }
                    socket.close()
                }
            }
        }

        deinit { close(listener) }

        var requests: [[UInt8]] { lock.withLock { received } }
    }

    var directory: String!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory.make(prefix: "stolretry")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func testARead_whoseConnectionIsClosedUnanswered_isAskedOnceMore_andAnswered() throws {
        let service = try RestartingService(directory: directory, name: "taxonomy") { body in
            let request = try! Stol_V1_TaxonomyRequest(serializedBytes: body)
            var response = Stol_V1_TaxonomyResponse()
            response.id = request.id
            response.taxon = .with { $0.id = request.getTaxon.taxonID; $0.scientificName = "Homo sapiens" }
            return response
        }
        let client = ServiceClient<Stol_V1_TaxonomyRequest, Stol_V1_TaxonomyResponse>(service: "taxonomy", path: service.path)
        let taxon = try client.ask(.with { $0.getTaxon = .with { $0.taxonID = 9606 } }, as: Stol_V1_Taxon.self)
        XCTAssertEqual(taxon.scientificName, "Homo sapiens")
        XCTAssertEqual(service.requests.count, 2, "sent once, and once more after the reset")
        let sent = try service.requests.map { bytes -> Stol_V1_TaxonomyRequest in
            var request = try Stol_V1_TaxonomyRequest(serializedBytes: bytes)
            request.id = 0  // each connection numbers its own requests
            return request
        }
        XCTAssertEqual(sent[0], sent[1], "the same request both times")
    }

    func testAToggle_whoseConnectionIsClosedUnanswered_isNotSentTwice_andExitsFive() throws {
        let service = try RestartingService(directory: directory, name: "favorites") { body in
            let request = try! Stol_V1_FavoritesRequest(serializedBytes: body)
            var response = Stol_V1_FavoritesResponse()
            response.id = request.id
            return response
        }
        let client = ServiceClient<Stol_V1_FavoritesRequest, Stol_V1_FavoritesResponse>(service: "favorites", path: service.path)
        XCTAssertThrowsError(try client.call(.with { $0.toggle = .with { $0.taxonID = 9606 } })) { error in
            guard let error = error as? ClientError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.exitCode.rawValue, 5, "\(error)")
        }
        XCTAssertEqual(service.requests.count, 1, "a toggle applied twice would undo itself")
    }

    func testWhichRequestsAreSafeToRepeat() {
        XCTAssertTrue(Stol_V1_TaxonomyRequest.with { $0.search = .init() }.isSafeToRepeat)
        XCTAssertTrue(Stol_V1_FavoritesRequest.with { $0.count = .init() }.isSafeToRepeat)
        XCTAssertTrue(Stol_V1_FavoritesRequest.with { $0.add = .init() }.isSafeToRepeat, "adding twice is adding once")
        XCTAssertFalse(Stol_V1_FavoritesRequest.with { $0.toggle = .init() }.isSafeToRepeat, "a second toggle undoes the first")
        XCTAssertFalse(Stol_V1_FavoritesRequest.with { $0.restore = .init() }.isSafeToRepeat)
        XCTAssertTrue(Stol_V1_ImportRequest.with { $0.status = .init() }.isSafeToRepeat)
        XCTAssertFalse(Stol_V1_ImportRequest.with { $0.activate = .init() }.isSafeToRepeat)
    }
}
