import ArgumentParser
import Foundation
import STOLDaemon
import STOLImport
import STOLImportCore
import STOLServer
import STOLTransport

/// `stol-importd`: the import coordinator. Wiring only: the skeleton is
/// `DaemonMain`, the logic `ImportCoordinator`.
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
            A format version 1 file signs no content this daemon can check, so it is refused \
            (FORMAT_VERSION_NOT_ALLOWED) unless STOL_ALLOW_FORMAT_1=yes: then what it installs is the \
            verifier's word.
            Environment: STOL_RUNTIME_DIR, STOL_STATE_DIR, STOL_ADMIN_GROUP, STOL_ALLOW_FORMAT_1, \
            STOL_LOG_LEVEL.\(testHooks)
            Exit status: 0 after SIGTERM or the idle exit; 64 usage; 71 the sandbox cannot be entered; \
            78 misconfiguration (a state directory it cannot prepare, a socket that cannot be bound).
            """)

    /// The test-only variables, named only in a build with the test hooks (debug builds).
    #if STOL_TEST_HOOKS
    static let testHooks = " Test only: STOL_TEST_PAUSE_AT, STOL_TEST_PAUSE_FILE."
    #else
    static let testHooks = ""
    #endif

    @Option(help: "Group whose members may import (default: $STOL_ADMIN_GROUP or stol-admin).")
    var adminGroup: String?

    @Option(help: "A user id that may import too, besides root and the group (a private stack, stol-client serve, passes its owner's).")
    var adminUID: UInt32?

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await DaemonMain.run(.importCoordinator, options: daemon, server: server) { context throws(DaemonStartupError) in
            let logger = context.logger
            let groupName = adminGroup ?? context.environment["STOL_ADMIN_GROUP"] ?? "stol-admin"
            let groupID = STOLTransport.groupID(named: groupName)
            if groupID == nil && adminUID == nil {
                logger.notice("admin group does not exist; only root may import", metadata: ["group": "\(groupName)"])
            }
            let pausePoints = TestPausePoints.fromEnvironment(context.environment)
            if pausePoints.isArmed {
                logger.notice("test pause points armed", metadata: ["stages": "\(pausePoints.armedStages.joined(separator: ","))"])
            }
            let environment = context.environment
            let allowsVersion1 = ImportCoordinator.allowsFormatVersion1(environment["STOL_ALLOW_FORMAT_1"])
            if allowsVersion1 {
                logger.notice("format version 1 files allowed (STOL_ALLOW_FORMAT_1): what they install is the verifier's word")
            }
            let coordinator = ImportCoordinator(paths: context.paths,
                                                configuration: .init(adminGroupID: groupID, adminUserID: adminUID,
                                                                     trustedKeys: { TrustedKey.load(environment: environment) },
                                                                     allowsFormatVersion1: allowsVersion1),
                                                pausePoints: pausePoints)
            do throws(ImportError) {
                try coordinator.store.prepare(logger: logger)
            } catch {
                throw DaemonStartupError(.config, "cannot prepare the state directory: \(error.protocolError.message)")
            }
            return { serving in
                // A blocking server: it serves a listening socket or one accepted connection.
                [BlockingFramedServer(service: coordinator, source: serving.socket, configuration: serving.configuration,
                                      logger: logger, heartbeat: serving.heartbeat)]
            }
        }
    }
}
