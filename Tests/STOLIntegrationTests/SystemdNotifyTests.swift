import Foundation
import Glibc
import XCTest

/// The sd_notify protocol as systemd sees it: a datagram socket named by
/// NOTIFY_SOCKET receives READY=1, WATCHDOG=1 pings when WATCHDOG_USEC is set,
/// and STOPPING=1 on SIGTERM, after which the daemon exits 0.
final class SystemdNotifyTests: XCTestCase {
    func testDaemon_notifiesReadyWatchdogAndStopping_thenExitsZeroOnSIGTERM() throws {
        let directory = try StackHarness.makeDirectory(prefix: "stolntf")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notifyPath = directory + "/notify"
        let notify = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(notify, 0)
        defer { close(notify) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(notifyPath.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(notify, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(notify, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        let database = try StackHarness.database()
        let daemon = try ChildProcess.spawn(
            StackHarness.binDirectory + "/stol-taxonomyd",
            ["--socket", directory + "/taxonomy.sock", "--bundled", database, "--state-dir", directory],
            environment: ["NOTIFY_SOCKET": notifyPath, "WATCHDOG_USEC": "200000"],
            stdout: directory + "/log", stderr: directory + "/log")

        func nextMessage() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(notify, &buffer, buffer.count, 0)
            return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : nil
        }
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
}
