import Glibc
import STOLTransport

/// Why a private stack cannot start or stop.
public enum PrivateStackError: Error, CustomStringConvertible {
    case directory(PrivateDirectoryError)
    case alreadyRunning(pid_t, String)
    case system(String, Int32)
    /// A detached start ended before its sockets listened, with what it printed.
    case startFailed(String)
    case stopTimedOut(pid_t)
    /// Started by a service manager without the socket of one of the daemons.
    case missingPassedSocket(String, [String])
    /// Another process (a systemd user manager's `stol.socket`) listens on a socket's path.
    case managedElsewhere(String)

    public var description: String {
        switch self {
        case .directory(let error): error.description
        case .alreadyRunning(let pid, let directory):
            "your private stack already runs (pid \(pid), sockets in \(directory)); stop it with stol-client serve --stop"
        case .system(let what, let code): "\(what): \(String(cString: strerror(code)))"
        case .startFailed(let output): "the private stack did not start" + (output.isEmpty ? "" : ":\n" + output)
        case .stopTimedOut(let pid): "the private stack (pid \(pid)) did not stop within 30 s"
        case .missingPassedSocket(let socket, let passed):
            "the service manager passed no socket bound at \(socket) (passed: \(passed.joined(separator: ", "))); "
                + "its stol.socket must listen on all four"
        case .managedElsewhere(let socket):
            "something else listens on \(socket) (your systemd user manager's stol.socket?): it already serves your "
                + "private stack; to run this one instead: systemctl --user stop stol.socket"
        }
    }
}
