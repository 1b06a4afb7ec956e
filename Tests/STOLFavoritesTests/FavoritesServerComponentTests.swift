import Dispatch
import Foundation
import Glibc
import STOLDaemon
import STOLFavorites
import STOLProtocol
import STOLServer
import STOLTestFixtures
import STOLTransport
import ServiceLifecycle
import XCTest

/// The daemon's wiring in-process: the socket bound through ``SocketActivation``'s
/// fallback, ``NIOFramedServer`` in a `ServiceGroup`, a real ``FrameSocket`` client.
/// The test thread blocks on the socket, so it runs synchronously (not on Swift's
/// cooperative pool, which the server needs).
final class FavoritesServerComponentTests: XCTestCase {
    func testServer_overItsUnixSocket_answersFramedRequestsThenStopsGracefully() throws {
        let directory = try makeTemporaryDirectory(self)
        let socketPath = directory + "/favorites.sock"
        let source = try SocketActivation.socket(named: "favorites", fallbackPath: socketPath, mode: 0o666,
                                                 logger: quietLogger)
        guard case .listening(let fd, activated: false) = source else { return XCTFail("\(source)") }
        XCTAssertEqual(permissions(of: socketPath), 0o666)

        let server = NIOFramedServer(service: FavoritesService(directory: directory + "/favorites", logger: quietLogger),
                                     listeningSocket: fd, configuration: ServerConfiguration(name: "favorites"),
                                     logger: quietLogger)
        let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], cancellationSignals: [],
                                 logger: quietLogger)
        let finished = DispatchSemaphore(value: 0)
        Task {
            try? await group.run()
            finished.signal()
        }

        let client = try FrameSocket.connect(path: socketPath)
        client.setReceiveTimeout(.seconds(10))
        func exchange(_ id: UInt64, _ body: Stol_V1_FavoritesRequest.OneOf_Body?) throws -> Stol_V1_FavoritesResponse {
            var request = Stol_V1_FavoritesRequest()
            request.id = id
            request.body = body
            try client.send(request)
            return try client.receive(Stol_V1_FavoritesResponse.self).message
        }
        var toggle = Stol_V1_ToggleFavorite()
        toggle.taxonID = 9606

        let toggled = try exchange(1, .toggle(toggle))
        XCTAssertEqual(toggled.id, 1)
        XCTAssertTrue(toggled.state.isFavorite)
        let empty = try exchange(2, nil)
        XCTAssertEqual(empty.protocolError?.code, .invalidRequest)
        let listed = try exchange(3, .list(Stol_V1_ListFavorites()))
        XCTAssertEqual(listed.id, 3)
        XCTAssertEqual(listed.list.entries.map(\.taxonID), [9606], "a typed error leaves the connection usable")
        XCTAssertEqual(permissions(of: directory + "/favorites/\(getuid()).sqlite"), 0o600,
                       "the file is named after the caller's uid from SO_PEERCRED")
        client.close()

        Task { await group.triggerGracefulShutdown() }
        XCTAssertEqual(finished.wait(timeout: .now() + 10), .success)
    }
}
