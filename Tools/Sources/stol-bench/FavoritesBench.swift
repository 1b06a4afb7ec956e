import ArgumentParser
import Foundation
import Glibc
import STOLProtocol
import STOLTestFixtures
import STOLTransport

/// `stol-bench favorites`: latency of `stol-favoritesd` through its real socket,
/// and the daemon's peak memory.
///
/// By default it starts its own daemon behind the real `systemd-socket-activate`
/// in a fresh directory (under `--work-dir`, on disk rather than tmpfs, so commits
/// cost what they cost on a real machine), exactly as `make run` and the
/// integration tests do. With `--runtime-dir` it measures a running stack instead,
/// as the invoking user, using ids from a reserved range that it removes again, so
/// it never touches that user's own favourites.
///
/// It prints; it never fails on a timing (docs/design/architecture.md §11, item 9: speed is measured,
/// not asserted). Targets of issue 5 are shown beside the numbers.
struct FavoritesBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "favorites",
        abstract: "Favourites latency (is-favourite, add, remove, toggle, list of 10,000) and peak RSS.",
        discussion: """
            Starts stol-favoritesd under systemd-socket-activate in a temporary directory and \
            measures round trips through its Unix socket, one request at a time on one connection \
            (the latency a client sees, including framing and protobuf). Prints a table; exits 0 \
            whatever the numbers are.
            """)

    @Option(help: "Measure the daemon of a running stack (its sockets' directory) instead of starting one.")
    var runtimeDir: String?

    @Option(help: "Where the temporary state and socket go (default: /var/tmp, a disk).")
    var workDir: String = "/var/tmp"

    @Option(help: "The stol-favoritesd to start (default: next to stol-bench).")
    var daemon: String?

    @Option(help: "Round trips measured per single-row operation.")
    var iterations: Int = 5_000

    @Option(help: "Favourites in the list that is measured.")
    var listSize: Int = 10_000

    /// 200, not fewer: with 50 fetches the "p99" was simply the slowest one.
    @Option(help: "Times the list is fetched (p99 is meaningful from about 100).")
    var listRepeats: Int = 200

    func validate() throws {
        guard iterations > 0, listSize > 0, listSize <= 50_000, listRepeats > 0 else {
            throw ValidationError("--iterations and --list-repeats must be positive; --list-size 1…50000")
        }
    }

    func run() throws {
        let started: StartedDaemon?
        let socketPath: String
        if let runtimeDir {
            started = nil
            socketPath = runtimeDir + "/favorites.sock"
        } else {
            let daemonPath = daemon ?? Self.siblingExecutable("stol-favoritesd")
            started = try StartedDaemon.start(daemonPath, workDirectory: workDir)
            socketPath = started!.socketPath
        }
        defer { started?.stop() }

        let client = try BenchConnection(path: socketPath)
        let pid = client.peerPID
        // Reserved range far above real ids (NCBI taxids are < 2^32), so a run
        // against a live stack cannot collide with the user's own favourites.
        let base: Int64 = 1 << 52
        let existing = try client.count()
        var results: [Row] = []

        _ = try client.time(.isFavorite(.with { $0.taxonID = base }))  // opens the (empty) file, warms up
        let adds = try (0..<Int64(iterations)).map { i in try client.time(.add(.with { $0.taxonID = base + i })) }
        results.append(Row("add (new id, committed)", adds, target: "p99 ≤ 2 ms", limit: 2.0))
        let checks = try (0..<Int64(iterations)).map { i in
            try client.time(.isFavorite(.with { $0.taxonID = base + (i * 2) % Int64(iterations * 2) }))
        }
        results.append(Row("is-favourite (from memory)", checks, target: "p99 ≤ 0.2 ms", limit: 0.2))
        let toggles = try (0..<Int64(iterations)).map { i in try client.time(.toggle(.with { $0.taxonID = base + i / 2 + Int64(iterations) })) }
        results.append(Row("toggle (add or remove)", toggles, target: "p99 ≤ 2 ms", limit: 2.0))
        let removes = try (0..<Int64(iterations)).map { i in try client.time(.remove(.with { $0.taxonID = base + i })) }
        results.append(Row("remove (present id, committed)", removes, target: "p99 ≤ 2 ms", limit: 2.0))

        // Fill to `listSize` (pipelined: filling is setup, not measurement).
        let fill = max(0, listSize - (try client.count()))
        try client.pipelined((0..<Int64(fill)).map { i in .add(.with { $0.taxonID = base + 1_000_000 + i }) })
        let listed = try client.count()
        var listBytes = 0
        let lists = try (0..<listRepeats).map { _ in
            try client.time(.list(Stol_V1_ListFavorites())) { response in listBytes = ((try? response.serializedBytes()) as [UInt8]?)?.count ?? 0 }
        }
        results.append(Row("list of \(listed) favourites", lists, target: "≤ 20 ms", limit: 20.0))

        // Leave a live user's file as it was: remove everything from the reserved range.
        if runtimeDir != nil {
            try client.pipelined((0..<Int64(fill)).map { i in .remove(.with { $0.taxonID = base + 1_000_000 + i }) })
        }
        let fsyncs = started.map { Self.fsyncLatencies(in: $0.stateDirectory) }

        print("stol-bench favorites: stol-favoritesd (pid \(pid)) through \(socketPath)")
        print("one connection, one request at a time; SQLite WAL, synchronous=NORMAL; \(ProcessInfo.processInfo.activeProcessorCount) cores")
        if runtimeDir != nil { print("running stack: measured as uid \(getuid()) with reserved ids (removed again); \(existing) favourites of yours were there") }
        print("")
        print(Row.header)
        results.forEach { print($0.line) }
        if let fsyncs {
            print(Row("(fsync of 4 KiB in the state dir)", fsyncs, target: "what FULL adds per commit", limit: nil).line)
        }
        print("")
        print("list answer: \(listBytes) bytes for \(listed) favourites")
        print("daemon peak RSS (VmHWM): \(Self.memory(pid, "VmHWM")); now (VmRSS): \(Self.memory(pid, "VmRSS"))")
        let missed = results.filter { row in row.limit.map { row.percentile(0.99) > $0 } ?? false }.map(\.name)
        if !missed.isEmpty {
            print("FAILED: target missed by \(missed.joined(separator: ", "))")
            throw ExitCode(1)
        }
    }

    // MARK: - Measurements

    /// One line of the table: percentiles of round-trip times in milliseconds.
    struct Row {
        static let header = "operation                             n       p50 ms    p99 ms    max ms    target"
        let name: String
        let samples: [Double]
        let target: String
        let limit: Double?

        init(_ name: String, _ samples: [Double], target: String, limit: Double?) {
            self.name = name
            self.samples = samples.sorted()
            self.target = target
            self.limit = limit
        }

        func percentile(_ p: Double) -> Double {
            samples[Int((p * Double(samples.count - 1)).rounded())]
        }

        var line: String {
            let verdict = limit.map { percentile(0.99) <= $0 ? "  (met)" : "  (NOT met)" } ?? ""
            return name.padding(toLength: 36, withPad: " ", startingAt: 0)
                + String(samples.count).leftPadded(6)
                + String(format: "%10.3f%10.3f%10.3f", percentile(0.5), percentile(0.99), samples.last ?? 0)
                + "    " + target + verdict
        }
    }

    /// What `synchronous=FULL` would add to every commit: one fsync of the WAL.
    /// Measured as write + fdatasync of 4 KiB in the favourites' own directory.
    static func fsyncLatencies(in directory: String, count: Int = 200) -> [Double] {
        let path = directory + "/fsync-probe"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return [0] }
        defer {
            close(fd)
            unlink(path)
        }
        let page = [UInt8](repeating: 0x5a, count: 4096)
        return (0..<count).map { i in
            let start = now()
            _ = page.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4096, off_t(i % 64) * 4096) }
            _ = fdatasync(fd)
            return milliseconds(since: start)
        }
    }

    /// A line of `/proc/<pid>/status` (VmHWM: peak resident set; VmRSS: now).
    static func memory(_ pid: pid_t, _ key: String) -> String {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else {
            return "unknown (cannot read /proc/\(pid)/status)"
        }
        return String(format: "%.1f MiB", kilobytes / 1024)
    }

    static func siblingExecutable(_ name: String) -> String {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return (me as NSString).deletingLastPathComponent + "/" + name
    }
}

