import ArgumentParser
import Foundation
import Glibc
import STOLTestFixtures
import Synchronization

/// A `stol-bench` subcommand run as another user (the soak's workers, the attack's
/// attackers and victim): through `setpriv` when the bench runs as root, so that the
/// daemons see another uid, as this process's user otherwise. Its standard input is
/// the bench's handle to stop it (closed: it finishes what it is doing and exits),
/// its standard output a file read once it has exited, its standard error a log.
final class BenchChild {
    let pid: pid_t
    let output: String
    let log: String
    private var input: Int32
    /// The exit status, once the child has been reaped.
    private var status: Int32?

    private init(pid: pid_t, output: String, log: String, input: Int32) {
        self.pid = pid
        self.output = output
        self.log = log
        self.input = input
    }

    /// The command line that runs `arguments` as `uid` (nil: as this process's user).
    static func asUser(_ uid: Int?, _ arguments: [String]) -> [String] {
        guard let uid else { return arguments }
        return ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--"] + arguments
    }

    /// Starts `binary arguments…` as `uid`, its output to `output` and its standard error to `log`.
    static func start(binary: String, _ arguments: [String], uid: Int?, output: String, log: String) throws -> BenchChild {
        var pipe: [Int32] = [-1, -1]
        guard Glibc.pipe(&pipe) == 0 else { throw ValidationError("pipe failed") }
        // Close-on-exec: no other child may inherit this one's end (its EOF would never come).
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let command = asUser(uid, [binary] + arguments)
        defer { close(pipe[0]) }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(command[0], Array(command.dropFirst()), stdin: .descriptor(pipe[0]),
                                           stdout: .file(output, truncate: true), stderr: .file(log, truncate: true))
        } catch {
            close(pipe[1])
            throw error
        }
        return BenchChild(pid: child.pid, output: output, log: log, input: pipe[1])
    }

    /// Tells the child to stop.
    func finish() {
        if input >= 0 { close(input) }
        input = -1
    }

    /// What the child has written to its log so far.
    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// Whether the child has exited (reaped then, without waiting).
    var hasExited: Bool {
        if status != nil { return true }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return false }
        status = ChildProcess.exitStatus(raw)
        return true
    }

    /// Waits for the child (killed after `timeoutSeconds`) and returns its exit status.
    @discardableResult
    func wait(timeoutSeconds: Double? = nil) -> Int32 {
        if let status { return status }
        let exited = ChildProcess(pid: pid).wait(timeoutSeconds: timeoutSeconds)
        status = exited
        return exited
    }

    /// Stops the child, waits for it and reads what it wrote as JSON.
    func collect<Result: Decodable>(_ type: Result.Type, timeoutSeconds: Double? = nil) throws -> Result {
        finish()
        let status = wait(timeoutSeconds: timeoutSeconds)
        guard status == 0 else { throw ValidationError("\(pid) failed (status \(status)); see \(log)") }
        return try JSONDecoder().decode(Result.self, from: Data(contentsOf: URL(fileURLWithPath: output)))
    }

    /// Ends a child that was never collected (the bench failed half-way).
    func kill() {
        finish()
        guard !hasExited else { return }
        Glibc.kill(pid, SIGKILL)
        wait()
    }

    /// In the child: a flag set once the bench closes this process's standard input.
    static func stopWhenInputCloses() -> StopFlag {
        let stop = StopFlag()
        Thread {
            var byte: UInt8 = 0
            while read(0, &byte, 1) > 0 {}
            stop.set()
        }.start()
        return stop
    }
}

/// Set once, read by every thread of a child: time to stop.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}
