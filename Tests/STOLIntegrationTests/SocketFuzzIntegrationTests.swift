import Foundation
import Glibc
import STOLTestFixtures
import XCTest

/// The socket fuzzer (`Tests/tools/socket_fuzzer.py`, written from PROTOCOL.md
/// alone) against the real daemons under the real `systemd-socket-activate`:
/// mutated `protocol/vectors` frames — bit flips, truncations, length-prefix
/// lies, duplicated and spliced frames, huge lengths, random bodies — with a fixed
/// seed and a bounded count. After every batch the fuzzer checks that the daemon
/// is the same process, answers a valid request and stays within 64 MiB of its
/// starting memory; every answer must be well-formed, never INTERNAL. The tests
/// replay the streams it once found (`Tests/fuzz/regressions/socket-<daemon>/`),
/// assert what it checked, then ask the same process with the real client.
final class SocketFuzzIntegrationTests: XCTestCase {
    var stack: StackHarness!
    static let fuzzer = StackHarness.repositoryRoot + "/Tests/tools/socket_fuzzer.py"
    static let cases = 600
    static let batch = 50

    override func setUpWithError() throws {
        stack = try StackHarness()
        try requireExecutable("/usr/bin/python3", debianPackage: "python3")
    }

    override func tearDown() {
        stack = nil
    }

    func testTaxonomyDaemon_underMutatedVectorFrames_staysTheSameProcess_answering_withinItsMemoryBound() throws {
        try fuzz(.taxonomy, thenAsk: ["status"])
    }

    func testFavoritesDaemon_underMutatedVectorFrames_staysTheSameProcess_answering_withinItsMemoryBound() throws {
        try fuzz(.favorites, thenAsk: ["fav", "count"])
    }

    func testImportDaemon_underMutatedVectorFrames_staysTheSameProcess_answering_withinItsMemoryBound() throws {
        try fuzz(.import, thenAsk: ["db", "status"])
    }

    private func fuzz(_ daemon: StackHarness.Daemon, thenAsk question: [String],
                      file: StaticString = #filePath, line: UInt = #line) throws {
        try stack.start(daemon)
        let pid = try XCTUnwrap(stack.pid(daemon))
        // First what the fuzzer once found against this daemon (Tests/fuzz/regressions/socket-<daemon>/),
        // each stream sent again at the fresh daemon and checked as in a run.
        let regressions = StackHarness.repositoryRoot + "/Tests/fuzz/regressions/socket-\(daemon.rawValue)"
        let files = (try? FileManager.default.contentsOfDirectory(atPath: regressions))?.filter { $0.hasSuffix(".hex") }.sorted() ?? []
        for name in files {
            let replay = try StackHarness.run("/usr/bin/python3", [
                Self.fuzzer, stack.socketPath(daemon), "--replay", regressions + "/" + name, "--pid", "\(pid)"])
            XCTAssertEqual(replay.status, 0, "\(name): \(replay.stderr)", file: file, line: line)
        }
        let result = try StackHarness.run("/usr/bin/python3", [
            Self.fuzzer, stack.socketPath(daemon), "--seed", "20261123", "--cases", "\(Self.cases)",
            "--batch", "\(Self.batch)", "--pid", "\(pid)", "--max-rss-growth-mb", "64"])
        XCTAssertEqual(result.status, 0, "the fuzzer found something: \(result.stderr)", file: file, line: line)
        let lastLine = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: Any],
                                    "no summary: \(result.stdout) \(result.stderr)", file: file, line: line)
        XCTAssertEqual(summary["ok"] as? Bool, true, "\(summary)", file: file, line: line)
        XCTAssertEqual(summary["cases"] as? Int, Self.cases, file: file, line: line)
        XCTAssertEqual(summary["probes"] as? Int, Self.cases / Self.batch, "a probe after every batch", file: file, line: line)
        XCTAssertEqual(summary["pid"] as? Int, Int(pid), file: file, line: line)
        XCTAssertEqual(summary["same_process"] as? Bool, true, file: file, line: line)
        let baseline = summary["rss_baseline_kib"] as? Int ?? 0
        let peak = summary["rss_peak_kib"] as? Int ?? Int.max
        XCTAssertLessThan(peak - baseline, 64 * 1024, "the daemon grew by \((peak - baseline) / 1024) MiB", file: file, line: line)
        // The mutations reached both framing checks, and nothing was INTERNAL.
        let codes = summary["error_codes"] as? [String: Int] ?? [:]
        XCTAssertGreaterThan(codes["FRAME_TOO_LARGE"] ?? 0, 0, "\(codes)", file: file, line: line)
        XCTAssertGreaterThan(codes["MALFORMED_FRAME"] ?? 0, 0, "\(codes)", file: file, line: line)
        XCTAssertNil(codes["INTERNAL"], file: file, line: line)
        XCTAssertGreaterThan(summary["answers"] as? Int ?? 0, Self.cases, "answers to the valid frames among the cases",
                             file: file, line: line)
        // Independently of the fuzzer: the same process, still answering the real client.
        XCTAssertEqual(kill(pid, 0), 0, "\(daemon.binary) is gone", file: file, line: line)
        let answer = try stack.client(question)
        XCTAssertEqual(answer.status, 0, "\(daemon.binary) no longer answers: \(answer.stderr)", file: file, line: line)
        print("socket fuzz: \(daemon.binary): \(Self.cases) mutated streams, \(summary["answers"] ?? 0) answers, " +
              "errors \(codes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")); " +
              "RSS \(baseline / 1024) → \(peak / 1024) MiB; still pid \(pid)")
    }
}
