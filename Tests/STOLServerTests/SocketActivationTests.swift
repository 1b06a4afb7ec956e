import CSTOLSocket
import Foundation
import Glibc
import STOLDaemon
import STOLTransport
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

    /// Socket activation is read from the environment as `sd_listen_fds_with_names(3)`
    /// reads it (STOLDaemon links no libsystemd, so that the verifier does not).
    func testActivationVariablesAreReadAsLibsystemdReadsThem() throws {
        func passed(_ pid: String?, _ fds: String?, _ names: String? = nil) throws -> [String] {
            try SocketActivation.passedDescriptors(listenPID: pid, listenFDs: fds, listenFDNames: names, processID: 42)
                .map { "\($0.name)=\($0.fd)" }
        }
        XCTAssertEqual(try passed(nil, "1"), [], "no LISTEN_PID: nothing was passed")
        XCTAssertEqual(try passed("43", "1"), [], "another process's sockets")
        XCTAssertEqual(try passed("42", nil), [])
        XCTAssertEqual(try passed("42", "1"), ["unknown=3"])
        XCTAssertEqual(try passed("42", "2", "taxonomy:favorites"), ["taxonomy=3", "favorites=4"])
        XCTAssertEqual(try passed("42", "3", "a::c"), ["a=3", "=4", "c=5"])
        for (pid, fds, names) in [("x", "1", nil), ("0", "1", nil), ("-1", "1", nil), ("42", "0", nil), ("42", "-2", nil),
                                  ("42", "one", nil), ("42", "2147483647", nil), ("42", "2", "only-one"),
                                  ("42", "1", "a:b"), ("42", "1", "")] as [(String, String, String?)] {
            XCTAssertThrowsError(try passed(pid, fds, names), "\(pid) \(fds) \(names ?? "nil")") {
                XCTAssertEqual($0 as? SocketActivationError, .listenFDs(errno: EINVAL))
            }
        }
    }

    func testPassedSocketsUnsetsTheVariablesForChildren() throws {
        setenv("LISTEN_PID", String(getpid() + 1), 1)
        setenv("LISTEN_FDS", "1", 1)
        setenv("LISTEN_FDNAMES", "elsewhere", 1)
        XCTAssertTrue(try SocketActivation.passedSockets().isEmpty, "the sockets of another process are not ours")
        for variable in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
            XCTAssertNil(getenv(variable), "\(variable) is unset")
        }
    }
}
