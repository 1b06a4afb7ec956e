import CSTOLSocket
import Foundation
import Glibc
import STOLServer
import STOLTestFixtures
import XCTest

/// The fallback when nothing was socket-activated: the daemon binds its own path.
final class SocketActivationTests: XCTestCase {
    override func setUp() {
        super.setUp()
        clearSocketActivationEnvironment()
    }

    private func bind(_ path: String, mode: mode_t) throws -> Int32 {
        let source = try SocketActivation.socket(named: "test", fallbackPath: path, mode: mode, logger: quietLogger)
        guard case .listening(let fd, let activated) = source else {
            XCTFail("expected a listening socket, got \(source)")
            throw POSIXError(.EINVAL)
        }
        XCTAssertFalse(activated)
        addTeardownBlock { close(fd) }
        return fd
    }

    private func mode(of path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFSOCK, "\(path) is not a socket")
        return info.st_mode & 0o7777
    }

    func testWithoutActivationNothingIsPassed() throws {
        XCTAssertTrue(try SocketActivation.passedSockets().isEmpty)
    }

    func testFallbackBindsWorldAccessibleModeExactly() throws {
        let path = try makeTemporaryDirectory(self) + "/taxonomy.sock"
        let fd = try bind(path, mode: 0o666)
        XCTAssertEqual(mode(of: path), 0o666)
        XCTAssertEqual(stol_socket_is_listening(fd), 1)
    }

    func testFallbackBindsOwnerOnlyModeExactly() throws {
        let path = try makeTemporaryDirectory(self) + "/verify.sock"
        _ = try bind(path, mode: 0o600)
        XCTAssertEqual(mode(of: path), 0o600)
    }

    func testFallbackBindsGroupModeExactlyDespiteTheUmask() throws {
        let path = try makeTemporaryDirectory(self) + "/import.sock"
        let previous = umask(0o077)
        defer { umask(previous) }
        _ = try bind(path, mode: 0o660)
        XCTAssertEqual(mode(of: path), 0o660)
    }

    func testFallbackReplacesAStaleSocketFileAndServesConnections() throws {
        let path = try makeTemporaryDirectory(self) + "/stale.sock"
        // A socket file left behind by a dead daemon: bound, then closed.
        let stale = stol_bind_unix(path, 0o600, 1)
        XCTAssertGreaterThanOrEqual(stale, 0)
        close(stale)
        XCTAssertEqual(stol_connect_unix(path), -1, "a stale socket refuses connections")
        XCTAssertEqual(errno, ECONNREFUSED)

        let fd = try bind(path, mode: 0o666)
        XCTAssertEqual(mode(of: path), 0o666)
        let client = stol_connect_unix(path)
        XCTAssertGreaterThanOrEqual(client, 0, "the new socket accepts connections")
        let accepted = stol_accept(fd)
        XCTAssertGreaterThanOrEqual(accepted, 0)
        close(client)
        close(accepted)
    }

    func testFallbackNeverReplacesARegularFile() throws {
        let path = try makeTemporaryDirectory(self) + "/not-a-socket"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        XCTAssertThrowsError(try SocketActivation.socket(named: "test", fallbackPath: path, mode: 0o666,
                                                         logger: quietLogger)) { error in
            XCTAssertEqual(error as? SocketActivationError, .bind(path: path, errno: EADDRINUSE))
        }
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data("keep me".utf8))
    }

    func testFallbackPathLongerThanSunPathIsABindError() throws {
        let path = "/tmp/" + String(repeating: "x", count: 120) + ".sock"
        XCTAssertThrowsError(try SocketActivation.socket(named: "test", fallbackPath: path, mode: 0o600,
                                                         logger: quietLogger)) { error in
            XCTAssertEqual(error as? SocketActivationError, .bind(path: path, errno: ENAMETOOLONG))
        }
    }
}