private func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

private func milliseconds(since start: UInt64) -> Double {
    Double(now() - start) / 1_000_000
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// Why the benchmark could not run (never a timing).
private struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One framed connection to `favorites.sock` that times round trips.
private final class BenchConnection {
    private let socket: FrameSocket
    private var nextID: UInt64 = 1
    let peerPID: pid_t

    init(path: String) throws {
        socket = try FrameSocket.connect(path: path)
        socket.setReceiveTimeout(.seconds(30))
        peerPID = try socket.peerCredentials().pid
    }

    private func request(_ body: Stol_V1_FavoritesRequest.OneOf_Body) -> Stol_V1_FavoritesRequest {
        var request = Stol_V1_FavoritesRequest()
        request.id = nextID
        nextID += 1
        request.body = body
        return request
    }

    private func checked(_ response: Stol_V1_FavoritesResponse) throws -> Stol_V1_FavoritesResponse {
        if let error = response.protocolError { throw BenchError("the daemon answered \(error)") }
        return response
    }

    /// One round trip in milliseconds (send, wait, receive and decode the answer).
    func time(_ body: Stol_V1_FavoritesRequest.OneOf_Body,
              inspect: (Stol_V1_FavoritesResponse) throws -> Void = { _ in }) throws -> Double {
        let request = request(body)
        let start = now()
        try socket.send(request)
        let response = try socket.receive(Stol_V1_FavoritesResponse.self).message
        let elapsed = milliseconds(since: start)
        try inspect(try checked(response))
        return elapsed
    }

    func count() throws -> Int {
        try socket.send(request(.count(Stol_V1_CountFavorites())))
        return Int(try checked(socket.receive(Stol_V1_FavoritesResponse.self).message).count.count)
    }

    /// Sends bodies in batches without waiting for each answer (setup only).
    func pipelined(_ bodies: [Stol_V1_FavoritesRequest.OneOf_Body], batch: Int = 64) throws {
        var start = 0
        while start < bodies.count {
            let slice = bodies[start..<min(start + batch, bodies.count)]
            for body in slice { try socket.send(request(body)) }
            for _ in slice { _ = try checked(socket.receive(Stol_V1_FavoritesResponse.self).message) }
            start += slice.count
        }
    }
}

/// A `stol-favoritesd` started for the benchmark behind `systemd-socket-activate`,
/// with its own runtime and state directories, removed afterwards.
private struct StartedDaemon {
    let root: String
    let process: ChildProcess
    var socketPath: String { root + "/run/favorites.sock" }
    var stateDirectory: String { root + "/state" }

    static func start(_ daemon: String, workDirectory: String) throws -> StartedDaemon {
        guard FileManager.default.isExecutableFile(atPath: daemon) else {
            throw BenchError("no stol-favoritesd at \(daemon); build it first (swift build -c release) or pass --daemon")
        }
        let activate = "/usr/bin/systemd-socket-activate"
        guard FileManager.default.isExecutableFile(atPath: activate) else {
            throw BenchError("\(activate) is missing (Debian package systemd)")
        }
        let root = try TemporaryDirectory.make(prefix: "stolbench", in: workDirectory)
        try FileManager.default.createDirectory(atPath: root + "/run", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/state/favorites", withIntermediateDirectories: true)
        let arguments = ["--listen=\(root)/run/favorites.sock", "--fdname=favorites",
                         "-E", "STOL_RUNTIME_DIR=\(root)/run", "-E", "STOL_STATE_DIR=\(root)/state",
                         "-E", "STOL_LOG_LEVEL=warning", daemon]
        let started = StartedDaemon(root: root, process: try ChildProcess.start(activate, arguments, log: root + "/daemon.log"))
        guard waitUntil(seconds: 5, interval: 0.02, { FileManager.default.fileExists(atPath: started.socketPath) }) else {
            started.stop()
            throw BenchError("the daemon's socket did not appear")
        }
        return started
    }

    /// SIGTERM (the daemon drains and exits 0), reap, remove the directory.
    func stop() {
        process.terminate(timeoutSeconds: 5)
        try? FileManager.default.removeItem(atPath: root)
    }
}
