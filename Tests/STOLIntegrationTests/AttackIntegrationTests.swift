import Foundation
import Glibc
import STOLProtocol
import STOLServer
import STOLTestFixtures
import STOLTransport
import SwiftProtobuf
import XCTest

/// One user of the shared machine attacking the others through the real daemons,
/// with a hostile client written from `protocol/PROTOCOL.md` alone
/// (`Tests/tools/hostile_client.py`, run as another uid with setpriv when the
/// tests run as root). Each test names the attack, asserts the bound it used to
/// break, and that another user's requests are still answered meanwhile.
final class AttackIntegrationTests: XCTestCase {
    var stack: StackHarness!
    static let attacker: UInt32 = 60010
    static let bystander: UInt32 = 60011
    static let hostileClient = StackHarness.repositoryRoot + "/Tests/tools/hostile_client.py"

    override func setUpWithError() throws {
        stack = try StackHarness()
        try requireExecutable("/usr/bin/python3", debianPackage: "python3")
    }

    override func tearDown() {
        stack = nil
    }

    /// The hostile client, as the attacker's uid when root, started in the background.
    private func attack(_ arguments: [String], output: String) throws -> ChildProcess {
        var command = ["/usr/bin/python3", Self.hostileClient] + arguments
        if StackHarness.isRoot {
            command = ["/usr/bin/setpriv", "--reuid=\(Self.attacker)", "--regid=\(Self.attacker)", "--clear-groups"] + command
        }
        return try ChildProcess.spawn(command[0], Array(command.dropFirst()), environment: [:], stdout: .file(output))
    }

    /// The real client as the bystander's uid (when root): it must be answered.
    private func bystanderSearch(file: StaticString = #filePath, line: UInt = #line) throws -> Double {
        let started = Date()
        let result = try stack.client(["search", "lion", "--timeout", "20"], uid: StackHarness.isRoot ? Self.bystander : nil)
        XCTAssertEqual(result.status, 0, "the bystander was not served: \(result.stderr)", file: file, line: line)
        return Date().timeIntervalSince(started)
    }

    private func residentKiB(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
    }

