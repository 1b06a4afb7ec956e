import Foundation
import Glibc
import Logging
import STOLSandbox
import STOLTransport

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
}
