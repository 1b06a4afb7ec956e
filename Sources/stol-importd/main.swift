import ArgumentParser
import Foundation
import Logging
import STOLImport
import STOLDaemonOptions
import STOLRuntime
import STOLSandbox

/// `stol-importd`: the import coordinator. Wiring only.
@main
struct ImportDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-importd",
        abstract: "Coordinate reference-database imports for STOL administrators.",
        discussion: """
            Accepts requests only from root and members of the admin group (SO_PEERCRED and \
            SO_PEERGROUPS). An import arrives as an open file descriptor (SCM_RIGHTS) and is handed to \
            a fresh stol-verifyd over verify.sock; this daemon never parses the file itself. It writes \
            the verified database to databases/.staging/, checks its SHA-256, fsyncs it and renames it \
            over databases/reference.sqlite; activation state is databases/activation.json, replaced the \
            same way. At start it removes what an interrupted import left in databases/. Serves the \
            socket systemd passes (FileDescriptorName=import) or binds --socket with mode 0660.
            Environment: STOL_RUNTIME_DIR, STOL_STATE_DIR, STOL_ADMIN_GROUP, STOL_LOG_LEVEL. Test only: \
            STOL_TEST_PAUSE_AT, STOL_TEST_PAUSE_FILE.
            """)

    @Option(help: "Group whose members may import (default: $STOL_ADMIN_GROUP or stol-admin).")
    var adminGroup: String?

    @Option(help: "State directory holding databases/ (default: $STOL_STATE_DIR or /var/lib/stol).")
    var stateDir: String?

    @Option(help: "Socket path when not socket-activated (default: $STOL_RUNTIME_DIR/import.sock).")
    var socket: String?

    @OptionGroup var server: ServerOptions

    func run() async throws {
        LoggingSetup.bootstrap()
        let logger = Logger(label: "stol.importd")
        var paths = RuntimePaths.fromEnvironment()
        if let stateDir { paths.stateDirectory = stateDir }
        let groupName = adminGroup ?? ProcessInfo.processInfo.environment["STOL_ADMIN_GROUP"] ?? "stol-admin"
        let groupID = STOLRuntime.groupID(named: groupName)
        if groupID == nil {
            logger.notice("admin group does not exist; only root may import", metadata: ["group": "\(groupName)"])
        }
        let pausePoints = TestPausePoints.fromEnvironment()
        if pausePoints.isArmed {
            logger.notice("test pause points armed", metadata: ["stages": "\(pausePoints.armedStages.joined(separator: ","))"])
        }
        let coordinator = ImportCoordinator(paths: paths, configuration: .init(adminGroupID: groupID),
                                            pausePoints: pausePoints)
        do {
            try coordinator.store.prepare(logger: logger)
        } catch {
            logger.error("cannot prepare the state directory", metadata: ["error": "\(error.protocolError.message)"])
            throw ExitCode(78)  // EX_CONFIG
        }
        let source = try SocketActivation.socket(named: "import", fallbackPath: socket ?? paths.importSocket,
                                                 mode: 0o660, logger: logger)
        do {
            try Sandbox.enterDaemon()  // no programs, no sockets but Unix ones
        } catch {
            logger.critical("cannot sandbox itself", metadata: ["error": "\(error)"])
            throw ExitCode(78)  // EX_CONFIG
        }
        if SandboxProbe.isRequested() {
            logger.notice("sandbox probe: \(SandboxProbe.json(SandboxProbe.run(stateDirectory: paths.stateDirectory)))")
        }
        let server = BlockingFramedServer(service: coordinator, source: source,
                                          configuration: server.configuration(name: "import"), logger: logger)
        try await Daemon.run([server], logger: logger)
    }
}
