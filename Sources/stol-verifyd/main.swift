import ArgumentParser
import Logging
import STOLImport
import STOLRuntime

/// `stol-verifyd`: the sandboxed verifier. Wiring only.
@main
struct VerifyDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-verifyd",
        abstract: "Verify one untrusted .stol file handed over as a file descriptor.",
        discussion: """
            Meant to run once per connection (systemd Accept=yes, or systemd-socket-activate --accept): \
            serves the one connection it is given, then exits. Without socket activation it binds \
            --socket with mode 0600 and serves connections one after another (development only). \
            Only the import coordinator's uid (and root) may use it.
            Environment: STOL_RUNTIME_DIR, STOL_LOG_LEVEL.
            """)

    @Option(help: "Socket path when not socket-activated (default: $STOL_RUNTIME_DIR/verify.sock).")
    var socket: String?

    func run() async throws {
        LoggingSetup.bootstrap()
        let logger = Logger(label: "stol.verifyd")
        let paths = RuntimePaths.fromEnvironment()
        let source = try SocketActivation.socket(named: "verify", fallbackPath: socket ?? paths.verifySocket,
                                                 mode: 0o600, logger: logger)
        let server = BlockingFramedServer(service: VerifierService(), source: source,
                                          configuration: ServerConfiguration(name: "verify"), logger: logger)
        try await Daemon.run([server], logger: logger)
    }
}
