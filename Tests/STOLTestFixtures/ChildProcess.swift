import Foundation
import Glibc

/// A child started with posix_spawn and reaped by its own pid: the one way the
/// tests and the benchmark start processes.
///
/// Foundation's `Process` on Linux reaps with a blocking `wait4` on one child at
/// a time, so a long-running daemon child keeps every later short-lived child
/// from being reaped (and it can hang there); spawning directly avoids that.
public struct ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// This process's own stream.
        case inherited
        /// A file, created if needed, appended to (or truncated first).
        case file(String, truncate: Bool = false)
        /// A file opened read-write (a pseudo-terminal's slave, as standard input).
        case readWrite(String)
        /// A descriptor of this process (a pipe's end), duplicated onto the stream.
        case descriptor(Int32)
        /// Standard error only: wherever standard output goes.
        case standardOutput
    }

    public let pid: pid_t

    public init(pid: pid_t) { self.pid = pid }

    /// Starts `executable` with `arguments`. Its environment is this process's with
    /// `environment` added (or `environment` alone when `inheritEnvironment` is
    /// false); `closing` lists descriptors the child must not keep.
    public static func spawn(_ executable: String, _ arguments: [String],
                             environment: [String: String] = [:], inheritEnvironment: Bool = true,
                             stdin: Stream = .null, stdout: Stream = .inherited, stderr: Stream = .standardOutput,
                             closing: [Int32] = []) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .inherited: break
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path, let truncate):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : O_APPEND), 0o644)
            case .readWrite(let path): posix_spawn_file_actions_addopen(&actions, target, path, O_RDWR, 0)
            case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, target)
            case .standardOutput: posix_spawn_file_actions_adddup2(&actions, 1, target)
            }
        }
        for fd in closing { posix_spawn_file_actions_addclose(&actions, fd) }
        let base = inheritEnvironment ? ProcessInfo.processInfo.environment : [:]
        let merged = base.merging(environment) { $1 }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { throw TestSupportError("cannot start \(executable): \(String(cString: strerror(rc)))") }
        return ChildProcess(pid: pid)
    }

    /// The exit status of a raw `waitpid` status: the exit code, or 128 + the signal that ended it.
    public static func exitStatus(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Waits for the child; after `timeoutSeconds` (when given) it is killed. Returns
    /// the exit status, or 128 + the signal that ended it (-1 when it was not a child).
    public func wait(timeoutSeconds: Double? = nil) -> Int32 {
        var status: Int32 = 0
        guard let timeoutSeconds else {
            return waitpid(pid, &status, 0) == pid ? Self.exitStatus(status) : -1
        }
        let deadline = Date().addingTimeInterval(timeoutSeconds)
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
        return Self.exitStatus(status)
    }

    /// Waits for the child and returns its exit status with what it used (its peak RSS, …).
    public func waitWithUsage() -> (status: Int32, usage: rusage) {
        var status: Int32 = 0
        var usage = rusage()
        let rc = wait4(pid, &status, 0, &usage)
        return (rc == pid ? Self.exitStatus(status) : -1, usage)
    }

    /// SIGTERM, then waits up to `timeoutSeconds` before SIGKILL; returns the exit status.
    @discardableResult
    public func terminate(timeoutSeconds: Double = 20) -> Int32 {
        kill(pid, SIGTERM)
        return wait(timeoutSeconds: timeoutSeconds)
    }
}

/// What a command run to completion printed, and how it ended.
public struct ProcessOutput: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

extension ChildProcess {
    /// Runs a command to completion (killed after `timeoutSeconds`). Its output goes
    /// through temporary files, so no pipe can fill up and block either side.
    /// Standard input is `input` when given (from a file), else `stdin`; `started`
    /// runs once the child is running (to type into its terminal, say).
    public static func run(_ executable: String, _ arguments: [String],
                           environment: [String: String] = [:], inheritEnvironment: Bool = true,
                           stdin: Stream = .null, input: String? = nil, timeoutSeconds: Double = 60,
                           started: (ChildProcess) throws -> Void = { _ in }) throws -> ProcessOutput {
        let directory = try TemporaryDirectory.make(prefix: "stolrun")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var standardInput = stdin
        if let input {
            try Data(input.utf8).write(to: URL(fileURLWithPath: directory + "/in"))
            standardInput = .readWrite(directory + "/in")
        }
        let child = try spawn(executable, arguments, environment: environment, inheritEnvironment: inheritEnvironment,
                              stdin: standardInput, stdout: .file(directory + "/out"), stderr: .file(directory + "/err"))
        do {
            try started(child)
        } catch {
            kill(child.pid, SIGKILL)
            _ = child.wait()
            throw error
        }
        let status = child.wait(timeoutSeconds: timeoutSeconds)
        let read = { (name: String) in (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? "" }
        return ProcessOutput(status: status, stdout: read("out"), stderr: read("err"))
    }
}
