import Foundation
import Glibc
import STOLTestFixtures
import XCTest

/// The sd_notify protocol as systemd sees it: a datagram socket named by
/// NOTIFY_SOCKET receives READY=1, WATCHDOG=1 pings when WATCHDOG_USEC is set,
/// and STOPPING=1 on SIGTERM, after which the daemon exits 0.
final class SystemdNotifyTests: XCTestCase {
    /// A datagram socket at `path`, as systemd's NOTIFY_SOCKET, with a receive timeout.
    private func notifySocket(_ path: String, timeout: timeval = timeval(tv_sec: 5, tv_usec: 0)) -> Int32 {
        let notify = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(notify, 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(notify, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        var timeout = timeout
        setsockopt(notify, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return notify
    }

    private func receive(_ notify: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(notify, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : nil
    }

    func testDaemon_notifiesReadyWatchdogAndStopping_thenExitsZeroOnSIGTERM() throws {
        let directory = try StackHarness.makeDirectory(prefix: "stolntf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notifyPath = directory + "/notify"
        let notify = notifySocket(notifyPath)
        defer { close(notify) }

        let database = try StackHarness.database()
        let daemon = try ChildProcess.spawn(
            StackHarness.binDirectory + "/stol-taxonomyd",
            ["--socket", directory + "/taxonomy.sock", "--bundled", database, "--state-dir", directory],
            environment: ["NOTIFY_SOCKET": notifyPath, "WATCHDOG_USEC": "200000"],
            stdout: .file(directory + "/log"))

        func nextMessage() -> String? { receive(notify) }
        var messages: [String] = []
        while messages.filter({ $0.contains("WATCHDOG=1") }).count < 2, let message = nextMessage() {
            messages.append(message)
        }
        XCTAssertTrue(messages.first?.contains("READY=1") ?? false, "\(messages)")
        XCTAssertGreaterThanOrEqual(messages.filter { $0.contains("WATCHDOG=1") }.count, 2, "\(messages)")

        kill(daemon.pid, SIGTERM)
        var sawStopping = false
        while let message = nextMessage() {
            if message.contains("STOPPING=1") { sawStopping = true; break }
        }
        XCTAssertTrue(sawStopping)
        XCTAssertEqual(daemon.wait(timeoutSeconds: 20), 0,
                       (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "")
    }

    /// The watchdog is fed by the event loops: with one loop stuck (a test hook
    /// blocks it on SIGUSR2), the pings stop and systemd would restart the daemon.
    func testWatchdogPings_stopWhenAnEventLoopIsStuck() throws {
        try assertPingsStopWhenServingLoopHangs(
            "stol-taxonomyd", ["--bundled", try StackHarness.database()], socket: "taxonomy.sock")
    }

    /// The import coordinator's accept loop feeds the same watchdog: with that
    /// thread stuck, nothing pings although the process is alive.
    func testWatchdogPings_stopWhenTheImportAcceptLoopIsStuck() throws {
        try assertPingsStopWhenServingLoopHangs("stol-importd", [], socket: "import.sock")
    }

    /// Starts `daemon` under a 200 ms watchdog, sees it ping, blocks one of its
    /// serving loops with the SIGUSR2 test hook, and then sees no ping for five intervals.
    private func assertPingsStopWhenServingLoopHangs(_ daemon: String, _ arguments: [String], socket: String,
                                                     file: StaticString = #filePath, line: UInt = #line) throws {
        try StackHarness.requireTestHooks()
        let directory = try StackHarness.makeDirectory(prefix: "stolntf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notifyPath = directory + "/notify"
        let notify = notifySocket(notifyPath, timeout: timeval(tv_sec: 0, tv_usec: 100_000))
        defer { close(notify) }
        let process = try ChildProcess.spawn(
            StackHarness.binDirectory + "/" + daemon,
            ["--socket", directory + "/" + socket, "--state-dir", directory] + arguments,
            environment: ["NOTIFY_SOCKET": notifyPath, "WATCHDOG_USEC": "200000", "STOL_TEST_HANG_ON_SIGUSR2": "1"],
            stdout: .file(directory + "/log"))
        defer { kill(process.pid, SIGKILL); _ = process.wait(timeoutSeconds: 10) }
        var pings = 0
        let deadline = Date().addingTimeInterval(10)
        while pings < 3, Date() < deadline {
            if receive(notify)?.contains("WATCHDOG=1") == true { pings += 1 }
        }
        XCTAssertEqual(pings, 3, "the live daemon pings", file: file, line: line)
        kill(process.pid, SIGUSR2)
        // Wait for the hook to take the loop (it logs first), and then for one
        // heartbeat window (half the interval) so that the last stamp is stale.
        let log = directory + "/log"
        let hooked = Date().addingTimeInterval(10)
        while Date() < hooked, !(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("blocking a serving loop")) {
            _ = receive(notify)
        }
        let stale = Date().addingTimeInterval(0.15)
        while Date() < stale { _ = receive(notify) }
        var late = 0
        let quiet = Date().addingTimeInterval(1.0)
        while Date() < quiet {
            if receive(notify)?.contains("WATCHDOG=1") == true { late += 1 }
        }
        XCTAssertEqual(late, 0, "pings continued with a serving loop stuck", file: file, line: line)
        XCTAssertTrue(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("blocking a serving loop"),
                      file: file, line: line)
        XCTAssertEqual(kill(process.pid, 0), 0, "the daemon is alive: only its loop stopped", file: file, line: line)
    }

    /// The import coordinator (a thread per connection) pings from its accept loop:
    /// under the unit's WatchdogSec it is not killed while it waits for admins.
    func testImportCoordinator_pingsTheWatchdog() throws {
        let directory = try StackHarness.makeDirectory(prefix: "stolntf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notifyPath = directory + "/notify"
        let notify = notifySocket(notifyPath)
        defer { close(notify) }
        let daemon = try ChildProcess.spawn(
            StackHarness.binDirectory + "/stol-importd", ["--socket", directory + "/import.sock", "--state-dir", directory],
            environment: ["NOTIFY_SOCKET": notifyPath, "WATCHDOG_USEC": "200000"],
            stdout: .file(directory + "/log"))
        defer { kill(daemon.pid, SIGKILL); _ = daemon.wait(timeoutSeconds: 10) }
        var messages: [String] = []
        while messages.filter({ $0.contains("WATCHDOG=1") }).count < 3, let message = receive(notify) {
            messages.append(message)
        }
        XCTAssertTrue(messages.first?.contains("READY=1") ?? false, "\(messages)")
        XCTAssertGreaterThanOrEqual(messages.filter { $0.contains("WATCHDOG=1") }.count, 3, "\(messages)")
    }
}
