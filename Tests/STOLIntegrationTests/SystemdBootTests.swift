import Foundation
import STOLTestFixtures
import XCTest

/// The installed system under a real systemd 252 as PID 1: `systemd/test-under-systemd.sh`
/// boots it in private namespaces on a throw-away copy of / with the tree `make
/// install-files DESTDIR=` made layered in and the Swift toolchain hidden, and checks
/// it as the users of a lab machine would: socket activation, one identity per
/// daemon, favourites, imports, the sandbox tried from inside each daemon, idle
/// exits, kills, the watchdog and the per-user connection limit.
/// Skipped where systemd cannot run as PID 1 (not root, no namespaces, no overlayfs),
/// and when no installed tree was staged (`make test` stages one).
final class SystemdBootTests: XCTestCase {
    func testInstalledSystem_bootsUnderRealSystemd_andHoldsAsTheLabsUsersUseIt() throws {
        guard let installRoot = ProcessInfo.processInfo.environment["STOL_INSTALL_ROOT"] else {
            throw XCTSkip("no installed tree to boot: `make test` stages one (make install-files DESTDIR=…) and sets STOL_INSTALL_ROOT")
        }
        let script = StackHarness.repositoryRoot + "/systemd/test-under-systemd.sh"
        let directory = try StackHarness.makeDirectory(prefix: "stolboot")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/log"

        let hostPaths = ["/etc/passwd", "/etc/group", "/etc/systemd/system", "/usr/share/stol", "/usr/libexec/stol",
                         "/usr/lib/systemd/system/stol.target", "/var/lib/stol", "/run/stol", "/srv"]
        let before = hostPaths.map(Self.fingerprint)

        // The script keeps its own 180 s deadline and cleans up before it; 240 s is the backstop.
        let child = try ChildProcess.spawn("/bin/bash", [script, installRoot], environment: [:], stdout: .file(log))
        let status = child.wait(timeoutSeconds: 240)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        if status == 77 {
            throw XCTSkip("systemd cannot run as PID 1 here: \(output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        XCTAssertEqual(status, 0, "systemd/test-under-systemd.sh failed (exit \(status)):\n\(output)")
        XCTAssertTrue(output.contains("all checks passed"), output)
        print(output.split(separator: "\n").filter { $0.hasPrefix("[") || $0.hasPrefix("    stol") }.joined(separator: "\n"))

        // Nothing it did inside its namespaces reached the host.
        XCTAssertEqual(hostPaths.map(Self.fingerprint), before, "the boot test changed the host")
    }

    /// Whether a path exists and, for a regular file, its contents; for a directory, its entries.
    private static func fingerprint(_ path: String) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "\(path): absent" }
        if isDirectory.boolValue {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: path).sorted()) ?? []
            return "\(path): directory \(entries)"
        }
        let contents = FileManager.default.contents(atPath: path) ?? Data()
        return "\(path): " + String(decoding: contents, as: UTF8.self)
    }
}
