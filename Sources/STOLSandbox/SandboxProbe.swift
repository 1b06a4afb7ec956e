import CSTOLSandbox
import Foundation
import Glibc

#if STOL_TEST_HOOKS

/// Test-only: what a sandboxed daemon can still do, tried from inside it.
///
/// With `STOL_TEST_SANDBOX_PROBE=1` in its environment a daemon runs this once,
/// right after it has sandboxed itself, and logs one line `sandbox probe: {…}`:
/// each attempt and its outcome (`allowed`, or `denied: <errno text>`). The
/// attempts are the attack of a compromised daemon on a shared machine: other
/// daemons' files through `/proc/<pid>/root`, signals to them, the state
/// directory, writes outside the daemon's own directory, an `AF_INET` socket,
/// `execve`. `STOL_TEST_PROBE_PIDS` names the other daemons (comma-separated).
/// The tests decide which outcomes each daemon must show; nothing here judges.
///
/// Compiled only with `STOL_TEST_HOOKS` (debug builds, and `make test`'s build of the
/// tests, which it installs for the systemd boot test): the installed
/// release build has no probe and no variable naming one
/// (`Tests/tools/check_binaries.py` checks).
public enum SandboxProbe {
    public static let variable = "STOL_TEST_SANDBOX_PROBE"
    public static let pidsVariable = "STOL_TEST_PROBE_PIDS"

    public static func isRequested(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        environment[variable] == "1"
    }

    /// Runs every attempt; `stateDirectory` is where the live data is (`/var/lib/stol`).
    public static func run(stateDirectory: String,
                           environment: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var results: [String: String] = [:]
        let me = getpid()
        func denied(_ code: Int32) -> String { "denied: \(String(cString: strerror(code)))" }
        func open(_ key: String, _ path: String, _ flags: Int32) {
            let fd = Glibc.open(path, flags | O_CLOEXEC, 0o600)
            if fd >= 0 {
                close(fd)
                if flags & O_CREAT != 0 { unlink(path) }  // leave nothing behind
                results[key] = "allowed"
            } else {
                results[key] = denied(errno)
            }
        }
        let create = O_WRONLY | O_CREAT | O_EXCL
        open("open_state_directory", stateDirectory, O_RDONLY | O_DIRECTORY)
        open("list_favorites", stateDirectory + "/favorites", O_RDONLY | O_DIRECTORY)
        // An installed release (databases/releases/<release>.sqlite); a process that may not
        // list the directory probes the path of older installations, denied all the same.
        let releases = stateDirectory + "/databases/releases"
        let installed = ((try? FileManager.default.contentsOfDirectory(atPath: releases)) ?? []).sorted()
            .first { $0.hasSuffix(".sqlite") }.map { releases + "/" + $0 } ?? stateDirectory + "/databases/reference.sqlite"
        open("read_reference_database", installed, O_RDONLY)
        open("list_databases", stateDirectory + "/databases", O_RDONLY | O_DIRECTORY)
        // The host's /dev/shm is shared by every process (PrivateDevices= keeps it).
        open("write_dev_shm", "/dev/shm/stol-probe-\(me)", create)
        open("write_databases", stateDirectory + "/databases/probe-\(me)", create)
        open("write_favorites", stateDirectory + "/favorites/probe-\(me)", create)
        open("write_state_directory", stateDirectory + "/probe-\(me)", create)
        open("write_etc", "/etc/stol-probe-\(me)", create)
        open("write_usr_share", "/usr/share/stol-probe-\(me)", create)
        open("write_tmp", "/tmp/stol-probe-\(me)", create)
        open("write_var_tmp", "/var/tmp/stol-probe-\(me)", create)
        open("read_etc_shadow", "/etc/shadow", O_RDONLY)
        for pid in (environment[pidsVariable] ?? "").split(separator: ",").compactMap({ pid_t($0) }) where pid > 0 && pid != me {
            open("write_proc_\(pid)_root_databases", "/proc/\(pid)/root\(stateDirectory)/databases/probe-\(me)", create)
            open("list_proc_\(pid)_root_favorites", "/proc/\(pid)/root\(stateDirectory)/favorites", O_RDONLY | O_DIRECTORY)
            open("read_proc_\(pid)_environ", "/proc/\(pid)/environ", O_RDONLY)
            results["signal_\(pid)"] = kill(pid, 0) == 0 ? "allowed" : denied(errno)
        }
        for (key, family) in [("socket_af_inet", AF_INET), ("socket_af_inet6", AF_INET6), ("socket_af_unix", AF_UNIX)] {
            let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
            results[key] = fd >= 0 ? "allowed" : denied(errno)
            if fd >= 0 { close(fd) }
        }
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { argv.forEach { free($0) } }
        let spawned = posix_spawn(&pid, "/bin/true", nil, nil, argv, nil)
        if spawned == 0 { waitpid(pid, nil, 0) }
        results["execve"] = spawned == 0 && pid > 0 ? "allowed" : denied(spawned)
        results["signal_parent"] = kill(getppid(), 0) == 0 ? "allowed" : denied(errno)
        results["effective_capabilities"] = effectiveCapabilities()
        return results
    }

    /// The effective capabilities as both probes report them: `none`, or their bits in hex.
    static func effectiveCapabilities() -> String {
        let capabilities = stol_effective_capabilities()
        return capabilities == 0 ? "none" : String(capabilities, radix: 16)
    }

    /// The line the daemons log: `{"attempt":"outcome",…}`, keys sorted by their UTF-8 bytes.
    public static func json(_ results: [String: String]) -> String {
        guard let data = try? encoder.encode(results) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
}
#endif
