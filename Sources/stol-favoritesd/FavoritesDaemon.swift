import ArgumentParser
import STOLDaemon
import STOLFavorites
import STOLServer

/// `stol-favoritesd`: the only writer of favourites. Wiring only: the skeleton is
/// `DaemonMain`, the logic `STOLFavorites`.
@main
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
            Exit status: 0 after SIGTERM or the idle exit; 64 usage; 71 the sandbox cannot be \
            entered; 78 misconfiguration (a socket that cannot be bound or an accepted connection).
            """)

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        // Its largest answer is a list of favourites (about 0.7 MiB for 50,000): a
        // quarter of taxonomyd's memory for unsent answers bounds its memory at
        // 256 MiB (docs/design/architecture.md, fairness).
        try await DaemonMain.run(.favorites, options: daemon, server: server, adjust: { configuration in
            configuration.maximumUnsentBytesInAll = 48 * 1024 * 1024
            configuration.maximumUnsentBytesPerUser = 12 * 1024 * 1024
        }) { context throws(DaemonStartupError) in
            let registry = FavoritesRegistry(directory: context.paths.favoritesDirectory, logger: context.logger)
            return { serving throws(DaemonStartupError) in
                [NIOFramedServer(service: FavoritesService(registry: registry), listeningSocket: try serving.listeningSocket(),
                                 configuration: serving.configuration, logger: context.logger, heartbeat: serving.heartbeat),
                 // Closes the files of users idle for a minute (FavoritesRegistry.Limits).
                 IdleStoreCloser(registry: registry)]
            }
        }
    }
}
