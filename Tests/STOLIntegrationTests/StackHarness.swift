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
    private var activators: [Daemon: Process] = [:]
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
    private static var builtDatabase: String?
    private static let buildLock = NSLock()

    static func database() throws -> String {
        buildLock.lock()
        defer { buildLock.unlock() }
        if let builtDatabase { return builtDatabase }
        let directory = try makeDirectory(prefix: "stoldb")
        let path = directory + "/bundled.sqlite"
        let result = try run(binDirectory + "/stol-pipeline",
                             ["build", "--source", repositoryRoot + "/Pipeline/curated", "--output", path])
        guard result.status == 0 else { throw HarnessError("pipeline build failed: \(result.stderr)") }
        builtDatabase = path
        return path
    }

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
    func start(_ daemon: Daemon, extraArguments: [String] = []) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-socket-activate")
        var arguments = daemon == .verify ? ["--accept"] : []
        arguments += ["--listen=\(socketPath(daemon))", "--fdname=\(daemon.rawValue)"]
        for (key, value) in environment.sorted(by: { $0.key < $1.key }) { arguments += ["-E", "\(key)=\(value)"] }
        arguments += [Self.binDirectory + "/" + daemon.binary] + extraArguments
        process.arguments = arguments
        let log = FileHandle(forWritingAtPath: try logFile(daemon))
        process.standardOutput = log
        process.standardError = log
        try process.run()
        activators[daemon] = process
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socketPath(daemon)) { usleep(20_000) }
        guard FileManager.default.fileExists(atPath: socketPath(daemon)) else {
            throw HarnessError("\(daemon.binary) socket did not appear")
        }
        chmod(socketPath(daemon), daemon.mode)
    }

    func startAll() throws {
        for daemon in Daemon.allCases { try start(daemon) }
    }

    private func logFile(_ daemon: Daemon) throws -> String {
        let path = root + "/\(daemon.rawValue).log"
        if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
        return path
    }

    func log(_ daemon: Daemon) -> String {
        (try? String(contentsOfFile: root + "/\(daemon.rawValue).log", encoding: .utf8)) ?? ""
    }

    /// The pid of the activator (which becomes the daemon itself once it execs).
    func pid(_ daemon: Daemon) -> Int32? { activators[daemon]?.processIdentifier }

    /// SIGTERM and wait; returns the exit status.
    @discardableResult
    func stop(_ daemon: Daemon) -> Int32? {
        guard let process = activators.removeValue(forKey: daemon) else { return nil }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    func stopAll() {
        for daemon in Daemon.allCases { stop(daemon) }
    }

    deinit {
        stopAll()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Runs the real client (it finds the sockets through `STOL_RUNTIME_DIR`), as
    /// another user through `setpriv` when `uid` is given.
    func client(_ arguments: [String], uid: UInt32? = nil, groups: [UInt32] = [], stdin: String? = nil) throws -> Result {
        var command = Self.binDirectory + "/stol-client"
        var all = arguments
        if let uid {
            let groupArgument = groups.isEmpty ? "--clear-groups" : "--groups=\(groups.map(String.init).joined(separator: ","))"
            all = ["--reuid=\(uid)", "--regid=\(uid)", groupArgument, command] + all
            command = "/usr/bin/setpriv"
        }
        return try Self.run(command, all, stdin: stdin, environment: ["STOL_RUNTIME_DIR": runtimeDirectory])
    }

    static func run(_ executable: String, _ arguments: [String], stdin: String? = nil,
                    environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
                      stderr: String(decoding: stderrData, as: UTF8.self))
    }

    static var isRoot: Bool { getuid() == 0 }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
