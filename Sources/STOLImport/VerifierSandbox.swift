import Foundation
import Glibc
import Logging
import STOLRuntime
import STOLSandbox
import CSTOLSandbox

/// The verifier's self-imposed sandbox: what `stol-verifyd` may still reach
/// after it has read its trusted key, taken its socket and created its scratch
/// file, and before it reads a byte of the untrusted file.
///
/// - Readable: the system's libraries and data (`/usr`, `/lib*`, `/opt` for a
///   toolchain's runtime), its own `/proc/self` and the CPU list (the Swift
///   runtime sizes its thread pool from it), `/dev/urandom`.
/// - Readable and writable: the scratch file (by descriptor) and `/dev/null`.
/// - No capability, even when started as root.
/// - Nothing else: not the state directory (databases, favourites), not the
///   sockets, not `/etc`, not `/proc/<other pid>/root/…` (Landlock judges the file
///   reached, not the path that reached it), no new sockets, no `connect`, no
///   `execve`, no signals to processes outside the sandbox.
///
/// Under systemd the unit adds its own walls (another user, `ProtectSystem=`,
/// `PrivateNetwork=`, …); under `make run` and in the tests this is all there is.
public enum VerifierSandbox {
    public static func policy(paths: RuntimePaths, scratch: ScratchFile) -> SandboxPolicy {
        SandboxPolicy(
            readable: ["/usr", "/lib", "/lib64", "/opt", "/proc/self", "/sys/devices/system/cpu", "/dev/urandom"],
            readWritable: ["/dev/null"],
            readWritableDescriptors: [scratch.descriptor],
            protected: [paths.stateDirectory, paths.runtimeDirectory])
    }

    /// Sandboxes the process; a kernel without Landlock is logged, not fatal.
    public static func enter(paths: RuntimePaths, scratch: ScratchFile, logger: Logger) throws -> SandboxReport {
        let report = try Sandbox.enter(policy(paths: paths, scratch: scratch))
        if let reason = report.landlockUnavailable {
            logger.warning("sandbox without Landlock: the file system is not restricted", metadata: ["reason": "\(reason)"])
        }
        logger.info("sandboxed", metadata: ["sandbox": "\(report)"])
        return report
    }

    /// Test-only (`STOL_VERIFYD_SANDBOX_PROBE=1`): tries, from inside the sandboxed
    /// verifier, what the sandbox must forbid, and logs one line
    /// `sandbox probe: {…}` with each outcome (`denied: <errno>` or `allowed`).
    public static func probe(paths: RuntimePaths) -> [String: String] {
        func outcome(_ rc: Int32) -> String {
            if rc >= 0 { close(rc); return "allowed" }
            return "denied: \(String(cString: strerror(errno)))"
        }
        var results: [String: String] = [:]
        results["open_state_directory"] = outcome(open(paths.stateDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        results["open_databases_directory"] = outcome(open(paths.databasesDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        results["read_reference_database"] = outcome(open(paths.referenceDatabase, O_RDONLY | O_CLOEXEC))
        results["write_state_directory"] = outcome(
            open(paths.stateDirectory + "/verifier-was-here", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600))
        results["write_tmp"] = outcome(
            open("/tmp/stol-verifier-was-here-\(getpid())", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600))
        results["write_var_tmp"] = outcome(
            open("/var/tmp/stol-verifier-was-here-\(getpid())", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600))
        results["read_etc_passwd"] = outcome(open("/etc/passwd", O_RDONLY | O_CLOEXEC))
        results["socket_af_inet"] = outcome(socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0))
        results["socket_af_unix"] = outcome(socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0))
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { argv.forEach { free($0) } }
        let spawned = posix_spawn(&pid, "/bin/true", nil, nil, argv, nil)
        if spawned == 0 { waitpid(pid, nil, 0) }
        results["execve"] = spawned == 0 && pid > 0 ? "allowed" : "denied: \(String(cString: strerror(spawned)))"
        results["signal_parent"] = kill(getppid(), 0) == 0 ? "allowed" : "denied: \(String(cString: strerror(errno)))"
        let capabilities = stol_effective_capabilities()
        results["effective_capabilities"] = capabilities == 0 ? "none" : String(capabilities, radix: 16)
        return results
    }
}
