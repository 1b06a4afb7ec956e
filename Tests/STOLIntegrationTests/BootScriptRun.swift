import Foundation
import STOLTestFixtures
import XCTest

/// One of the systemd boot test scripts (`systemd/test-under-systemd.sh`,
/// `systemd/test-deb-under-systemd.sh`) run as their XCTest wrappers run them: exit 77
/// is a skip with the script's reason, anything but 0 and "all checks passed" a
/// failure with its whole log, and the host paths it could have touched are
/// compared before and after, since everything it does must stay inside its namespaces.
struct BootScriptRun {
    let script: String
    let argument: String
    /// The script keeps its own deadline and cleans up before it; this is the backstop.
    let timeoutSeconds: Double
    let hostPaths: [String]

    /// The progress lines the script printed (those starting with "[").
    @discardableResult
    func run(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let directory = try StackHarness.makeDirectory(prefix: "stolboot")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/log"
        let before = hostPaths.map(Self.fingerprint)

        let child = try ChildProcess.spawn("/bin/bash", [StackHarness.repositoryRoot + "/systemd/" + script, argument],
                                           environment: [:], stdout: .file(log))
        let status = child.wait(timeoutSeconds: timeoutSeconds)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        if status == 77 {
            // The script's one SKIPPED line says why (Tests/tools/expected-skips.tsv names the reasons make test expects).
            let reason = output.split(separator: "\n").first { $0.contains(": SKIPPED: ") }.map(String.init) ?? output
            throw XCTSkip("systemd cannot run as PID 1 here: \(reason.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        XCTAssertEqual(status, 0, "systemd/\(script) failed (exit \(status)):\n\(output)", file: file, line: line)
        XCTAssertTrue(output.contains("all checks passed"), output, file: file, line: line)
        XCTAssertEqual(hostPaths.map(Self.fingerprint), before, "systemd/\(script) changed the host", file: file, line: line)
        return output.split(separator: "\n").filter { $0.hasPrefix("[") || $0.hasPrefix("    stol") }.joined(separator: "\n")
    }

    /// Whether a path exists and, for a regular file, its contents; for a directory, its entries.
    static func fingerprint(_ path: String) -> String {
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
