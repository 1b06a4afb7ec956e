import Foundation
import Glibc
import STOLProtocol
import STOLServer
import STOLTransport
import XCTest

/// `systemd/stack.sh`, what `make start`, `make stop` and `make status` run: the
/// real daemons behind the real `systemd-socket-activate`, in a temporary
/// directory, looked at from outside as a user would.
final class StackScriptTests: XCTestCase {
    private var root = ""
    private var runtime: String { root + "/run" }

    private static let script = StackHarness.repositoryRoot + "/systemd/stack.sh"

    override func setUpWithError() throws {
        root = try StackHarness.makeDirectory(prefix: "stolsh")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        let root = self.root
        addTeardownBlock {
            _ = try? Self.run(["stop"], root: root)
            try? FileManager.default.removeItem(atPath: root)
        }
    }

    private static func run(_ arguments: [String], root: String) throws -> StackHarness.Result {
        try StackHarness.run("/bin/bash", [script] + arguments,
                             environment: ["STOL_RUNTIME_DIR": root + "/run", "STOL_STATE_DIR": root + "/state"])
    }

    private func stack(_ arguments: String...) throws -> StackHarness.Result {
        try Self.run(arguments, root: root)
    }

    private func start() throws {
        let started = try stack("start", StackHarness.binDirectory, try StackHarness.database())
        XCTAssertEqual(started.status, 0, started.stdout + started.stderr)
    }

