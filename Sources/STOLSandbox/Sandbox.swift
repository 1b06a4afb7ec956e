import CSTOLSandbox
import Glibc

/// What a process may still touch once it has sandboxed itself.
///
/// Landlock rules are allow-lists over file hierarchies: a path is reachable
/// only beneath a rule. So the policy names the few places a sandboxed process
/// needs and nothing that is an ancestor of live data (`/`, `/var`, the checkout
/// of a development stack); ``Sandbox/enter(_:)`` refuses a policy whose
/// readable roots contain a protected path.
public struct SandboxPolicy: Sendable, Equatable {
    /// Directories and files that stay readable (files read, directories listed).
    public var readable: [String]
    /// Files that stay readable and writable (not creatable: they must exist), such as `/dev/null`.
    public var readWritable: [String]
    /// Open descriptors of files that stay readable and writable (an anonymous scratch file).
    public var readWritableDescriptors: [Int32]
    /// Paths that must stay unreachable: a readable root that contains one of them is an error.
    public var protected: [String]

    public init(readable: [String] = [], readWritable: [String] = [], readWritableDescriptors: [Int32] = [],
                protected: [String] = []) {
        self.readable = readable
        self.readWritable = readWritable
        self.readWritableDescriptors = readWritableDescriptors
        self.protected = protected
    }
}

/// What ``Sandbox/enter(_:)`` put in place, for the log and the tests.
public struct SandboxReport: Sendable, Equatable, CustomStringConvertible {
    public var noNewPrivileges = false
    /// The Landlock ABI enforced, or nil with ``landlockUnavailable`` saying why.
    public var landlockABI: Int?
    public var landlockUnavailable: String?
    public var seccomp = false
    /// Every capability was dropped (a verifier started as root keeps only its uid).
    public var capabilitiesDropped = false
    /// Readable roots that do not exist on this machine (skipped).
    public var missingPaths: [String] = []

    public var description: String {
        let landlock = landlockABI.map { "Landlock ABI \($0)" } ?? "no Landlock (\(landlockUnavailable ?? "unknown"))"
        return "no_new_privs \(noNewPrivileges ? "on" : "off"), capabilities \(capabilitiesDropped ? "none" : "kept"), " +
            "\(landlock), seccomp \(seccomp ? "on" : "off")"
    }
}

public enum SandboxError: Error, Equatable, CustomStringConvertible {
    case noNewPrivileges(errno: Int32)
    case capabilities(errno: Int32)
    case landlock(String)
    case seccomp(errno: Int32)
    case policy(String)

    public var description: String {
        switch self {
        case .noNewPrivileges(let code): "PR_SET_NO_NEW_PRIVS failed: \(String(cString: strerror(code)))"
        case .capabilities(let code): "dropping the capabilities failed: \(String(cString: strerror(code)))"
        case .landlock(let detail): "Landlock failed: \(detail)"
        case .seccomp(let code): "loading the seccomp filter failed: \(String(cString: strerror(code)))"
        case .policy(let detail): "sandbox policy refused: \(detail)"
        }
    }
}

/// A process sandboxing itself, as OpenSSH's pre-authentication child does: after
/// it has opened what it needs and before it reads untrusted bytes.
///
/// 1. `PR_SET_NO_NEW_PRIVS`: nothing it executes could gain privileges (and
///    seccomp and Landlock require it of unprivileged processes); every
///    capability is dropped, so a process started as root keeps only its uid.
/// 2. Landlock: every file-system right is handled, and allowed only beneath the
///    policy's paths; TCP bind/connect are denied (ABI 4+), and so are signals
///    and abstract Unix sockets outside the sandbox (ABI 6+). A kernel without
///    Landlock is reported, not fatal: the caller logs it.
/// 3. seccomp, on every thread: no new sockets, no `connect`, no `execve`, no
///    `io_uring`, no `ptrace`, no namespaces or mounts (EPERM).
///
/// Landlock binds the calling thread and the threads it starts later, so call
/// this from the main thread before any other thread exists.
public enum Sandbox {
    public static func enter(_ policy: SandboxPolicy) throws(SandboxError) -> SandboxReport {
        try check(policy)
        var report = SandboxReport()
        guard stol_no_new_privs() == 0 else { throw .noNewPrivileges(errno: errno) }
        report.noNewPrivileges = true
        // A capset refused (a unit's filter) matters only if there was something to drop.
        if stol_drop_capabilities() != 0 && stol_effective_capabilities() != 0 {
            throw .capabilities(errno: errno)
        }
        report.capabilitiesDropped = stol_effective_capabilities() == 0

        let abi = stol_landlock_abi()
        if abi < 0 {
            report.landlockUnavailable = -abi == ENOSYS ? "the kernel is built without Landlock"
                : -abi == EOPNOTSUPP ? "Landlock is disabled at boot (lsm= on the kernel command line)"
                : String(cString: strerror(-abi))
        } else {
            try restrict(policy, abi: abi, report: &report)
            report.landlockABI = Int(abi)
        }

        let rc = stol_seccomp_deny_network_and_exec()
        guard rc == 0 else { throw .seccomp(errno: -rc) }
        report.seccomp = true
        return report
    }

    /// The long-running daemons' own walls, on top of their unit's: no_new_privs and
    /// a seccomp filter against running programs and opening sockets other than Unix
    /// ones (and the rest of the verifier's list). They keep their file system access.
    public static func enterDaemon() throws(SandboxError) {
        guard stol_no_new_privs() == 0 else { throw .noNewPrivileges(errno: errno) }
        let rc = stol_seccomp_daemon()
        guard rc == 0 else { throw .seccomp(errno: -rc) }
    }

    /// The real, absolute form of `path` (symlinks resolved), or nil if it does not exist.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func contains(_ root: String, _ path: String) -> Bool {
        root == "/" || path == root || path.hasPrefix(root + "/")
    }

    private static func check(_ policy: SandboxPolicy) throws(SandboxError) {
        let protected = policy.protected.map { realPath($0) ?? $0 }
        for root in policy.readable + policy.readWritable {
            guard let resolved = realPath(root) else { continue }
            if let inside = protected.first(where: { contains(resolved, $0) }) {
                throw .policy("\(root) contains the protected path \(inside)")
            }
        }
    }

    private static func restrict(_ policy: SandboxPolicy, abi: Int32, report: inout SandboxReport) throws(SandboxError) {
        let ruleset = stol_landlock_create_ruleset(abi)
        guard ruleset >= 0 else { throw .landlock("create_ruleset: \(String(cString: strerror(errno)))") }
        defer { close(ruleset) }
        func allow(_ fd: Int32, _ access: UInt64, _ name: String) throws(SandboxError) {
            guard stol_landlock_allow(ruleset, fd, access, abi) == 0 else {
                throw .landlock("add_rule \(name): \(String(cString: strerror(errno)))")
            }
        }
        for (paths, access) in [(policy.readable, stol_landlock_fs_read()),
                                (policy.readWritable, stol_landlock_fs_read_write_file(abi))] {
            for path in paths {
                let fd = stol_open_path(path)
                guard fd >= 0 else {
                    report.missingPaths.append(path)
                    continue
                }
                defer { close(fd) }
                try allow(fd, access, path)
            }
        }
        for fd in policy.readWritableDescriptors {
            try allow(fd, stol_landlock_fs_read_write_file(abi), "descriptor \(fd)")
        }
        guard stol_landlock_restrict_self(ruleset) == 0 else {
            throw .landlock("restrict_self: \(String(cString: strerror(errno)))")
        }
    }
}
