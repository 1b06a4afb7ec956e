import Foundation
import Glibc
import XCTest

/// The daemons sandbox themselves, with nothing around them — as under `make run`,
/// where every daemon runs as the same user (root here). From inside real daemons
/// serving real requests, a test-only switch (`STOL_TEST_SANDBOX_PROBE=1`) tries
/// what the sandbox must forbid and logs the outcomes; these tests read them.
/// (Under systemd the units add their own walls: `systemd/test-under-systemd.sh`
/// probes them the same way.)
final class SandboxIntegrationTests: XCTestCase {
    /// The `sandbox probe: {…}` line a daemon logged.
    private func probe(_ log: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: String] {
        let text = try XCTUnwrap(log.split(separator: "\n").last { $0.contains("sandbox probe: ") }, log, file: file, line: line)
        let json = String(text[text.range(of: "sandbox probe: ")!.upperBound...])
        let start = try XCTUnwrap(json.firstIndex(of: "{"), file: file, line: line)
        let end = try XCTUnwrap(json.lastIndex(of: "}"), file: file, line: line)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json[start...end].utf8)) as? [String: String],
                             file: file, line: line)
    }

    private func assertDenied(_ results: [String: String], _ keys: [String], _ who: String,
                              file: StaticString = #filePath, line: UInt = #line) {
        for key in keys {
            XCTAssertTrue(results[key]?.hasPrefix("denied") ?? false, "\(who) \(key): \(results[key] ?? "not tried")",
                          file: file, line: line)
        }
    }

    func testFromInsideTheRunningVerifier_liveDataSocketsExecAndSignalsAreOutOfReach() throws {
        try StackHarness.requireTestHooks()
        let stack = try StackHarness()
        stack.environment["STOL_TEST_SANDBOX_PROBE"] = "1"
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
        let results = try probe(log)
        let sandbox = log.split(separator: "\n").last { $0.contains("sandbox") && !$0.contains("probe") } ?? ""
        if log.contains("sandbox without Landlock") {
            print("verifier sandbox: SKIPPED the file-system checks: this kernel has no Landlock (\(sandbox))")
        } else {
            XCTAssertTrue(sandbox.contains("Landlock ABI"), String(sandbox))
            assertDenied(results, ["open_state_directory", "list_favorites", "read_reference_database", "write_databases",
                                   "write_favorites", "write_state_directory", "write_etc", "write_usr_share", "write_tmp",
                                   "write_var_tmp", "read_etc_shadow", "list_databases", "write_dev_shm"], "verifier")
        }
        XCTAssertEqual(results["effective_capabilities"], "none", "the verifier runs as root here, without any capability")
        assertDenied(results, ["socket_af_inet", "socket_af_inet6", "socket_af_unix", "execve"], "verifier")
        if sandbox.contains("ABI 6") || sandbox.contains("ABI 7") || sandbox.contains("ABI 8") {
            assertDenied(results, ["signal_parent"], "verifier")
        }
        XCTAssertEqual(stack.stateSnapshot(), before, "the verifier wrote nothing in the state directory")
        print("verifier sandbox probe: \(results.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))")
    }

    /// The long-running daemons keep their files (their units confine those) but
    /// filter themselves: no program can be run and no socket but a Unix one opened.
    func testTheOtherDaemons_cannotRunProgramsOrOpenNetworkSockets_andStillServe() throws {
        try StackHarness.requireTestHooks()
        let stack = try StackHarness()
        stack.environment["STOL_TEST_SANDBOX_PROBE"] = "1"
        try stack.startImportStack()
        try stack.start(.favorites)
        XCTAssertEqual(try stack.client(["search", "lion"]).status, 0)
        XCTAssertEqual(try stack.client(["fav", "add", "9689"]).status, 0)
        XCTAssertEqual(try stack.client(["db", "status"]).status, 0)
        let (file, _) = try stack.signedDatabase(name: "reference")
        XCTAssertEqual(try stack.client(["db", "import", file]).status, 0, "importd still reaches the verifier (AF_UNIX)")
        for daemon in [StackHarness.Daemon.taxonomy, .favorites, .import] {
            let results = try probe(stack.log(daemon))
            assertDenied(results, ["socket_af_inet", "socket_af_inet6", "execve"], daemon.binary)
            XCTAssertEqual(results["socket_af_unix"], "allowed", daemon.binary)
            print("\(daemon.binary) sandbox probe: socket_af_inet=\(results["socket_af_inet"] ?? ""), execve=\(results["execve"] ?? "")")
        }
    }
}
