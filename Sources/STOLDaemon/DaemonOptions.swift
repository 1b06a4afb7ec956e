import ArgumentParser
import Foundation
import STOLTransport

/// The options every daemon shares (`@OptionGroup`): where its state lives and
/// which socket it binds when not socket-activated. Each overrides the
/// environment (`STOL_STATE_DIR`, `STOL_RUNTIME_DIR`), which overrides the
/// installed defaults (``RuntimePaths``).
public struct DaemonOptions: ParsableArguments {
    @Option(name: .customLong("state-dir"),
            help: "State directory holding databases/ and favorites/ (default: $STOL_STATE_DIR or /var/lib/stol).")
    public var stateDirectory: String?

    @Option(name: .customLong("socket"),
            help: "Socket to bind when not socket-activated (default: the daemon's socket in $STOL_RUNTIME_DIR, or /run/stol).")
    public var socketPath: String?

    public init() {}

    /// The paths this daemon uses: the environment's, with the options applied.
    public func paths(environment: [String: String] = ProcessInfo.processInfo.environment) -> RuntimePaths {
        var paths = RuntimePaths.fromEnvironment(environment)
        if let stateDirectory { paths.stateDirectory = stateDirectory }
        return paths
    }
}
