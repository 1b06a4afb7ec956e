import ArgumentParser

/// The exit codes of every STOL daemon, from sysexits(3), so that one kind of
/// failure means one number whichever daemon hits it (and a unit can say
/// `RestartPreventExitStatus=` once for all of them). Argument errors exit 64
/// (EX_USAGE) through swift-argument-parser.
public enum DaemonExitCode: Int32, Sendable {
    /// A file the daemon must read is missing or unreadable (the bundled database).
    case noInput = 66
    /// The kernel refused something a daemon needs: its sandbox, the verifier's
    /// unnamed scratch file.
    case osError = 71
    /// Misconfiguration: a socket of the wrong kind (`Accept=yes` where the daemon
    /// serves a listening socket), a socket that cannot be bound, an unknown user
    /// or group, a state directory it cannot prepare.
    case config = 78

    public var exitCode: ExitCode { ExitCode(rawValue) }
}

/// Why a daemon could not start: logged once at critical, as one sentence, and
/// turned into its exit code by ``DaemonMain``.
public struct DaemonStartupError: Error, CustomStringConvertible {
    public let code: DaemonExitCode
    public let message: String

    public init(_ code: DaemonExitCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
