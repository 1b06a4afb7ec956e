import Foundation
import Glibc
import STOLTestFixtures
import XCTest

/// Runs the real binaries the way `make run` and systemd do: every daemon behind
/// the real `systemd-socket-activate` (the verifier with `--accept`), sockets and
/// state in a fresh temporary directory, queried with the real `stol-client`.
final class StackHarness {
    enum Daemon: String, CaseIterable {
        case taxonomy, favorites, `import`, verify

        var binary: String { "stol-\(rawValue)d" }
        var mode: mode_t {
            switch self {
            case .taxonomy, .favorites: 0o666
            case .import: 0o660
            case .verify: 0o600
            }
        }
    }

    typealias Result = ProcessOutput

    let root: String
    var runtimeDirectory: String { root + "/run" }
    var stateDirectory: String { root + "/state" }
    /// The taxonomy server's tree images (its `CACHE_DIRECTORY`).
    var treeImageDirectory: String { root + "/cache/taxonomy" }
    let database: String
    private var activators: [Daemon: ChildProcess] = [:]
    var environment: [String: String] = [:]

    /// The built `stol-*` executables (the kit's ``Workspace``).
    static var binDirectory: String { Workspace.binDirectory }
    static var repositoryRoot: String { Workspace.repositoryRoot }

    /// One database per test run, built by the real pipeline from the committed curated source.
    /// Built once, lazily and thread-safely (a `static let` initialiser runs once).
    private static let sharedDatabase: Swift.Result<String, TestSupportError> = {
        do {
            let directory = try makeDirectory(prefix: "stoldb")
            let path = directory + "/bundled.sqlite"
            let result = try run(binDirectory + "/stol-pipeline",
                                 ["build", "--source", repositoryRoot + "/Pipeline/curated", "--output", path])
            guard result.status == 0 else { return .failure(TestSupportError("pipeline build failed: \(result.stderr)")) }
            return .success(path)
        } catch {
            return .failure(TestSupportError("pipeline build failed: \(error)"))
        }
    }()

    static func database() throws -> String { try sharedDatabase.get() }

    /// Whether the daemons were built with the environment-armed test hooks (`STOL_TEST_HOOKS`:
    /// debug builds, what `swift test` runs; the release build has none).
    private static let builtWithTestHooks: Bool = {
        let verifier = FileManager.default.contents(atPath: binDirectory + "/stol-verifyd") ?? Data()
        return verifier.range(of: Data("STOL_TEST_SANDBOX_PROBE".utf8)) != nil
    }()

    /// A test that arms a hook (`STOL_TEST_PAUSE_AT`, `STOL_TEST_SANDBOX_PROBE`,
    /// `STOL_TEST_HANG_ON_SIGUSR2`) says so first: binaries without hooks would ignore it.
    static func requireTestHooks() throws {
        guard builtWithTestHooks else {
            throw TestSupportError("the daemons in \(binDirectory) have no test hooks (built without STOL_TEST_HOOKS): "
                                   + "run the tests on the debug build")
        }
    }

