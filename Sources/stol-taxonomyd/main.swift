import ArgumentParser
import Logging
import STOLDaemonOptions
import STOLRuntime
import STOLSandbox
import STOLTaxonomy

/// `stol-taxonomyd`: the read-only taxonomy server. Wiring only.
@main
struct TaxonomyDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-taxonomyd",
        abstract: "Serve the STOL taxonomy (read-only) on a Unix socket.",
        discussion: """
            Serves browse, lookup and search requests (protocol/PROTOCOL.md) on the socket systemd \
            passes (FileDescriptorName=taxonomy), or binds --socket itself with mode 0666 when not \
            socket-activated. Opens the bundled database and, when the activation state asks for it, \
            the reference database, both read-only; writes nothing. SIGTERM finishes in-flight requests.
            Environment: STOL_RUNTIME_DIR, STOL_STATE_DIR, STOL_BUNDLED_DB, STOL_LOG_LEVEL.
            """)

    @Option(help: "Bundled database (default: $STOL_BUNDLED_DB or /usr/share/stol/bundled.sqlite).")
    var bundled: String?

    @Option(help: "State directory holding databases/ (default: $STOL_STATE_DIR or /var/lib/stol).")
    var stateDir: String?

    @Option(help: "Socket path when not socket-activated (default: $STOL_RUNTIME_DIR/taxonomy.sock).")
    var socket: String?

    @OptionGroup var server: ServerOptions

    func run() async throws {
        LoggingSetup.bootstrap()
        let logger = Logger(label: "stol.taxonomyd")
        var paths = RuntimePaths.fromEnvironment()
        if let bundled { paths.bundledDatabase = bundled }
        if let stateDir { paths.stateDirectory = stateDir }
        let provider: ActiveDatabaseProvider
        do {
            provider = try ActiveDatabaseProvider(bundledPath: paths.bundledDatabase, referencePath: paths.referenceDatabase,
                                                  activationPath: paths.activationState, logger: logger,
                                                  recheckInterval: .milliseconds(1))
        } catch {
            logger.critical("cannot open the bundled database", metadata: ["error": "\(error.protocolError.message)"])
            throw ExitCode(2)
        }
        let source = try SocketActivation.socket(named: "taxonomy", fallbackPath: socket ?? paths.taxonomySocket,
                                                 mode: 0o666, logger: logger)
        do {
            try Sandbox.enterDaemon()  // no programs, no sockets but Unix ones
        } catch {
            logger.critical("cannot sandbox itself", metadata: ["error": "\(error)"])
            throw ExitCode(78)  // EX_CONFIG
        }
        if SandboxProbe.isRequested() {
            logger.notice("sandbox probe: \(SandboxProbe.json(SandboxProbe.run(stateDirectory: paths.stateDirectory)))")
        }
        guard case .listening(let fd, _) = source else {
            logger.critical("stol-taxonomyd needs a listening socket (Accept=no)")
            throw ExitCode(2)
        }
        let server = NIOFramedServer(service: TaxonomyService(provider: provider), listeningSocket: fd,
                                     configuration: server.configuration(name: "taxonomy"), logger: logger)
        try await Daemon.run([server], logger: logger)
    }
}
