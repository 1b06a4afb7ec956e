import Foundation
import Logging
import STOLSandbox
import STOLTransport

/// Who a daemon is: the names its logs, socket and units use.
public struct DaemonIdentity: Sendable {
    /// The executable, e.g. `stol-taxonomyd`; the log label is `stol.taxonomyd`.
    public let executable: String
    /// The socket's `FileDescriptorName=` and the file name in the runtime directory.
    public let socketName: String
    /// Permission bits of a self-bound socket (the socket unit's `SocketMode=`).
    public let socketMode: mode_t

    public init(executable: String, socketName: String, socketMode: mode_t) {
        self.executable = executable
        self.socketName = socketName
        self.socketMode = socketMode
    }

    /// One scheme for every daemon: `stol.` and the executable's name after `stol-`.
    public var logLabel: String { "stol." + executable.replacingOccurrences(of: "stol-", with: "") }

    public func defaultSocketPath(_ paths: RuntimePaths) -> String {
        paths.socket(named: socketName)
    }

    public static let taxonomy = DaemonIdentity(executable: "stol-taxonomyd", socketName: "taxonomy", socketMode: 0o666)
    public static let favorites = DaemonIdentity(executable: "stol-favoritesd", socketName: "favorites", socketMode: 0o666)
    public static let importCoordinator = DaemonIdentity(executable: "stol-importd", socketName: "import", socketMode: 0o660)
    public static let verifier = DaemonIdentity(executable: "stol-verifyd", socketName: "verify", socketMode: 0o600)
}

/// What a daemon knows once its logging and paths are set up.
public struct DaemonContext: Sendable {
    public let identity: DaemonIdentity
    public let logger: Logger
    public let paths: RuntimePaths
    public let environment: [String: String]
}

/// The parts of the daemon skeleton every daemon shares, the verifier included:
/// logging and paths (``start(_:options:environment:)``), the socket
/// (``openSocket(_:options:)``) and the test-only sandbox probe. The serving
/// daemons' whole skeleton, `DaemonMain.run`, is in STOLServer (it runs a
/// swift-service-lifecycle group and talks to systemd); the verifier, which must
/// not start a thread before it has sandboxed itself, calls these and serves
/// synchronously, so it links neither.
public enum DaemonMain {
    /// Steps 1 of every daemon: logging and paths.
    public static func start(_ identity: DaemonIdentity, options: DaemonOptions,
                             environment: [String: String] = ProcessInfo.processInfo.environment) -> DaemonContext {
        LoggingSetup.bootstrap(environment: environment)
        return DaemonContext(identity: identity, logger: Logger(label: identity.logLabel),
                             paths: options.paths(environment: environment), environment: environment)
    }

    /// The socket systemd passed, or the one bound at `--socket` or the default path.
    public static func openSocket(_ context: DaemonContext, options: DaemonOptions) throws(DaemonStartupError) -> SocketSource {
        let identity = context.identity
        do {
            return try SocketActivation.socket(named: identity.socketName,
                                               fallbackPath: options.socketPath ?? identity.defaultSocketPath(context.paths),
                                               mode: identity.socketMode, logger: context.logger)
        } catch {
            throw DaemonStartupError(.config, error.description)
        }
    }

    /// Test only (`STOL_TEST_SANDBOX_PROBE`, compiled with `STOL_TEST_HOOKS`): what the
    /// unit alone lets the daemon write and execute, tried before the daemon's own
    /// filter (``SandboxProbe/runUnitLevel(stateDirectory:)``). Without the hooks it does nothing.
    public static func reportUnitLevelProbe(_ context: DaemonContext) {
        #if STOL_TEST_HOOKS
        if SandboxProbe.isRequested(context.environment) {
            let results = SandboxProbe.runUnitLevel(stateDirectory: context.paths.stateDirectory)
            context.logger.notice("\(SandboxProbe.unitLevelLabel): \(SandboxProbe.json(results))")
        }
        #endif
    }

    /// Test only (`STOL_TEST_SANDBOX_PROBE`, compiled with `STOL_TEST_HOOKS`): what the
    /// sandbox denies, tried from inside. Without the hooks it does nothing.
    public static func reportSandboxProbe(_ context: DaemonContext) {
        #if STOL_TEST_HOOKS
        if SandboxProbe.isRequested(context.environment) {
            context.logger.notice("sandbox probe: \(SandboxProbe.json(SandboxProbe.run(stateDirectory: context.paths.stateDirectory)))")
        }
        #endif
    }
}
