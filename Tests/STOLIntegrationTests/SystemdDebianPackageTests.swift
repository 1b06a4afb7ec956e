import Foundation
import STOLTestFixtures
import XCTest

/// The Debian packages under a real systemd 252 as PID 1, as an administrator and the
/// lab's users meet them and as piuparts checks them: `systemd/test-deb-under-systemd.sh`
/// boots a throw-away copy of / with no STOL installed, installs `stol` and `python3-stol`
/// with apt (offline), uses them as two users (each their own favourites, an administrator's
/// import of a signed reference, Python's `stol`), upgrades to a newer build (favourites,
/// the installed reference and the operator's configuration survive; the running daemons
/// restart on the new binaries), removes (state stays) and purges (state, configuration,
/// users and groups gone; no file left behind).
/// Skipped where systemd cannot run as PID 1 (not root, no namespaces, no overlayfs), and
/// when no packages were built (`make test` builds two versions into STOL_DEB_DIR).
final class SystemdDebianPackageTests: XCTestCase {
    func testDebianPackage_installsUpgradesRemovesAndPurges_underRealSystemd() throws {
        guard let debDirectory = ProcessInfo.processInfo.environment["STOL_DEB_DIR"] else {
            throw XCTSkip("no Debian packages to install: `make test` builds two versions (make deb-package) and sets STOL_DEB_DIR")
        }
        let script = StackHarness.repositoryRoot + "/systemd/test-deb-under-systemd.sh"
        let directory = try StackHarness.makeDirectory(prefix: "stoldeb")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/log"

        let hostPaths = ["/etc/passwd", "/etc/group", "/etc/systemd/system", "/etc/stol", "/usr/share/stol", "/usr/libexec/stol",
                         "/usr/lib/systemd/system/stol.target", "/var/lib/stol", "/run/stol", "/srv"]
        let before = hostPaths.map(Self.fingerprint)

        // The script keeps its own 420 s deadline and cleans up before it; 480 s is the backstop.
        let child = try ChildProcess.spawn("/bin/bash", [script, debDirectory], environment: [:], stdout: .file(log))
        let status = child.wait(timeoutSeconds: 480)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        if status == 77 {
            throw XCTSkip("systemd cannot run as PID 1 here: \(output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        XCTAssertEqual(status, 0, "systemd/test-deb-under-systemd.sh failed (exit \(status)):\n\(output)")
        XCTAssertTrue(output.contains("all checks passed"), output)
        print(output.split(separator: "\n").filter { $0.hasPrefix("[") }.joined(separator: "\n"))

        // Nothing it did inside its namespaces reached the host: no package installed there.
        XCTAssertEqual(hostPaths.map(Self.fingerprint), before, "the package boot test changed the host")
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
