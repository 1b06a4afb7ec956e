import ArgumentParser
import STOLDaemon
import STOLServer
import STOLTaxonomy

/// `stol-taxonomyd`: the read-only taxonomy server. Wiring only: the skeleton is
/// `DaemonMain`, the logic `STOLTaxonomy`.
@main
struct TaxonomyDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-taxonomyd",
        abstract: "Serve the STOL taxonomy (read-only) on a Unix socket.",
        discussion: """
            Serves browse, lookup and search requests (protocol/PROTOCOL.md) on the socket systemd \
            passes (FileDescriptorName=taxonomy), or binds --socket itself with mode 0666 when not \
            socket-activated. Opens the bundled database and, when the activation state asks for it, \
            the reference database, both read-only. Writes nothing but, when $CACHE_DIRECTORY names a \
            directory (systemd's CacheDirectory=), an image of each database's tree there, which every \
            later start reads instead of building the tree. SIGTERM finishes in-flight requests.
            Environment: STOL_RUNTIME_DIR, STOL_STATE_DIR, STOL_BUNDLED_DB, STOL_LOG_LEVEL, CACHE_DIRECTORY.
            Exit status: 0 after SIGTERM or the idle exit; 64 usage; 66 the bundled database cannot be \
            opened; 71 the sandbox cannot be entered; 78 misconfiguration (a socket that cannot be bound \
            or an accepted connection instead of a listening socket).
            """)

    @Option(help: "Bundled database (default: $STOL_BUNDLED_DB or /usr/share/stol/bundled.sqlite).")
    var bundled: String?

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await DaemonMain.run(.taxonomy, options: daemon, server: server) { context throws(DaemonStartupError) in
            var paths = context.paths
            if let bundled { paths.bundledDatabase = bundled }
            let provider: ActiveDatabaseProvider
            do throws(TaxonomyError) {
                provider = try ActiveDatabaseProvider(bundledPath: paths.bundledDatabase,
                                                      referencePath: paths.legacyReferenceDatabase,
                                                      releasesDirectory: paths.releasesDirectory,
                                                      activationPath: paths.activationState, logger: context.logger,
                                                      recheckInterval: .milliseconds(1),
                                                      pinnedLimits: .fromEnvironment(), treeImages: .fromEnvironment())
            } catch {
                throw DaemonStartupError(.noInput, "cannot open the bundled database: \(error.protocolError.message)")
            }
            return { serving throws(DaemonStartupError) in
                // First, so shut down last: a tree image being written is finished (within 8 s, under
                // systemd's and the private stack's 10 s before SIGKILL) after the last answer.
                [ShutdownDrainService { await TreeImageWrites.shared.finish(within: .seconds(8)) },
                 NIOFramedServer(service: TaxonomyService(provider: provider), listeningSocket: try serving.listeningSocket(),
                                 configuration: serving.configuration, logger: context.logger, heartbeat: serving.heartbeat)]
            }
        }
    }
}