    private func openDescriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    private func waitForOutput(_ path: String) -> String {
        var text = ""
        waitUntil(seconds: 60) {
            text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return !text.isEmpty
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func hex(_ message: some SwiftProtobuf.Message) throws -> String {
        let bytes: [UInt8] = try message.serializedBytes()
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// Pipelining requests for large answers without reading any of them used to
    /// grow the daemon by every answer (1.36 GiB in 30 s); now it stops reading
    /// the attacker at 1 MiB of unsent answers and cuts it after 30 s unread.
    func testPipeliningWithoutReading_keepsTheDaemonWithin64MiB_andOthersServed() throws {
        try stack.start(.taxonomy)
        _ = try bystanderSearch()  // warm: the in-memory indexes are built
        let daemon = try XCTUnwrap(stack.pid(.taxonomy))
        let baseline = residentKiB(daemon)
        // 1,000 lineages per answer, about 300 KB each; 400 of them would be 120 MB.
        var batch = Stol_V1_LineageBatchRequest()
        batch.queries = Array(repeating: "9689", count: 1000)
        var request = Stol_V1_TaxonomyRequest()
        request.id = 1
        request.lineageBatch = batch
        let output = stack.root + "/pipeline.out"
        let attacker = try attack(["pipeline", stack.socketPath(.taxonomy), try hex(request), "400", "6"], output: output)
        XCTAssertTrue(waitForOutput(output).hasPrefix("sent "), "the attacker did not run")
        var latencies: [Double] = []
        var peak = 0
        for _ in 0..<5 {
            latencies.append(try bystanderSearch())
            peak = max(peak, residentKiB(daemon))
        }
        _ = attacker.wait(timeoutSeconds: 30)
        let grown = peak - baseline
        XCTAssertLessThan(grown, 64 * 1024, "the daemon grew by \(grown / 1024) MiB under the attack")
        print("attack: pipelining 400 large answers without reading (\((try? String(contentsOfFile: output, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "")): " +
              "taxonomyd \(baseline / 1024) → \(peak / 1024) MiB; the bystander's searches took " +
              latencies.map { String(format: "%.0f ms", $0 * 1000) }.joined(separator: ", "))
    }

    /// Small requests pipelined without reading: the high water mark counts an
    /// answer's bytes, and 16-byte `fav count` answers queued by the million under it
    /// (64 connections of one user: favoritesd 236 MiB). Now a connection starts no
    /// request while 16 of its answers wait unsent (`FramedRequestHandler.maximumUnsentAnswers`).
    func testPipeliningSmallRequestsWithoutReading_queuesFewAnswers_andOthersServed() throws {
        try stack.start(.favorites)
        XCTAssertEqual(try stack.client(["fav", "count"], uid: StackHarness.isRoot ? Self.bystander : nil).status, 0)
        let daemon = try XCTUnwrap(stack.pid(.favorites))
        let baseline = residentKiB(daemon)
        var request = Stol_V1_FavoritesRequest()
        request.id = 1
        request.count = Stol_V1_CountFavorites()
        let output = stack.root + "/small.out"
        // 32 connections × 200,000 frames of 10 bytes for 12 s, never read: without the
        // cap a debug build queues about 200,000 answers, 20 MiB; with it, 512.
        let attacker = try attack(["pipeline", stack.socketPath(.favorites), try hex(request), "200000", "12", "32"],
                                  output: output)
        let sent = waitForOutput(output)
        XCTAssertTrue(sent.hasPrefix("sent "), "the attacker did not run")
        let count = try stack.client(["fav", "count"], uid: StackHarness.isRoot ? Self.bystander : nil)
        XCTAssertEqual(count.status, 0, "the bystander was not served: \(count.stderr)")
        // The daemon's memory read while the attacker keeps its connections (12 s in all).
        var peak = residentKiB(daemon)
        var status: Int32 = 0
        XCTAssertTrue(waitUntil(seconds: 30, interval: 0.05) {
            peak = max(peak, residentKiB(daemon))
            return waitpid(attacker.pid, &status, WNOHANG) == attacker.pid
        }, "the attacker did not end")
        let grown = peak - baseline
        XCTAssertLessThan(grown, 8 * 1024, "favoritesd grew by \(grown / 1024) MiB under the attack")
        print("attack: pipelining small requests on 32 connections without reading (\(sent)): favoritesd \(baseline / 1024) → \(peak / 1024) MiB")
    }

    /// One user used to be able to hold all 512 connections of a daemon.
    func testOneUserHoldingConnections_getsAtMost64_andOthersAreServed() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to play two users with setpriv")
        try stack.start(.favorites)
        let output = stack.root + "/hold.out"
        let holder = try attack(["hold", stack.socketPath(.favorites), "600", "5"], output: output)
        XCTAssertEqual(waitForOutput(output), "kept 64 refused 536")
        let count = try stack.client(["fav", "count"], uid: Self.bystander)
        XCTAssertEqual(count.status, 0, "the bystander was refused: \(count.stderr)")
        // The attacker's own next connection is refused, saying why.
        let refused = try stack.client(["fav", "count"], uid: Self.attacker)
        XCTAssertEqual(refused.status, 5, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("BUSY") && refused.stderr.contains("per user"), refused.stderr)
        _ = holder.wait(timeoutSeconds: 30)
        print("attack: one user opened 600 connections to favoritesd: 64 kept, 536 refused; another user was served")
    }

    /// A frame trickled a byte at a time used to hold its connection (and slot) for
    /// ever: the idle timer restarted on every byte. Now the whole frame has a
    /// deadline from its first byte (here `--frame-deadline 2`; 30 s by default).
    func testTricklingAFrame_isCutAtTheFrameDeadline_andOthersAreServed() throws {
        try stack.start(.taxonomy, extraArguments: ["--frame-deadline", "2"])
        let output = stack.root + "/trickle.out"
        // A byte every 0.2 s never lets 2 s of silence pass; 60 s is far past the deadline.
        let trickler = try attack(["trickle", stack.socketPath(.taxonomy), "0.2", "60"], output: output)
        _ = try bystanderSearch()
        let verdict = waitForOutput(output)
        XCTAssertTrue(verdict.hasPrefix("closed after"), "the trickled frame was never cut: \(verdict)")
        let words = verdict.split(separator: " ")  // "closed after N bytes"
        let bytes = words.count == 4 ? Int(words[2]) ?? .max : .max
        XCTAssertLessThan(bytes, 999, "the trickler sent its whole frame: \(verdict)")
        _ = trickler.wait(timeoutSeconds: 30)
        _ = try bystanderSearch()
        print("attack: a frame trickled a byte every 0.2 s was cut \(verdict.dropFirst(7)); another user was served")
    }

    /// A client that pipelines forty searches and leaves at once: its work goes with
    /// it. The search in flight is cancelled and those it queued behind it never run,
    /// so the daemon has answered at most two of them (counted in the caller's own
    /// diagnostics) once the same user's next request, which its lane runs after
    /// whatever was left, is answered. Before, all forty ran.
    ///
    /// The client closes right after sending, not after reading an answer: what is
    /// pinned is the daemon's reaction to the close (it sees the hang-up, `EPOLLHUP`,
    /// at its next turn), not how quickly a loaded test process gets from its read to
    /// its close (a reader descheduled there for a few milliseconds let searches run
    /// that were rightly started while the client was still connected).
    func testAClientThatLeavesMidPipeline_leavesNoWorkBehind() throws {
        try stack.start(.taxonomy)
        let socket = try FrameSocket.connect(path: stack.socketPath(.taxonomy))
        var burst: [UInt8] = []
        for id in 1...40 {
            burst += try frameBytes(Stol_V1_TaxonomyRequest.with { $0.id = UInt64(id); $0.search = .with { $0.query = "lion" } })
        }
        try socket.sendRaw(burst)
        socket.close()
        // The same user's next lookup runs after what was left on its lane.
        XCTAssertEqual(try stack.client(["search", "tiger", "--timeout", "20"]).status, 0)
        let report = try stack.client(["diagnostics"]).stdout
        let searches = report.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("search:") }
            .flatMap { Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) } ?? 0
        XCTAssertGreaterThanOrEqual(searches, 1, "the last search is counted: \(report)")
        XCTAssertLessThanOrEqual(searches, 3, "searches queued by a client that left were run: \(report)")
    }

