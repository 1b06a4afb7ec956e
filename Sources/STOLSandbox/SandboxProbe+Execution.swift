import CSTOLSandbox
import Foundation
import Glibc

#if STOL_TEST_HOOKS

extension SandboxProbe {
    /// The line prefix of the unit-level probe's report (`unit-level probe: {…}`).
    public static let unitLevelLabel = "unit-level probe"

    /// Test-only: what the service unit alone lets a daemon write and execute, tried
    /// *before* the daemon installs its own seccomp filter (which forbids `execve`
    /// whatever the unit says), so that the unit's `NoExecPaths=`, `ExecPaths=`,
    /// `ReadOnlyPaths=` and system-call filter are tested on their own.
    ///
    /// Each attempt is what a compromised daemon would do to run a program of its
    /// choosing: a copy of `/usr/bin/true` in every directory it might write (run
    /// directly and through the dynamic loader), a program in an anonymous memory
    /// file, a program the system ships. `exec_own_binary` runs the daemon itself
    /// (`--help`): the one execution the unit must allow, so a probe that cannot
    /// execute anything is noticed. `exec_mounts` lists every mount point not
    /// mounted `noexec`, for the test to compare with the unit's `ExecPaths=`.
    /// Outcomes: `allowed` (the program ran and exited 0), `denied: …` (it could
    /// not be written, executed, or exited otherwise).
    public static func runUnitLevel(stateDirectory: String) -> [String: String] {
        var results: [String: String] = [:]
        let me = getpid()
        let program = FileManager.default.contents(atPath: "/usr/bin/true") ?? Data()
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/proc/self/exe"
        results["exec_own_binary"] = spawn(own, ["--help"])
        results["exec_usr_bin_true"] = spawn("/usr/bin/true", [])
        // Programs under /usr/lib that an ExecPaths=/usr/lib admitted (present, that is:
        // access(X_OK) already says no on a noexec mount).
        for program in ["/usr/lib/systemd/systemd-socket-proxyd", "/usr/lib/git-core/git"]
        where FileManager.default.fileExists(atPath: program) {
            results["exec_" + key(program)] = spawn(program, ["--version"])
        }
        let loader = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]
            .first { FileManager.default.fileExists(atPath: $0) }
        let directories = ["/tmp", "/var/tmp", "/dev/shm", "/run", "/run/lock", "/run/stol",
                           stateDirectory, stateDirectory + "/favorites", stateDirectory + "/databases",
                           stateDirectory + "/databases/releases"]
        for directory in directories {
            let name = key(directory)
            let copy = "\(directory)/stol-probe-exec-\(me)"
            let written = write(program, to: copy)
            results["write_" + name] = written
            guard written == "allowed" else {
                results["exec_copy_in_" + name] = "denied: not written (\(written))"
                continue
            }
            results["exec_copy_in_" + name] = spawn(copy, [])
            if let loader { results["exec_loader_on_copy_in_" + name] = spawn(loader, [copy]) }
            unlink(copy)
        }
        results["exec_memfd"] = executeFromMemory(program)
        results["exec_mounts"] = executableMounts().joined(separator: " ")
        results["effective_capabilities"] = effectiveCapabilities()
        return results
    }

    /// `/var/lib/stol` → `var_lib_stol`.
    private static func key(_ path: String) -> String {
        path.split(separator: "/").joined(separator: "_")
    }

    private static func denied(_ code: Int32) -> String { "denied: \(String(cString: strerror(code)))" }

    /// Runs `path` with `arguments`, its output discarded, and waits for it.
    private static func spawn(_ path: String, _ arguments: [String]) -> String {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else { return denied(spawned) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        if exited && code == 0 { return "allowed" }
        return exited ? "denied: exit status \(code)" : "denied: killed by signal \(status & 0x7f)"
    }

    /// Writes `program` to a new file at `path`, mode 0700.
    private static func write(_ program: Data, to path: String) -> String {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o700)
        guard fd >= 0 else { return denied(errno) }
        defer { close(fd) }
        return writeWhole(program, to: fd) ? "allowed" : denied(errno)
    }

    private static func writeWhole(_ program: Data, to fd: Int32) -> Bool {
        !program.isEmpty && program.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == program.count
    }

    /// `program` written into an anonymous memory file and run from `/proc/self/fd/N`.
    private static func executeFromMemory(_ program: Data) -> String {
        let fd = stol_memfd_create("stol-probe")
        guard fd >= 0 else { return "denied: memfd_create: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        guard writeWhole(program, to: fd) else { return "denied: the memory file cannot be written" }
        return spawn("/proc/self/fd/\(fd)", [])
    }

    /// Mount points (field 5 of `/proc/self/mountinfo`) whose mount options lack `noexec`;
    /// of mounts stacked on one point only the last, the one that is seen there.
    private static func executableMounts() -> [String] {
        guard let text = readWhole("/proc/self/mountinfo") else { return ["unreadable"] }
        var executable: [String: Bool] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 5 else { continue }
            executable[String(fields[4])] = !fields[5].split(separator: ",").contains("noexec")
        }
        return executable.filter(\.value).map(\.key).sorted()
    }

    /// A file read to its end: /proc files report no size, so read until `read` returns 0.
    private static func readWhole(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
#endif