    init() throws {
        root = try Self.makeDirectory(prefix: "stolit")
        try FileManager.default.createDirectory(atPath: root + "/run", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/state", withIntermediateDirectories: true)
        database = try Self.database()
        // CACHE_DIRECTORY as the unit's CacheDirectory= hands it over (apart from the state, as
        // /var/cache is from /var/lib): the taxonomy server's tree images.
        environment = ["STOL_RUNTIME_DIR": runtimeDirectory, "STOL_STATE_DIR": stateDirectory,
                       "STOL_BUNDLED_DB": database, "STOL_LOG_LEVEL": "info", "CACHE_DIRECTORY": treeImageDirectory]
    }

    /// Other test users (setpriv) must reach the sockets inside.
    static func makeDirectory(prefix: String) throws -> String {
        try TemporaryDirectory.make(prefix: prefix, mode: 0o755)
    }

    func socketPath(_ daemon: Daemon) -> String { runtimeDirectory + "/\(daemon.rawValue).sock" }

    /// Starts `daemon` behind systemd-socket-activate and waits for its socket.
    /// As `systemd/stack.sh` does, `systemd/listen-socket.py` binds the socket with
    /// its final mode and hands it to the activator (which would bind it 0644).
    func start(_ daemon: Daemon, extraArguments: [String] = []) throws {
        var arguments = [Self.repositoryRoot + "/systemd/listen-socket.py", socketPath(daemon),
                         String(daemon.mode, radix: 8), "/usr/bin/systemd-socket-activate"]
        arguments += daemon == .verify ? ["--accept"] : []
        arguments += ["--fdname=\(daemon.rawValue)"]
        for (key, value) in environment.sorted(by: { $0.key < $1.key }) { arguments += ["-E", "\(key)=\(value)"] }
        arguments += [Self.binDirectory + "/" + daemon.binary] + extraArguments
        let log = root + "/\(daemon.rawValue).log"
        // A restart finds the socket file of the activator it stopped: waiting for
        // "the file exists" would then return before the new one listens.
        unlink(socketPath(daemon))
        activators[daemon] = try ChildProcess.spawn("/usr/bin/python3", arguments, stdout: .file(log))
        // Listening, not merely present: between bind(2) and listen(2) a connect is refused, and on
        // a busy machine (make test runs suites side by side) the activator can be descheduled there.
        // Read from /proc/net/unix, since a connect would start the daemon. A deadline, not a pause.
        guard waitUntil(seconds: 30, interval: 0.02, { Self.isListening(socketPath(daemon)) }) else {
            throw TestSupportError("\(daemon.binary) socket is not listening: \(self.log(daemon))")
        }
    }

    /// Whether a Unix socket bound to `path` listens (`__SO_ACCEPTCON` in /proc/net/unix).
    static func isListening(_ path: String) -> Bool {
        // Read to the end: String(contentsOfFile:) stops at the first 4 KiB of a procfs file (its size
        // is 0), and on a busy machine the socket is listed after them: "not listening" for 30 s.
        guard let file = FileHandle(forReadingAtPath: "/proc/net/unix"),
              let bytes = try? file.readToEnd() else { return false }
        try? file.close()
        let table = String(decoding: bytes, as: UTF8.self)
        return table.split(separator: "\n").dropFirst().contains { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, fields[7] == path, let flags = Int(fields[3], radix: 16) else { return false }
            return flags & 0x10000 != 0
        }
    }

    func startAll() throws {
        for daemon in Daemon.allCases { try start(daemon) }
    }

    func log(_ daemon: Daemon) -> String {
        (try? String(contentsOfFile: root + "/\(daemon.rawValue).log", encoding: .utf8)) ?? ""
    }

    /// The pid of the activator (which becomes the daemon itself once it execs).
    func pid(_ daemon: Daemon) -> Int32? { activators[daemon]?.pid }

    /// SIGTERM and wait; returns the exit status (128 + signal when killed).
    @discardableResult
    func stop(_ daemon: Daemon) -> Int32? {
        activators.removeValue(forKey: daemon)?.terminate(timeoutSeconds: 20)
    }

    func stopAll() {
        for daemon in Daemon.allCases { stop(daemon) }
    }

    deinit {
        stopAll()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Runs the real client (it finds the sockets through `STOL_RUNTIME_DIR`), as
    /// another user through `setpriv` when `uid` is given. Standard input is
    /// /dev/null, as for a script.
    /// Runs the real client (as `uid`, through setpriv), killed after `timeoutSeconds`.
    func client(_ arguments: [String], uid: UInt32? = nil, groups: [UInt32] = [],
                environment extra: [String: String] = [:], timeoutSeconds: Double = 60) throws -> Result {
        var command = Self.binDirectory + "/stol-client"
        var all = arguments
        if let uid {
            let groupArgument = groups.isEmpty ? "--clear-groups" : "--groups=\(groups.map(String.init).joined(separator: ","))"
            all = ["--reuid=\(uid)", "--regid=\(uid)", groupArgument, command] + all
            command = "/usr/bin/setpriv"
        }
        return try ChildProcess.run(command, all, environment: extra.merging(["STOL_RUNTIME_DIR": runtimeDirectory]) { $1 },
                                    timeoutSeconds: timeoutSeconds)
    }

    /// Runs the real client with `input` as its standard input (a batch command).
    func client(_ arguments: [String], input: String) throws -> Result {
        try ChildProcess.run(Self.binDirectory + "/stol-client", arguments,
                             environment: ["STOL_RUNTIME_DIR": runtimeDirectory], input: input)
    }

    /// Runs a command to completion (see ``ChildProcess/run``).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        try ChildProcess.run(executable, arguments, environment: environment)
    }

    static var isRoot: Bool { getuid() == 0 }
}