    /// 1,000 connections at once from 16 users: the daemon keeps at most 512, its
    /// descriptors and memory stay bounded, and a 17th user is still served (the
    /// per-user limit alone would have let the 16 hold every slot).
    func testAThousandConnectionsAtOnce_fromSixteenUsers_staysBounded() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to play sixteen users with setpriv")
        try stack.start(.taxonomy)
        _ = try bystanderSearch()
        let daemon = try XCTUnwrap(stack.pid(.taxonomy))
        let baseline = (rss: residentKiB(daemon), fds: openDescriptors(daemon))
        var holders: [(ChildProcess, String)] = []
        for user in 0..<16 {
            let output = stack.root + "/hold-\(user).out"
            let command = ["--reuid=\(61000 + user)", "--regid=\(61000 + user)", "--clear-groups", "/usr/bin/python3",
                           Self.hostileClient, "hold", stack.socketPath(.taxonomy), "63", "6"]
            holders.append((try ChildProcess.spawn("/usr/bin/setpriv", command, environment: [:], stdout: .file(output)), output))
        }
        for (_, output) in holders {
            // A holder's own count is what it saw when its refusals stopped: a later
            // user's connection may still close one of them (the daemon makes room by
            // closing the oldest of a user holding the most), so only a user's own
            // limit is checked here; what the daemon keeps is its descriptors, below.
            let line = waitForOutput(output)
            let kept = Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
            XCTAssertTrue((0...ProtocolLimits.maximumConnectionsPerUser).contains(kept), "one user kept \(line)")
        }
        let during = (rss: residentKiB(daemon), fds: openDescriptors(daemon))
        XCTAssertLessThanOrEqual(during.fds - baseline.fds, ProtocolLimits.maximumConnections + 8, "the daemon kept more than its limit")
        XCTAssertLessThan(during.rss - baseline.rss, 64 * 1024)
        // The daemon is full (512), but the 17th user holds none: the oldest connection
        // of a user holding the most is closed for it, and it is served.
        let result = try stack.client(["search", "lion", "--timeout", "20"], uid: Self.bystander)
        XCTAssertEqual(result.status, 0, "a user with no connection was locked out: \(result.stderr)")
        holders.forEach { _ = $0.0.wait(timeoutSeconds: 30) }
        _ = try bystanderSearch()
        print("attack: 1,008 connections from 16 users; taxonomyd fds \(baseline.fds) → \(during.fds), " +
              "RSS \(baseline.rss / 1024) → \(during.rss / 1024) MiB; a 17th user was served")
    }

    /// Connecting and closing in a loop leaks nothing: descriptors come back to the baseline.
    func testConnectDisconnectLoops_leakNoDescriptors() throws {
        try stack.start(.taxonomy)
        try stack.start(.favorites)
        _ = try bystanderSearch()
        XCTAssertEqual(try stack.client(["fav", "count"]).status, 0)
        for daemon in [StackHarness.Daemon.taxonomy, .favorites] {
            let pid = try XCTUnwrap(stack.pid(daemon))
            let baseline = openDescriptors(pid)
            let output = stack.root + "/churn-\(daemon.rawValue).out"
            let churner = try attack(["churn", stack.socketPath(daemon), "5000"], output: output)
            XCTAssertEqual(waitForOutput(output), "churned 5000")
            _ = churner.wait(timeoutSeconds: 60)
            XCTAssertTrue(waitUntil(seconds: 10) { self.openDescriptors(pid) <= baseline },
                          "\(daemon.binary): \(openDescriptors(pid)) descriptors after the churn, \(baseline) before")
            print("attack: 5,000 connect/close against \(daemon.binary): descriptors \(baseline) before, \(openDescriptors(pid)) after")
        }
        _ = try bystanderSearch()
    }

    // MARK: The client never hangs, and says what happened

    func testClient_againstAStoppedDaemon_givesUpAtItsTimeout_withExit5() throws {
        try stack.start(.taxonomy)
        _ = try bystanderSearch()
        let daemon = try XCTUnwrap(stack.pid(.taxonomy))
        kill(daemon, SIGSTOP)
        defer { kill(daemon, SIGCONT) }
        let started = Date()
        let result = try stack.client(["search", "lion", "--timeout", "1"])
        XCTAssertEqual(result.status, 5, result.stderr)
        XCTAssertTrue(result.stderr.contains("did not answer within 1 s"), result.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
    }

    func testClient_whenTheDaemonIsFull_alwaysSaysBusy_withExit5() throws {
        try stack.start(.taxonomy)
        let output = stack.root + "/hold.out"
        let holder = try attack(["hold", stack.socketPath(.taxonomy), "64", "20"], output: output)
        XCTAssertEqual(waitForOutput(output), "kept 64 refused 0")
        // The attacker is at its limit: each of its further connections is refused, and
        // the client reports BUSY every time (it used to say "Broken pipe" now and then).
        for round in 0..<30 {
            let result = try stack.client(["search", "lion"], uid: StackHarness.isRoot ? Self.attacker : nil)
            XCTAssertEqual(result.status, 5, "round \(round): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("[BUSY]"), "round \(round): \(result.stderr)")
        }
        kill(holder.pid, SIGTERM)
        _ = holder.wait(timeoutSeconds: 10)
    }

    func testClient_anOverlongQuery_isAUsageError() throws {
        try stack.start(.taxonomy)
        let result = try stack.client(["search", String(repeating: "a", count: 100_000)])
        XCTAssertEqual(result.status, 64, result.stderr)
        XCTAssertTrue(result.stderr.contains("the limit is 512"), result.stderr)
    }
}
