import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import Synchronization

/// `stol-bench attack-victim`: the other user of `stol-bench attack`, whose
/// latency an attack must not spoil. On two connections, one per daemon, it asks
/// for a taxon by id (random ids of every rank) and for its favourites' count, each
/// once every `--interval-ms`, `--requests` times, and prints the latencies (ms) as
/// a ``SoakResult`` under ``taxon`` and ``favoritesCount``; and as often, on a
/// third, a 16-byte frame's round trip to the echo server outside STOL
/// (``AttackEcho``), under ``echo``: the same round trip without the daemons.
struct AttackVictim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attack-victim", abstract: "The user an attack must not hurt (started by stol-bench attack).",
        shouldDisplay: false)

    static let taxon = "taxon"
    static let favoritesCount = "fav count"
    static let echo = "echo"

    @Option(help: "The attack's work directory (attack-workload.json, run/).") var work: String
    @Option(help: "Requests of each kind.") var requests: Int = 2000
    @Option(help: "Milliseconds from one request of a kind to the next.") var intervalMs: Double = 10
    @Option(help: "Seconds after which no further request is sent, however many are left.") var atMostSeconds: Double = 600

    func run() throws {
        let workload = try AttackWorkload.read(from: work + "/attack-workload.json")
        let taxa = workload.victimTaxa
        guard !taxa.isEmpty else { throw ValidationError("the workload has no taxa for the victim") }
        let paths = (taxonomy: work + "/run/taxonomy.sock", favorites: work + "/run/favorites.sock")
        // A user with a few favourites, known to both daemons before the clock starts.
        _ = try FavoritesClient(service: "favorites", path: paths.favorites).call(.with {
            $0.merge = .with { merge in
                merge.entries = taxa.prefix(20).map { id in .with { $0.taxonID = id; $0.createdAt = AttackWorkload.favoriteTime } }
            }
        })

        let result = Mutex(SoakResult())
        let interval = intervalMs / 1000
        let start = TaxonomyBench.now() + 1
        let end = start + atMostSeconds
        let echoPath = work + "/run/echo.sock"
        onThreads(3) { [requests] thread in
            let taxonomy = TaxonomyClient(service: "taxonomy", path: paths.taxonomy)
            let favorites = FavoritesClient(service: "favorites", path: paths.favorites)
            var echo: FrameSocket?
            var generator = SystemRandomNumberGenerator()
            let ping = [UInt8](repeating: 7, count: 16)
            func ask() throws {
                switch thread {
                case 0:
                    let id = taxa[Int.random(in: 0..<taxa.count, using: &generator)]
                    _ = try taxonomy.call(.with { $0.getTaxon = .with { $0.taxonID = id } })
                case 1:
                    _ = try favorites.call(.with { $0.count = Stol_V1_CountFavorites() })
                default:
                    if echo == nil { echo = try FrameSocket.connect(path: echoPath) }
                    try echo!.sendRaw([0, 0, 0, UInt8(ping.count)] + ping)
                    let (frame, _) = try echo!.receiveFrame()
                    guard frame.readableBytes == ping.count else { throw ValidationError("the echo sent back another frame") }
                }
            }
            for _ in 0..<5 { try? ask() }  // connected before the clock starts
            var samples: [Double] = []
            samples.reserveCapacity(requests)
            var errors = 0
            var messages: [String] = []
            for index in 0..<requests where TaxonomyBench.now() < end {
                // Paced, not a burst: each request at its time, or at once when behind it.
                let due = start + Double(index) * interval
                let wait = due - TaxonomyBench.now()
                if wait > 0 { usleep(useconds_t(wait * 1_000_000)) }
                let begin = TaxonomyBench.now()
                do {
                    try ask()
                    samples.append((TaxonomyBench.now() - begin) * 1000)
                } catch {
                    errors += 1
                    if messages.count < 3 { messages.append("\(error)") }
                }
            }
            let kind = [Self.taxon, Self.favoritesCount, Self.echo][thread]
            result.withLock {
                $0.samples[kind] = samples
                $0.errors[kind] = errors
                $0.messages += messages.map { "\(kind): \($0)" }
            }
        }
        FileHandle.standardOutput.write(try JSONEncoder().encode(result.withLock { $0 }))
    }
}
