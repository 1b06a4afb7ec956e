import Foundation
import XCTest

/// The shipped unit files under a real systemd 252 as PID 1: `systemd/test-under-systemd.sh`
/// boots it in private namespaces on a throw-away copy of /, with the units, binaries,
/// database and users installed as a package would, and checks socket activation,
/// Type=notify readiness, the state directories, permissions, the per-connection
/// verifier, a clean stop and that the sandboxing does not kill the Swift daemons.
/// Skipped where systemd cannot run as PID 1 (not root, no namespaces, no overlayfs).
final class SystemdBootTests: XCTestCase {
    func testShippedUnits_bootUnderRealSystemd_andServeTheRealClient() throws {
        let script = StackHarness.repositoryRoot + "/systemd/test-under-systemd.sh"
        let database = try StackHarness.database()
        let directory = try StackHarness.makeDirectory(prefix: "stolboot")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/log"

        let hostPaths = ["/etc/passwd", "/etc/group", "/usr/share/stol", "/var/lib/stol", "/run/stol",
                         "/usr/local/bin/stol-taxonomyd", "/etc/systemd/system/stol-taxonomyd.socket"]
        let before = hostPaths.map(Self.fingerprint)

        // The script keeps its own 90 s deadline and cleans up before it; 150 s is the backstop.
        let child = try ChildProcess.spawn("/bin/bash", [script, StackHarness.binDirectory, database],
                                           environment: [:], stdout: log, stderr: log)
        let status = child.wait(timeoutSeconds: 150)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        if status == 77 {
            throw XCTSkip("systemd cannot run as PID 1 here: \(output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        XCTAssertEqual(status, 0, "systemd/test-under-systemd.sh failed (exit \(status)):\n\(output)")
        XCTAssertTrue(output.contains("all checks passed"), output)

        // Nothing it did inside its namespaces reached the host.
        XCTAssertEqual(hostPaths.map(Self.fingerprint), before, "the boot test changed the host")
    }

    /// Whether a path exists and, for a regular file, its contents.
    private static func fingerprint(_ path: String) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "\(path): absent" }
        if isDirectory.boolValue { return "\(path): directory" }
        let contents = FileManager.default.contents(atPath: path) ?? Data()
        return "\(path): " + String(decoding: contents, as: UTF8.self)
    }
}
