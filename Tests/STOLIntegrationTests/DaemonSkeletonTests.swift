import Foundation
import Glibc
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest

/// The one daemon skeleton (`DaemonMain`) seen from outside: the same failure
/// exits with the same sysexits code from every daemon, each logs under
/// `stol.<name>`, and each `--help` documents its exit statuses.
final class DaemonSkeletonTests: XCTestCase {
    private static let servingDaemons = ["stol-taxonomyd", "stol-favoritesd", "stol-importd"]

    private func binary(_ name: String) -> String { StackHarness.binDirectory + "/" + name }

    /// Tried: each NIO daemon handed an accepted connection (`Accept=yes`, via the
    /// real `systemd-socket-activate --accept`) instead of a listening socket. Both
    /// refuse with EX_CONFIG (78) and say what to change (one exited 2, one 78 before).
    func testAcceptedConnectionInsteadOfListeningSocket_exitsEXCONFIGFromEveryNIODaemon() throws {
        for daemon in ["stol-taxonomyd", "stol-favoritesd"] {
            let directory = try StackHarness.makeDirectory(prefix: "stolskl")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let socket = directory + "/s.sock"
            let log = directory + "/log"
            var arguments = ["--accept", "-l", socket, binary(daemon), "--state-dir", directory]
            if daemon == "stol-taxonomyd" { arguments += ["--bundled", try StackHarness.database()] }
            let activator = try ChildProcess.spawn("/usr/bin/systemd-socket-activate", arguments, environment: [:],
                                                   stdout: .file(log))
            defer { kill(activator.pid, SIGTERM); _ = activator.wait(timeoutSeconds: 10) }
            let text = try connectAndWait(socket: socket, log: log, for: "died with code")
            XCTAssertTrue(text.contains("died with code 78"), "\(daemon): \(text)")
            XCTAssertTrue(text.contains("critical stol.\(daemon.dropFirst(5)):"), "\(daemon) logs under its label: \(text)")
            XCTAssertTrue(text.contains("Accept=no"), "\(daemon) says what to change: \(text)")
        }
    }

    /// Tried: a bundled database that does not exist. EX_NOINPUT (66), one sentence.
    func testMissingBundledDatabase_exitsEXNOINPUT() throws {
        let directory = try StackHarness.makeDirectory(prefix: "stolskl")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try StackHarness.run(binary("stol-taxonomyd"),
                                          ["--bundled", directory + "/missing.sqlite", "--socket", directory + "/t.sock",
                                           "--state-dir", directory])
        XCTAssertEqual(result.status, 66, result.stderr)
        XCTAssertTrue(result.stderr.contains("critical stol.taxonomyd: [STOLServer] cannot start: cannot open the bundled database"),
                      result.stderr)
    }

    /// Tried: a socket path that cannot be bound (its directory does not exist),
    /// for every serving daemon: EX_CONFIG (78) from each, under its own label.
    func testUnbindableSocket_exitsEXCONFIGFromEveryServingDaemon() throws {
        for daemon in Self.servingDaemons {
            let directory = try StackHarness.makeDirectory(prefix: "stolskl")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var arguments = ["--socket", directory + "/no/such/dir/s.sock", "--state-dir", directory]
            if daemon == "stol-taxonomyd" { arguments += ["--bundled", try StackHarness.database()] }
            let result = try StackHarness.run(binary(daemon), arguments)
            XCTAssertEqual(result.status, 78, "\(daemon): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("critical stol.\(daemon.dropFirst(5)):"), "\(daemon): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("cannot bind"), "\(daemon): \(result.stderr)")
        }
    }

    /// Tried: the verifier told to trust a user that does not exist: EX_CONFIG.
    func testVerifierWithUnknownAllowedUser_exitsEXCONFIG() throws {
        let directory = try StackHarness.makeDirectory(prefix: "stolskl")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try StackHarness.run(binary("stol-verifyd"),
                                          ["--allowed-user", "no-such-user-stol", "--socket", directory + "/v.sock"])
        XCTAssertEqual(result.status, 78, result.stderr)
        XCTAssertTrue(result.stderr.contains("critical stol.verifyd:"), result.stderr)
    }

    /// Every daemon's help names the shared options and its exit statuses.
    func testEveryDaemonsHelp_documentsSharedOptionsAndExitStatus() throws {
        for daemon in Self.servingDaemons + ["stol-verifyd"] {
            let result = try StackHarness.run(binary(daemon), ["--help"])
            XCTAssertEqual(result.status, 0, "\(daemon): \(result.stderr)")
            for expected in ["--state-dir", "--socket", "Exit status:", "78"] {
                XCTAssertTrue(result.stdout.contains(expected), "\(daemon) --help lacks \(expected)")
            }
        }
    }

    /// Connects once to `socket` (as soon as the activator listens), waits for the
    /// daemon it starts to close the connection, then for `marker` in `log`; returns the log.
    private func connectAndWait(socket path: String, log: String, for marker: String) throws -> String {
        var connection: FrameSocket?
        XCTAssertTrue(waitUntil(seconds: 20, interval: 0.02) { connection = try? FrameSocket.connect(path: path); return connection != nil },
                      "could not connect to \(path)")
        if let connection {
            connection.setReceiveTimeout(.seconds(20))
            _ = try? connection.receive(Stol_V1_TaxonomyResponse.self)  // ends when the daemon closes it (it exits)
            connection.close()
        }
        var text = ""
        waitUntil(seconds: 20, interval: 0.02) {
            text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.contains(marker)
        }
        return text
    }
}
