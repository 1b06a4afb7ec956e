import CSTOLSocket
import Glibc
import Logging

/// Where a daemon's socket comes from: handed over by systemd (or
/// `systemd-socket-activate`), or bound by the daemon itself when it runs without
/// activation (development, tests).
public enum SocketSource: Equatable, Sendable {
    /// A listening socket: serve many connections on it.
    case listening(fd: Int32, activated: Bool)
    /// An already-accepted connection (`Accept=yes`): serve exactly this one.
    case accepted(fd: Int32)
}

public enum SocketActivationError: Error, Equatable, CustomStringConvertible {
    case listenFDs(errno: Int32)
    case bind(path: String, errno: Int32)
    case noSocketNamed(String, available: [String])

    public var description: String {
        switch self {
        case .listenFDs(let code): "socket activation (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES) failed: \(String(cString: strerror(code)))"
        case .bind(let path, let code): "cannot bind \(path): \(String(cString: strerror(code)))"
        case .noSocketNamed(let name, let available):
            "systemd passed sockets \(available) but none named \(name)"
        }
    }
}

/// Socket activation as `sd_listen_fds_with_names(3)` defines it, read from the
/// environment here rather than through libsystemd, so that a daemon that needs
/// nothing else of systemd (the verifier) does not link it; and the fallback of
/// binding the socket path with the right mode.
public enum SocketActivation {
    /// The first fd systemd passes (SD_LISTEN_FDS_START).
    static let firstFD: Int32 = 3

    /// All sockets passed by the service manager, keyed by their `FileDescriptorName=`
    /// (`--fdname=` for `systemd-socket-activate`; "unknown" when unnamed).
    /// Unsets the activation variables so children do not inherit them.
    public static func passedSockets() throws(SocketActivationError) -> [(name: String, fd: Int32)] {
        let variables = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]
        let values = variables.map { getenv($0).map { String(cString: $0) } }
        for variable in variables { unsetenv(variable) }
        let passed = try passedDescriptors(listenPID: values[0], listenFDs: values[1], listenFDNames: values[2],
                                           processID: getpid())
        for (_, fd) in passed where fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 {
            throw .listenFDs(errno: errno)
        }
        return passed
    }

    /// The descriptors the activation variables describe, as `sd_listen_fds_with_names(3)`
    /// reads them: none unless `LISTEN_PID` is this process; then `LISTEN_FDS` (at least
    /// one) from fd 3 on, named by the colon-separated `LISTEN_FDNAMES` (one name each)
    /// or "unknown". A malformed value is `EINVAL`, as libsystemd answers it.
    public static func passedDescriptors(listenPID: String?, listenFDs: String?, listenFDNames: String?,
                                         processID: pid_t) throws(SocketActivationError) -> [(name: String, fd: Int32)] {
        guard let listenPID else { return [] }
        guard let pid = pid_t(listenPID), pid > 0 else { throw .listenFDs(errno: EINVAL) }
        guard pid == processID, let listenFDs else { return [] }
        guard let count = Int32(listenFDs), count > 0, count <= Int32.max - firstFD else { throw .listenFDs(errno: EINVAL) }
        let names = listenFDNames.map { $0.isEmpty ? [] : $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) }
            ?? Array(repeating: "unknown", count: Int(count))
        guard names.count == Int(count) else { throw .listenFDs(errno: EINVAL) }
        return names.enumerated().map { (name: $1, fd: firstFD + Int32($0)) }
    }

    /// The socket this daemon should serve.
    ///
    /// - Parameters:
    ///   - name: the `FileDescriptorName=` to pick when several sockets are passed.
    ///   - fallbackPath: where to bind when nothing was passed.
    ///   - mode: the permission bits of a self-bound socket (the unit's `SocketMode=`).
    public static func socket(named name: String, fallbackPath: String, mode: mode_t,
                              logger: Logger) throws(SocketActivationError) -> SocketSource {
        let passed = try passedSockets()
        if !passed.isEmpty {
            let chosen = passed.count == 1 ? passed[0] : passed.first { $0.name == name }
            guard let chosen else { throw .noSocketNamed(name, available: passed.map(\.name)) }
            if stol_socket_is_listening(chosen.fd) == 1 {
                logger.info("serving activated socket", metadata: ["name": "\(chosen.name)"])
                return .listening(fd: chosen.fd, activated: true)
            }
            logger.info("serving one activated connection", metadata: ["name": "\(chosen.name)"])
            return .accepted(fd: chosen.fd)
        }
        let fd = stol_bind_unix(fallbackPath, UInt32(mode), 128)
        guard fd >= 0 else { throw .bind(path: fallbackPath, errno: errno) }
        logger.info("not socket-activated; bound socket myself",
                    metadata: ["path": "\(fallbackPath)", "mode": "\(String(mode, radix: 8))"])
        return .listening(fd: fd, activated: false)
    }
}
