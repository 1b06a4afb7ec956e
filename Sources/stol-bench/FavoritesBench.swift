import ArgumentParser

/// Favourites latency (issue 5). Not written yet.
struct FavoritesBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "favorites", abstract: "Favourites latency (not written yet).")
    func run() throws { throw ExitCode(1) }
}
