import Glibc
import STOLProtocol
import STOLTransport

/// What went wrong for the user, with the exit code scripts can rely on.
public enum ClientError: Error, CustomStringConvertible {
    /// No socket, or nothing listening on it.
    case serviceNotRunning(service: String, path: String)
    /// The socket exists but this user may not connect (e.g. import.sock without stol-admin).
    case socketPermissionDenied(service: String, path: String)
    /// The service answered with a typed error.
    case server(ProtocolError)
    case transport(service: String, TransportError)
    /// No answer within the client's deadline (`--timeout`).
    case timedOut(service: String, after: Duration)
    case usage(String)
    case local(String)
    /// A file given to read is not what the command takes (a damaged or foreign
    /// favourites export or backup); nothing was changed.
    case badFile(String)

    /// Exit codes (documented in `stol-client --help` and the README).
    public enum ExitCode: Int32 {
        case success = 0
        case failure = 1
        case usage = 64  // sysexits EX_USAGE, as swift-argument-parser uses for parse errors
        case notFound = 3
        case permissionDenied = 4
        case serviceUnavailable = 5
        case invalidRequest = 6
        case verificationFailed = 7
        case unimplemented = 8
        case deleted = 9
        case badFile = 65  // sysexits EX_DATAERR
    }

    public var exitCode: ExitCode {
        switch self {
        case .serviceNotRunning, .timedOut: .serviceUnavailable
        case .socketPermissionDenied: .permissionDenied
        case .usage: .usage
        case .badFile: .badFile
        case .transport(_, let error) where error.isConnectionLost: .serviceUnavailable  // a daemon restarted or stopped
        case .local, .transport: .failure
        case .server(let error):
            switch error.code {
            case .notFound, .releaseNotInstalled: .notFound
            case .taxonDeleted: .deleted
            case .permissionDenied: .permissionDenied
            case .unavailable, .busy: .serviceUnavailable
            case .invalidRequest, .frameTooLarge, .malformedFrame: .invalidRequest
            case .unimplemented: .unimplemented
            case .fileUnreadable, .fileTooLarge, .fileTooSmall, .notAStolFile, .checksumMismatch, .signatureInvalid,
                 .incompatibleSchema, .databaseCorrupt, .decompressionLimit, .unknownKey, .keyExpired, .keyRevoked,
                 .contentHashMismatch, .deltaBaseMismatch, .idNamespaceMismatch, .downgradeRefused,
                 .formatVersionNotAllowed: .verificationFailed
            default: .failure
            }
        }
    }

    public var description: String {
        switch self {
        case .serviceNotRunning(let service, let path):
            "the \(service) service is not running (nothing listens on \(path)). Start your own with " +
                "`stol-client serve --detach` (no root needed), or the system's with `systemctl start stol-\(service)d.socket`; " +
                "set STOL_RUNTIME_DIR if it runs elsewhere."
        case .socketPermissionDenied(let service, let path):
            "you may not use the \(service) service (\(path) is restricted; ask an administrator to add you to stol-admin)."
        case .server(let error):
            // The server's text may carry a less trusted process's (the verifier's, relayed).
            "\(TextFormatter.escapingControlCharacters(error.message)) [\(error.code.name)]"
        case .transport(let service, let error):
            "talking to the \(service) service failed: \(error)"
        case .timedOut(let service, let after):
            "the \(service) service did not answer within \(after.components.seconds) s (stopped, or overloaded); "
                + "--timeout SECONDS waits longer, 0 for ever"
        case .usage(let message), .local(let message), .badFile(let message):
            message
        }
    }
}