    /// `status`, one line per daemon, keyed by the daemon's name.
    private func status() throws -> (exitStatus: Int32, lines: [String: String]) {
        let result = try stack("status")
        var lines: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            let name = line.prefix { $0 != ":" }
            lines[String(name)] = String(line)
        }
        XCTAssertEqual(Set(lines.keys), ["taxonomy", "favorites", "import", "verify"], result.stdout + result.stderr)
        return (result.status, lines)
    }

    private func pid(_ daemon: StackHarness.Daemon) throws -> pid_t {
        let text = try String(contentsOfFile: runtime + "/\(daemon.rawValue).pid", encoding: .utf8)
        return try XCTUnwrap(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// The sockets appear with their units' `SocketMode=` and keep it: the runtime
    /// directory is watched with inotify through the whole start, and no socket
    /// sees a change of attributes (chmod, chown) after its creation. The script
    /// used to chmod each socket once `systemd-socket-activate` had bound it
    /// 0644, so for a moment other users got EACCES.
    func testStart_bindsEverySocketWithItsFinalMode_neverChangingItAfterwards() throws {
        let watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        XCTAssertGreaterThanOrEqual(watch, 0)
        defer { close(watch) }
        XCTAssertGreaterThanOrEqual(inotify_add_watch(watch, runtime, UInt32(IN_CREATE | IN_ATTRIB | IN_MOVED_TO)), 0)

        try start()

        let events = Self.readEvents(watch)
        for daemon in StackHarness.Daemon.allCases {
            let name = "\(daemon.rawValue).sock"
            let masks = events.filter { $0.name == name }.map(\.mask)
            XCTAssertEqual(masks, [UInt32(IN_CREATE)], "\(name): created once, never changed after: \(events)")
            var info = stat()
            XCTAssertEqual(lstat(runtime + "/" + name, &info), 0)
            XCTAssertEqual(info.st_mode & S_IFMT, S_IFSOCK)
            XCTAssertEqual(info.st_mode & 0o7777, daemon.mode, name)
        }
        // The sockets serve: the taxonomy daemon starts on its first connection.
        let answer = try StackHarness.run(StackHarness.binDirectory + "/stol-client", ["taxon", "9689"],
                                          environment: ["STOL_RUNTIME_DIR": runtime])
        XCTAssertEqual(answer.status, 0, answer.stderr)
        XCTAssertTrue(answer.stdout.contains("Panthera leo"), answer.stdout)
    }

    /// `make restart` after a build: the running daemons' binaries were replaced on
    /// disk (their `/proc/PID/exe` reads "… (deleted)"), and `stop` must still stop
    /// them. It used to take them for other programs and leave them running, one
    /// more taxonomy server (300 MB on the reference build) per restart.
    func testStop_stopsDaemonsWhoseBinariesWereRebuiltSinceTheyStarted() throws {
        let binaries = root + "/bin"
        try FileManager.default.createDirectory(atPath: binaries, withIntermediateDirectories: true)
        for daemon in StackHarness.Daemon.allCases {
            try FileManager.default.copyItem(atPath: StackHarness.binDirectory + "/stol-\(daemon.rawValue)d",
                                             toPath: binaries + "/stol-\(daemon.rawValue)d")
        }
        let started = try stack("start", binaries, try StackHarness.database())
        XCTAssertEqual(started.status, 0, started.stdout + started.stderr)
        // Start the taxonomy daemon itself (until then its activator holds the socket).
        let answer = try StackHarness.run(StackHarness.binDirectory + "/stol-client", ["status"],
                                          environment: ["STOL_RUNTIME_DIR": runtime])
        XCTAssertEqual(answer.status, 0, answer.stderr)
        let taxonomy = try pid(.taxonomy)
        // A rebuild replaces the file: a new inode under the old name.
        for daemon in StackHarness.Daemon.allCases {
            let path = binaries + "/stol-\(daemon.rawValue)d"
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: StackHarness.binDirectory + "/stol-\(daemon.rawValue)d", toPath: path)
        }
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(taxonomy)/exe")
        XCTAssertTrue(exe.hasSuffix(" (deleted)"), exe)
        let stopped = try stack("stop")
        XCTAssertEqual(stopped.stdout, "stopped 4 daemon(s)\n")
        var state = ""
        let alive = (try? String(contentsOfFile: "/proc/\(taxonomy)/stat", encoding: .utf8)).map { stat in
            state = String(stat.split(separator: ")").last?.split(separator: " ").first ?? "")
            return state != "Z" && state != "X"
        } ?? false
        XCTAssertFalse(alive, "stol-taxonomyd (pid \(taxonomy)) still runs after stop: state \(state)")
    }

    /// A daemon killed with SIGKILL is "not running", although its pid may live
    /// on as a zombie (here PID 1 reaps nothing, so `kill -0` still succeeds on
    /// it: that is how the old check reported it as listening).
    func testStatus_reportsAKilledDaemonAsNotRunning() throws {
        try start()
        var current = try status()
        XCTAssertEqual(current.exitStatus, 0)
        for daemon in StackHarness.Daemon.allCases {
            let line = try XCTUnwrap(current.lines[daemon.rawValue])
            XCTAssertTrue(line.hasPrefix("\(daemon.rawValue): listening on \(runtime)/\(daemon.rawValue).sock (pid \(try pid(daemon))"),
                          line)
        }
        XCTAssertTrue(current.lines["taxonomy"]?.contains("waiting for its first connection") == true,
                      "no connection yet: the activator holds the socket")

        // One request starts the daemon (same pid: the activator execs it); the
        // connection stays open so that its end tells when the daemon is gone.
        let connection = try FrameSocket.connect(path: runtime + "/taxonomy.sock")
        defer { connection.close() }
        var request = Stol_V1_TaxonomyRequest()
        request.id = 1
        request.status = Stol_V1_StatusRequest()
        try connection.send(request)
        XCTAssertEqual(try connection.receive(Stol_V1_TaxonomyResponse.self).message.id, 1)
        XCTAssertTrue(try status().lines["taxonomy"]?.contains("daemon started") == true)

        let taxonomy = try pid(.taxonomy)
        XCTAssertEqual(kill(taxonomy, SIGKILL), 0)
        // End of stream: the kernel has closed every descriptor of the daemon,
        // its listening socket with them.
        XCTAssertThrowsError(try connection.receive(Stol_V1_TaxonomyResponse.self))

        current = try status()
        XCTAssertEqual(current.exitStatus, 3, "LSB: 3 when a service is not running")
        let line = try XCTUnwrap(current.lines["taxonomy"])
        XCTAssertTrue(line.hasPrefix("taxonomy: not running (pid \(taxonomy) "), line)
        for daemon in [StackHarness.Daemon.favorites, .import, .verify] {
            XCTAssertTrue(current.lines[daemon.rawValue]?.contains(": listening on ") == true,
                          "the others are untouched: \(current.lines)")
        }
        let client = try StackHarness.run(StackHarness.binDirectory + "/stol-client", ["status"],
                                          environment: ["STOL_RUNTIME_DIR": runtime])
        XCTAssertEqual(client.status, 5, "the client agrees: the service is not running")

        let stopped = try stack("stop")
        XCTAssertEqual(stopped.stdout, "stopped 3 daemon(s)\n", "the dead one is not counted (nor signalled)")
        current = try status()
        XCTAssertEqual(current.exitStatus, 3)
        XCTAssertEqual(Set(current.lines.values), Set(StackHarness.Daemon.allCases.map { "\($0.rawValue): not running" }))
    }

    /// A pid file whose pid now belongs to another program (pids are reused) does
    /// not make a daemon "listening", and `stop` does not signal that program.
    func testStatus_whenThePidFileNamesAnotherProcess_saysNotRunningAndStopLeavesItAlone() throws {
        try start()
        let favorites = try pid(.favorites)
        let pidFile = runtime + "/favorites.pid"
        // This test process: alive, but not the favourites daemon nor its activator.
        try "\(getpid())\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
        let line = try XCTUnwrap(try status().lines["favorites"])
        XCTAssertEqual(line, "favorites: not running (pid \(getpid()) is another program now; make restart)")

        let stopped = try stack("stop")
        XCTAssertEqual(stopped.stdout, "stopped 3 daemon(s)\n", "this test process was not signalled")
        // The real activator, whose pid file was overwritten, is ended by hand.
        XCTAssertEqual(kill(favorites, SIGKILL), 0)
    }

    /// The helper behind both: whatever the caller's umask, the socket exists
    /// with exactly the mode asked for by the time the command starts, and the
    /// command gets it as socket activation's fd 3 (LISTEN_FDS=1 for its own pid).
    /// A stale socket file is replaced; any other file is left alone.
    func testListenSocket_bindsTheModeAskedForWhateverTheUmask_andPassesTheSocket() throws {
        let helper = StackHarness.repositoryRoot + "/systemd/listen-socket.py"
        let path = runtime + "/probe.sock"
        // The command reports what it finds at once: the mode, the activation
        // variables against its pid, and what fd 3 is.
        let report = "stat -c %a \"$0\"; echo \"$LISTEN_FDS $LISTEN_PID $$\"; readlink /proc/self/fd/3"
        for (umask, mode) in [("077", "666"), ("000", "600"), ("022", "660")] {
            let result = try StackHarness.run("/bin/sh", ["-c", "umask \(umask); exec \"$0\" \"$@\"", "/usr/bin/python3",
                                                          helper, path, "0" + mode, "/bin/sh", "-c", report, path])
            XCTAssertEqual(result.status, 0, result.stderr)
            let lines = result.stdout.split(separator: "\n").map(String.init)
            XCTAssertEqual(lines.first, mode, "umask \(umask)")
            let activation = lines.dropFirst().first?.split(separator: " ") ?? []
            XCTAssertEqual(activation.count, 3, result.stdout)
            XCTAssertEqual(activation.first, "1")
            XCTAssertEqual(activation.dropFirst().first, activation.last, "LISTEN_PID is the command's own pid")
            XCTAssertTrue(lines.last?.hasPrefix("socket:[") == true, result.stdout)
            // The socket file stays behind, as a dead daemon's would: the next run replaces it.
        }
        let file = runtime + "/not-a-socket"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("keep me".utf8)))
        let refused = try StackHarness.run("/usr/bin/python3", [helper, file, "0666", "/bin/true"])
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertEqual(FileManager.default.contents(atPath: file), Data("keep me".utf8))
    }

    // MARK: inotify

    private struct Event: CustomStringConvertible {
        let mask: UInt32
        let name: String
        var description: String { "\(name): 0x\(String(mask, radix: 16))" }
    }

    /// Every event queued on `watch` (non-blocking), in order.
    private static func readEvents(_ watch: Int32) -> [Event] {
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
            guard count > 0 else { return events }
            var offset = 0
            // struct inotify_event: wd, mask, cookie, len (4 bytes each), then len bytes of NUL-padded name.
            while offset + 16 <= count {
                func word(_ at: Int) -> UInt32 {
                    buffer[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) }
                }
                let mask = word(offset + 4), length = Int(word(offset + 12))
                let nameBytes = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                events.append(Event(mask: mask & ~UInt32(IN_ISDIR), name: String(decoding: nameBytes, as: UTF8.self)))
                offset += 16 + length
            }
        }
    }
}
