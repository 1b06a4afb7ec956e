import Foundation
import Glibc

/// Which STOL a client talks to, in one documented order (docs/private-stack.md;
/// the Python package follows the same):
///
/// 1. `STOL_RUNTIME_DIR` (or the client's `--runtime-dir`), when set: exactly there.
/// 2. The user's own private stack (`stol-client serve`), when its supervisor runs or
///    a systemd user manager listens for it (``PrivateStackPaths/isServing(uid:)``): a
///    user who started one meant it.
/// 3. The system service, `/run/stol`.
///
/// The choice never connects to a socket (a connection would start a daemon), and
/// sockets a crashed supervisor left behind are not taken for a running stack.
public struct ServiceDiscovery: Sendable, Equatable {
    /// Where the answer came from, as `stol-client status` says it.
    public enum Origin: String, Sendable, Equatable {
        /// `STOL_RUNTIME_DIR` or `--runtime-dir`.
        case explicit
        /// The user's private stack (`stol-client serve`).
        case privateStack = "private"
        /// The system service.
        case system
    }

    public var paths: RuntimePaths
    public var origin: Origin

    public init(paths: RuntimePaths, origin: Origin) {
        self.paths = paths
        self.origin = origin
    }

    /// The service a client of `uid` should use, given `environment` and an explicit directory.
    public static func locate(runtimeDirectory explicit: String? = nil, uid: uid_t = getuid(),
                              environment: [String: String] = ProcessInfo.processInfo.environment) -> ServiceDiscovery {
        var paths = RuntimePaths.fromEnvironment(environment)
        if let explicit, !explicit.isEmpty {
            paths.runtimeDirectory = explicit
            return ServiceDiscovery(paths: paths, origin: .explicit)
        }
        if let variable = environment["STOL_RUNTIME_DIR"], !variable.isEmpty {
            return ServiceDiscovery(paths: paths, origin: .explicit)
        }
        let privateStack = PrivateStackPaths.forUser(uid, environment: environment)
        if privateStack.isServing(uid: uid) {
            paths.runtimeDirectory = privateStack.runtimeDirectory
            paths.stateDirectory = privateStack.stateDirectory
            return ServiceDiscovery(paths: paths, origin: .privateStack)
        }
        return ServiceDiscovery(paths: paths, origin: .system)
    }

    /// One line for `status`: which service answered and where its sockets are.
    public var summary: String {
        switch origin {
        case .explicit: "the service at \(paths.runtimeDirectory) (STOL_RUNTIME_DIR or --runtime-dir)"
        case .privateStack: "your private stack at \(paths.runtimeDirectory) (stol-client serve; stop it with stol-client serve --stop)"
        case .system: "the system service at \(paths.runtimeDirectory)"
        }
    }
}
