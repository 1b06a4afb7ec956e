// stol-favoritesd: the only writer of favourites. Thin wiring; the logic is in STOLFavorites.
import ArgumentParser
import Foundation
import Logging
import STOLFavorites
import STOLDaemonOptions
import STOLRuntime
import STOLSandbox

struct FavoritesDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-favoritesd",
        abstract: "Serve each Unix user's private favourites over a local socket.",
        discussion: """
            Keeps one SQLite file per user, <state-dir>/favorites/<uid>.sqlite (mode 0600), \
            holding only taxon ids and the time each was saved. A user's file is open while \
            they use it and closed after a minute unused (at most 64 are open at once). The caller is identified by \
            the kernel (SO_PEERCRED), never by the request, so no user can read, change or \
            clear another user's favourites.

            Under systemd the socket is passed in (FileDescriptorName=favorites); otherwise \
            the daemon binds <runtime-dir>/favorites.sock itself with mode 0666. It needs a \
            listening socket, not an accepted connection (use Accept=no). SIGTERM or SIGINT \
            finish in-flight requests and exit 0.

            Environment: STOL_STATE_DIR (default /var/lib/stol), STOL_RUNTIME_DIR (default \
            /run/stol), STOL_LOG_LEVEL (default info; uids and taxon ids are logged at debug only).
            """)

    @Option(name: .customLong("state-dir"), help: "State directory (default: $STOL_STATE_DIR or /var/lib/stol).")
    var stateDirectory: String?

    @Option(name: .customLong("socket"), help: "Socket to bind when not socket-activated (default: $STOL_RUNTIME_DIR/favorites.sock).")
    var socketPath: String?

    @OptionGroup var server: ServerOptions

    func run() async throws {
        LoggingSetup.bootstrap()
        let logger = Logger(label: "stol-favoritesd")
        var paths = RuntimePaths.fromEnvironment()
        if let stateDirectory { paths.stateDirectory = stateDirectory }
        let source = try SocketActivation.socket(named: "favorites", fallbackPath: socketPath ?? paths.favoritesSocket,
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
            logger.critical("stol-favoritesd needs a listening socket but was handed an accepted connection; configure the socket unit with Accept=no")
            throw ExitCode(78)  // EX_CONFIG
        }
        let registry = FavoritesRegistry(directory: paths.favoritesDirectory, logger: logger)
        let server = NIOFramedServer(service: FavoritesService(registry: registry),
                                     listeningSocket: fd, configuration: server.configuration(name: "favorites"),
                                     logger: logger)
        // Closes the files of users idle for a minute (FavoritesRegistry.Limits).
        try await Daemon.run([server, IdleStoreCloser(registry: registry)], logger: logger)
    }
}

// In top-level code `FavoritesDaemon.main()` and `run()` resolve to the synchronous
// `ParsableCommand` versions; inside an async function the async ones are chosen.
func runDaemon() async {
    await FavoritesDaemon.main()
}

await runDaemon()
