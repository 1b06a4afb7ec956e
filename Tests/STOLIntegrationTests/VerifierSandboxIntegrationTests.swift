import Foundation
import Glibc
import XCTest

/// The verifier sandboxes itself (Landlock, seccomp, no_new_privs) with nothing
/// around it — as under `make run`, where it runs as the same user as every other
/// daemon. From inside a real `stol-verifyd` serving a real import, a test-only
/// switch (`STOL_VERIFYD_SANDBOX_PROBE=1`) tries what the sandbox must forbid and
/// logs the outcomes; this test reads them.
final class VerifierSandboxIntegrationTests: XCTestCase {
    func testFromInsideTheRunningVerifier_liveDataSocketsExecAndSignalsAreOutOfReach() throws {
        let stack = try StackHarness()
        stack.environment["STOL_VERIFYD_SANDBOX_PROBE"] = "1"
        try stack.startImportStack()
        // Live data the verifier must not reach: an installed reference and a favourites file.
        let (file, _) = try stack.signedDatabase(name: "reference")
        XCTAssertEqual(try stack.client(["db", "import", file]).status, 0)
        try FileManager.default.createDirectory(atPath: stack.stateDirectory + "/favorites", withIntermediateDirectories: true)
        try Data("someone's favourites".utf8).write(to: URL(fileURLWithPath: stack.stateDirectory + "/favorites/1000.sqlite"))
        let before = stack.stateSnapshot()

        XCTAssertEqual(try stack.client(["db", "import", "--allow-downgrade", file]).status, 0,
                       "the sandboxed verifier still does its work")
        let log = stack.log(.verify)
        let line = try XCTUnwrap(log.split(separator: "\n").last { $0.contains("sandbox probe: ") }, log)
        let json = String(line[line.range(of: "sandbox probe: ")!.upperBound...])
        let start = try XCTUnwrap(json.firstIndex(of: "{"))
        let end = try XCTUnwrap(json.lastIndex(of: "}"))
        let results = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json[start...end].utf8)) as? [String: String])
        let sandbox = log.split(separator: "\n").last { $0.contains("sandbox") && !$0.contains("probe") } ?? ""
        if log.contains("sandbox without Landlock") {
            print("verifier sandbox: SKIPPED the file-system checks: this kernel has no Landlock (\(sandbox))")
        } else {
            XCTAssertTrue(sandbox.contains("Landlock ABI"), String(sandbox))
            for probe in ["open_state_directory", "open_databases_directory", "read_reference_database",
                          "write_state_directory", "write_tmp", "write_var_tmp", "read_etc_passwd"] {
                XCTAssertTrue(results[probe]?.hasPrefix("denied") ?? false, "\(probe): \(results[probe] ?? "not tried")")
            }
        }
        XCTAssertEqual(results["effective_capabilities"], "none", "the verifier runs as root here, without any capability")
        for probe in ["socket_af_inet", "socket_af_unix", "execve"] {
            XCTAssertTrue(results[probe]?.hasPrefix("denied") ?? false, "\(probe): \(results[probe] ?? "not tried")")
        }
        if sandbox.contains("ABI 6") || sandbox.contains("ABI 7") || sandbox.contains("ABI 8") {
            XCTAssertTrue(results["signal_parent"]?.hasPrefix("denied") ?? false, "signal_parent: \(results["signal_parent"] ?? "")")
        }
        XCTAssertEqual(stack.stateSnapshot(), before, "the verifier wrote nothing in the state directory")
        print("verifier sandbox probe: \(results.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))")
    }
}
