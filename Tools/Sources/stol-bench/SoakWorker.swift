import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLTestFixtures
import Synchronization

/// `stol-bench soak-worker`: the clients of one user in a soak. Started by
/// `stol-bench soak` (through `setpriv` as another uid); runs until its standard
/// input closes, then prints a ``SoakResult`` as JSON.
struct SoakWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak-worker", abstract: "One user's clients of a soak (started by stol-bench soak).",
        shouldDisplay: false)

    @Option(help: "The soak's work directory (workload.json, run/).") var work: String
    @Option(help: "Client threads, each with a taxonomy and a favourites connection.") var clients: Int
    @Option(help: "Where in the request lists this worker starts.") var seed: Int = 0
    @Option(help: "Stop after this many cycles through the operations (a warm-up), not at end of input.")
    var rounds: Int?

    func run() throws {
        let workload = try SoakWorkload.read(from: work + "/workload.json")
        var requests: [SoakOperation: [Stol_V1_TaxonomyRequest]] = [:]
        for operation in SoakOperation.allCases { requests[operation] = try workload.requests(operation) }
        let lists = requests
        // The soak ends this worker by closing its standard input.
        let stop = rounds == nil ? BenchChild.stopWhenInputCloses() : StopFlag()

        let result = Mutex(SoakResult())
        let taxonomySocket = work + "/run/taxonomy.sock", favoritesSocket = work + "/run/favorites.sock"
        let favoriteIDs = workload.favoriteIDs
        let seed = self.seed
        let steps = rounds.map { $0 * SoakOperation.allCases.count } ?? .max
        onThreads(clients) { client in
            let taxonomy = TaxonomyClient(service: "taxonomy", path: taxonomySocket)
            let favorites = FavoritesClient(service: "favorites", path: favoritesSocket)
            var local = SoakResult()
            var step = 0
            var favorite: Int64 = 0
            while step < steps && !stop.isSet {
                let operation = SoakOperation.allCases[step % SoakOperation.allCases.count]
                let round = step / SoakOperation.allCases.count + (seed * 16 + client) * 7919
                step += 1
                let begin = TaxonomyBench.now()
                do {
                    switch operation {
                    case .favoriteAdd, .favoriteCheck, .favoriteRemove, .favoriteList:
                        if operation == .favoriteAdd { favorite = favoriteIDs[round % favoriteIDs.count] }
                        var request = Stol_V1_FavoritesRequest()
                        switch operation {
                        case .favoriteAdd: request.add = .with { $0.taxonID = favorite }
                        case .favoriteCheck: request.isFavorite = .with { $0.taxonID = favorite }
                        case .favoriteRemove: request.remove = .with { $0.taxonID = favorite }
                        default: request.list = Stol_V1_ListFavorites()
                        }
                        _ = try favorites.call(request)
                    default:
                        guard let list = lists[operation], !list.isEmpty else { continue }
                        let request = list[round % list.count]
                        let response = try taxonomy.call(request)  // an error answer throws
                        // Every answer names its release; a pinned one, the release pinned.
                        guard !response.database.release.isEmpty,
                              request.release.isEmpty || response.database.release == request.release else {
                            throw ValidationError("answered from release '\(response.database.release)', asked '\(request.release)'")
                        }
                    }
                    local.samples[operation.rawValue, default: []].append((TaxonomyBench.now() - begin) * 1000)
                } catch {
                    local.errors[operation.rawValue, default: 0] += 1
                    if local.messages.count < 3 { local.messages.append("\(operation.rawValue): \(error)") }
                }
            }
            result.withLock { total in
                total.samples.merge(local.samples) { $0 + $1 }
                total.errors.merge(local.errors) { $0 + $1 }
                total.messages += local.messages
            }
        }
        let json = try JSONEncoder().encode(result.withLock { $0 })
        FileHandle.standardOutput.write(json)
    }
}

extension SoakWorker {
    /// Starts a `soak-worker` of `clients` clients as `uid` (nil: as this user).
    static func start(binary: String, uid: Int?, clients: Int, work: String, seed: Int, rounds: Int? = nil) throws -> BenchChild {
        var arguments = ["soak-worker", "--work", work, "--clients", "\(clients)", "--seed", "\(seed)"]
        if let rounds { arguments += ["--rounds", "\(rounds)"] }
        return try BenchChild.start(binary: binary, arguments, uid: uid, output: "\(work)/worker-\(seed).json",
                                    log: "\(work)/worker-\(seed).log")
    }
}
