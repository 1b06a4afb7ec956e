import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures

/// `stol-bench attack`: what a hostile user costs the others. A well-behaved
/// user's requests are timed on a quiet machine, then while another user (uid
/// 61100 through `setpriv` when root) pipelines requests for large answers
/// without reading them: six connections asking taxonomyd for 500 children at a
/// time, then one asking favoritesd for a 5,000-entry list. The daemons must stop
/// reading such a client (back-pressure) and cut it. Last, the same user loops on
/// the heaviest legal taxonomy requests on two connections, reading every answer
/// (relatives on NCBI's tree, 1000-id lineage batches, a 27,146-node subtree,
/// 1000 name lookups). The bystander's p99 must stay within 2× its quiet p99,
/// and each daemon's RSS within its quiet RSS + 64 MiB.
struct AttackBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attack",
        abstract: "Another user's p99 and the daemons' RSS while a user pipelines large answers without reading.")

    @Option(help: "Database the taxonomy daemon serves (e.g. out/reference.sqlite).") var database: String
    @Option(help: "Seconds each attack lasts.") var seconds: Double = 20
    @Option(help: "Requests of the bystander per phase and kind.") var requests: Int = 2000
    @Option(help: "Directory for the scratch state.") var workDir: String = "/var/tmp"
    @Option(help: "Directory of the stol-* binaries (default: next to stol-bench).") var binDir: String?

    static let attackerUID = 61_100
    /// A genus with thousands of species: every `children` answer is a full page.
    static let largeGenus: Int64 = 1883  // Streptomyces

    struct Phase {
        var name: String
        var taxonomy: TaxonomyBench.Latencies
        var favorites: TaxonomyBench.Latencies
        var peakKiB: [String: Int]
        var attacker: String
    }

    func run() throws {
        let binaries = binDir ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let work = try SoakStack.makeWorkDirectory(in: workDir, prefix: "stolbench-attack")
        defer { try? FileManager.default.removeItem(atPath: work) }
        print("preparing the workload from \(database) …")
        let local = try TaxonomyDatabase(path: database, kind: .bundled, loadIndexes: false)
        let workload = try SoakWorkload(lookups: LookupQueries(database: local))
        let searches = try workload.requests(.search) + workload.requests(.detail)

        let stack = try SoakStack.start(binaries: binaries, work: work, database: database, publicKey: nil)
        defer { stack.stop() }
        try stack.warmUp()
        let asAttacker = getuid() == 0 ? ["/usr/bin/setpriv", "--reuid=\(Self.attackerUID)", "--regid=\(Self.attackerUID)",
                                          "--clear-groups", "--"] : []
        // The attacker's 5,000 favourites, so that each list answer is about 170 KB.
        try run(asAttacker + [binaries + "/stol-bench", "attacker", "--socket", "\(work)/run/favorites.sock",
                              "--kind", "favorites", "--fill", "5000", "--seconds", "0"], log: "\(work)/fill.log")

        var phases: [Phase] = []
        phases.append(measure("quiet", stack: stack, searches: searches, attacker: nil))
        for (name, arguments) in [
            ("6 connections pipelining taxonomy children (500 per answer), never reading",
             ["--socket", "\(work)/run/taxonomy.sock", "--kind", "children", "--taxon", "\(Self.largeGenus)", "--connections", "6"]),
            ("1 connection pipelining the favourites list (5,000 entries), never reading",
             ["--socket", "\(work)/run/favorites.sock", "--kind", "favorites", "--connections", "1"]),
            ("2 connections looping the heaviest legal taxonomy requests, reading every answer",
             ["--socket", "\(work)/run/taxonomy.sock", "--kind", "heavy", "--taxon", "\(Self.largeGenus)", "--connections", "2"]),
        ] {
            let log = "\(work)/attack-\(phases.count).log"
            let command = asAttacker + [binaries + "/stol-bench", "attacker", "--seconds", "\(seconds)"] + arguments
            let attacker = try ChildProcess.start(command[0], Array(command.dropFirst()), log: log)
            // Measure once the attacker is sending (it says "started" after connecting).
            for _ in 0..<500 where !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("started") { usleep(10_000) }
            usleep(1_000_000)  // let its unsent answers pile up to the daemon's bound first
            var phase = measure(name, stack: stack, searches: searches, attacker: attacker.pid)
            _ = attacker.wait()
            phase.attacker = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
                .split(separator: "\n").last.map(String.init) ?? ""
            phases.append(phase)
        }
        let failures = Self.printReport(phases)
        if !failures.isEmpty {
            print("FAILED: \(failures.joined(separator: "; "))")
            throw ExitCode(1)
        }
    }

    /// The bystander's latencies (taxonomy searches and details, favourites checks
    /// and counts, one connection each, as this process's user) and the peak RSS
    /// of each daemon while they run.
    func measure(_ name: String, stack: SoakStack, searches: [Stol_V1_TaxonomyRequest], attacker: pid_t?) -> Phase {
        let taxonomy = TaxonomyClient(service: "taxonomy", path: "\(stack.work)/run/taxonomy.sock")
        let favorites = FavoritesClient(service: "favorites", path: "\(stack.work)/run/favorites.sock")
        var taxonomyTimes: [Double] = [], favoriteTimes: [Double] = []
        var taxonomyErrors = 0, favoriteErrors = 0
        var peak: [String: Int] = [:]
        let start = TaxonomyBench.now()
        for index in 0..<requests {
            var begin = TaxonomyBench.now()
            if (try? taxonomy.call(searches[index % searches.count])) == nil { taxonomyErrors += 1 }
            taxonomyTimes.append(TaxonomyBench.now() - begin)
            var request = Stol_V1_FavoritesRequest()
            if index % 2 == 0 { request.count = Stol_V1_CountFavorites() } else { request.isFavorite = .with { $0.taxonID = 9689 } }
            begin = TaxonomyBench.now()
            if (try? favorites.call(request)) == nil { favoriteErrors += 1 }
            favoriteTimes.append(TaxonomyBench.now() - begin)
            if index % 50 == 0 {
                for resources in stack.resources() { peak[resources.name] = max(peak[resources.name] ?? 0, resources.rssKiB) }
            }
        }
        let wall = TaxonomyBench.now() - start
        return Phase(name: name, taxonomy: TaxonomyBench.summarize(taxonomyTimes, wall: wall, errors: taxonomyErrors),
                     favorites: TaxonomyBench.summarize(favoriteTimes, wall: wall, errors: favoriteErrors),
                     peakKiB: peak, attacker: "")
    }

    func run(_ command: [String], log: String) throws {
        let child = try ChildProcess.start(command[0], Array(command.dropFirst()), log: log)
        guard child.wait() == 0 else { throw ValidationError("\(command.joined(separator: " ")) failed; see \(log)") }
    }

    static func printReport(_ phases: [Phase]) -> [String] {
        guard let quiet = phases.first else { return ["nothing measured"] }
        var failures: [String] = []
        func cell(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        func mib(_ kib: Int?) -> String { String(format: "%.0f MiB", Double(kib ?? 0) / 1024) }
        print("")
        print("a bystander's requests (another user) while a user pipelines large answers without reading; times in ms")
        for phase in phases {
            print(phase.name + (phase.attacker.isEmpty ? "" : "  [attacker: \(phase.attacker)]"))
            for (label, latencies, quietP99, daemon) in [
                ("  taxonomy search/detail", phase.taxonomy, quiet.taxonomy.p99, "stol-taxonomyd"),
                ("  favourites count/check", phase.favorites, quiet.favorites.p99, "stol-favoritesd"),
            ] {
                let ratio = quietP99 > 0 ? latencies.p99 / quietP99 : 0
                let grown = (phase.peakKiB[daemon] ?? 0) - (quiet.peakKiB[daemon] ?? 0)
                print(cell(label, 26) + String(format: "p50 %7.3f  p99 %7.3f  (%.2f× quiet; target ≤ 2)  errors %d  ",
                                               latencies.p50, latencies.p99, ratio, latencies.errors)
                      + "\(daemon) RSS \(mib(phase.peakKiB[daemon])) (quiet \(mib(quiet.peakKiB[daemon])); target ≤ +64 MiB)")
                if ratio > 2 { failures.append("\(daemon) p99 \(String(format: "%.1f", ratio))× quiet under '\(phase.name)'") }
                if grown > 64 * 1024 { failures.append("\(daemon) grew \(grown / 1024) MiB under '\(phase.name)'") }
                if latencies.errors > 0 { failures.append("\(latencies.errors) bystander errors under '\(phase.name)'") }
            }
        }
        return failures
    }
}
