import ArgumentParser
import Foundation
import Glibc
import STOLDaemon
import STOLImportCore
import STOLTransport
import STOLVerifier

/// `stol-verifyd`: the sandboxed verifier. Wiring only; the checks are
/// `VerifierService`, the sandbox `VerifierSandbox`.
///
/// Synchronous on purpose: it takes its socket, key and scratch file, sandboxes
/// itself (Landlock binds this thread and the threads it starts later), and only
/// then starts serving. No Swift concurrency, so no thread exists before the sandbox.
@main
struct VerifyDaemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-verifyd",
        abstract: "Verify one untrusted .stol file handed over as a file descriptor.",
        discussion: """
            Meant to run once per connection (systemd Accept=yes, or systemd-socket-activate --accept): \
            serves the one connection it is given, then exits. Without socket activation it binds \
            --socket with mode 0600 and serves connections one after another (development only). \
            Only the import coordinator's uid (--allowed-uid, default this process's own) and root may use it.

            Before it reads anything it sandboxes itself: Landlock (it can read system libraries and \
            write one anonymous temporary file, nothing else; no TCP; no signals outside), seccomp \
            (no new sockets, no connect, no execve) and no_new_privs. A kernel without Landlock is \
            logged as a warning.

            It trusts every public key (*.pub) in /usr/share/stol/keys and /etc/stol/keys, each until \
            its not-after date, except the ids listed in a file named revoked there; STOL_TRUSTED_KEY \
            (a colon-separated list of key files and directories) replaces both directories. A delta's \
            base comes as a second read-only descriptor. The decompressed database is held in an unnamed temporary file in \
            $TMPDIR (default /var/tmp), so nothing is left behind if the process is killed.

            Environment: STOL_TRUSTED_KEY, TMPDIR, STOL_RUNTIME_DIR, STOL_STATE_DIR (kept out of \
            reach), STOL_LOG_LEVEL.\(testHooks)
            Exit status: 0 after its connection; 64 usage; 71 the sandbox or the scratch file \
            cannot be set up; 78 misconfiguration (an unknown --allowed-user, a socket that cannot be bound).
            """)

    /// The test-only variables, named only in a build with the test hooks (debug builds).
    #if STOL_TEST_HOOKS
    static let testHooks = " Test only: STOL_TEST_PAUSE_AT, STOL_TEST_PAUSE_FILE, STOL_TEST_SANDBOX_PROBE, STOL_TEST_PROBE_PIDS."
    #else
    static let testHooks = ""
    #endif

    @OptionGroup var daemon: DaemonOptions

    @Option(help: "The user allowed to ask besides root: the import coordinator's (the units: stol-import).")
    var allowedUser: String?

    @Option(help: "The same as a uid (default, without either: this process's own uid, as under make run).")
    var allowedUID: UInt32?

    func run() throws {
        let context = DaemonMain.start(.verifier, options: daemon)
        let logger = context.logger
        let environment = context.environment
        let paths = context.paths
        let trustedKeys = TrustedKey.load(environment: environment)
        switch trustedKeys {
        case .success(let keys):
            logger.info("trusted keys", metadata: ["keys": "\(TrustedKey.describe(keys))"])
            for problem in keys.problems { logger.warning("a key file is not trusted: \(problem)") }
        case .failure(let error):
            logger.error("no trusted key: every verification will be refused", metadata: ["error": "\(error.protocolError.message)"])
        }
        var allowed = allowedUID ?? getuid()
        if let allowedUser {
            guard let uid = STOLTransport.userID(named: allowedUser) else {
                logger.critical("cannot start: no user named \(allowedUser) (--allowed-user)")
                throw DaemonExitCode.config.exitCode
            }
            allowed = uid
        }
        let pausePoints = TestPausePoints.fromEnvironment(environment)
        if pausePoints.isArmed {
            logger.notice("test pause points armed", metadata: ["stages": "\(pausePoints.armedStages.joined(separator: ","))"])
        }
        let source: SocketSource
        do throws(DaemonStartupError) {
            source = try DaemonMain.openSocket(context, options: daemon)
        } catch {
            logger.critical("cannot start: \(error.message)")
            throw error.code.exitCode
        }
        let scratch: ScratchFile
        let deltaScratch: ScratchFile
        let rowDeltaScratch: ScratchFile
        DaemonMain.reportUnitLevelProbe(context)
        do {
            scratch = try ScratchFile()
            deltaScratch = try ScratchFile()
            rowDeltaScratch = try ScratchFile()
            _ = try VerifierSandbox.enter(paths: paths, scratch: scratch, logger: logger)
        } catch {
            logger.critical("cannot start: \(error)")
            throw DaemonExitCode.osError.exitCode
        }
        DaemonMain.reportSandboxProbe(context)
        let service = VerifierService(
            configuration: .init(allowedUID: allowed, trustedKeys: trustedKeys),
            scratch: scratch, deltaScratch: deltaScratch, rowDeltaScratch: rowDeltaScratch, pausePoints: pausePoints)
        BlockingFramedServer(service: service, source: source, configuration: ServerConfiguration(name: DaemonIdentity.verifier.socketName),
                             logger: logger).serve()
    }
}
