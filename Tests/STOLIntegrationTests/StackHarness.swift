import Foundation
import Glibc
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

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    let root: String
    var runtimeDirectory: String { root + "/run" }
    var stateDirectory: String { root + "/state" }
    let database: String
    private var activators: [Daemon: ChildProcess] = [:]
    var environment: [String: String] = [:]

    /// The directory holding the built `stol-*` executables (next to the test bundle).
    static let binDirectory: String = {
        if let explicit = ProcessInfo.processInfo.environment["STOL_BIN_DIR"] { return explicit }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("stol-client").path) {
                return candidate.path
            }
        }
        return Bundle.main.bundleURL.path
    }()

    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// One database per test run, built by the real pipeline from the committed curated source.
    /// Built once, lazily and thread-safely (a `static let` initialiser runs once).
    private static let sharedDatabase: Swift.Result<String, HarnessError> = {
        do {
            let directory = try makeDirectory(prefix: "stoldb")
            let path = directory + "/bundled.sqlite"
            let result = try run(binDirectory + "/stol-pipeline",
                                 ["build", "--source", repositoryRoot + "/Pipeline/curated", "--output", path])
            guard result.status == 0 else { return .failure(HarnessError("pipeline build failed: \(result.stderr)")) }
            return .success(path)
        } catch {
            return .failure(HarnessError("pipeline build failed: \(error)"))
        }
    }()

    static func database() throws -> String { try sharedDatabase.get() }

    init() throws {
        root = try Self.makeDirectory(prefix: "stolit")
        try FileManager.default.createDirectory(atPath: root + "/run", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/state", withIntermediateDirectories: true)
        database = try Self.database()
        environment = ["STOL_RUNTIME_DIR": runtimeDirectory, "STOL_STATE_DIR": stateDirectory,
                       "STOL_BUNDLED_DB": database, "STOL_LOG_LEVEL": "info"]
    }

    static func makeDirectory(prefix: String) throws -> String {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let pointer = mkdtemp(&template) else { throw HarnessError("mkdtemp failed") }
        let path = String(cString: pointer)
        // Other test users (setpriv) must reach the sockets inside.
        chmod(path, 0o755)
        return path
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
        activators[daemon] = try ChildProcess.spawn("/usr/bin/python3", arguments,
                                                    environment: [:], stdout: log, stderr: log)
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socketPath(daemon)) { usleep(20_000) }
        guard FileManager.default.fileExists(atPath: socketPath(daemon)) else {
            throw HarnessError("\(daemon.binary) socket did not appear: \(self.log(daemon))")
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
        guard let process = activators.removeValue(forKey: daemon) else { return nil }
        kill(process.pid, SIGTERM)
        return process.wait(timeoutSeconds: 20)
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
    func client(_ arguments: [String], uid: UInt32? = nil, groups: [UInt32] = []) throws -> Result {
        var command = Self.binDirectory + "/stol-client"
        var all = arguments
        if let uid {
            let groupArgument = groups.isEmpty ? "--clear-groups" : "--groups=\(groups.map(String.init).joined(separator: ","))"
            all = ["--reuid=\(uid)", "--regid=\(uid)", groupArgument, command] + all
            command = "/usr/bin/setpriv"
        }
        return try Self.run(command, all, environment: ["STOL_RUNTIME_DIR": runtimeDirectory])
    }

    /// Runs a command to completion; output goes through temporary files, so no
    /// pipe can fill up and block either side.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let directory = try makeDirectory(prefix: "stolrun")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try ChildProcess.spawn(executable, arguments, environment: environment,
                                           stdout: directory + "/out", stderr: directory + "/err")
        let status = child.wait(timeoutSeconds: 60)
        let read = { (name: String) in (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? "" }
        return Result(status: status, stdout: read("out"), stderr: read("err"))
    }

    static var isRoot: Bool { getuid() == 0 }
}

struct HarnessError: Error, CustomStringConvertible, Sendable {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child started with posix_spawn and reaped by its own pid.
///
/// Foundation's `Process` on Linux reaps with a blocking `wait4` on one child at
/// a time, so a long-running daemon child keeps every later short-lived child
/// from being reaped; spawning directly avoids that.
struct ChildProcess {
    let pid: pid_t

    /// `stdin` is a path opened read-write as standard input (a pty's slave for
    /// tests that play a user at a terminal); /dev/null by default.
    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String],
                      stdout: String, stderr: String, stdin: String = "/dev/null") throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, stdin == "/dev/null" ? O_RDONLY : O_RDWR, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if stderr == stdout {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { throw HarnessError("cannot start \(executable): \(String(cString: strerror(rc)))") }
        return ChildProcess(pid: pid)
    }

    /// Waits for the child; after `timeoutSeconds` it is killed. Returns the exit
    /// status, or 128 + the signal that ended it.
    func wait(timeoutSeconds: Int) -> Int32 {
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(TimeInterval(timeoutSeconds))
        while true {
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid { break }
            if rc < 0 { return -1 }
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(5_000)
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
