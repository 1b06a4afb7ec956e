import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLTaxonomy

/// `stol-bench soak`: every daemon under mixed load for a minute, as a shared
/// machine sees it — 16 clients of several users (one `soak-worker` process per
/// uid, started through `setpriv` when run as root) searching with and without
/// filters, reading details, comparing, asking for relatives and lineage batches
/// and writing favourites, while an import of a signed `.stol` runs, the
/// reference database is activated and deactivated again.
///
/// It prints throughput and p50/p99 per operation, the errors (there must be
/// none), and each daemon's RSS and open descriptors before the load and after
/// it (after the clients have gone). It exits 1 on an error, on descriptors that
/// did not come back, or on RSS that grew by more than ``rssGrowthLimitMiB``.
struct SoakBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "A minute of mixed load from several users with an import and a switch in the middle; errors, RSS, fds.")

    @Option(help: "Database the taxonomy daemon serves as bundled (e.g. out/reference.sqlite).") var database: String
    @Option(help: "A signed .stol to import mid-way (e.g. out/reference.stol); none: no import.") var file: String?
    @Option(help: "The public key file the .stol is signed for.") var publicKey: String?
    @Option(help: "Seconds of load (at least; it runs on until the import, activate and deactivate are done).")
    var seconds: Double = 60
    @Option(help: "Client connections in all (each has a taxonomy and a favourites connection).") var clients: Int = 16
    @Option(help: "Users (uids) the clients are spread over; needs root for more than one.") var users: Int = 4
    @Option(help: "First uid of the soak users (root only).") var firstUID: Int = 61_000
    @Option(help: "Directory for the state, staging and scratch files (needs 3× the database when importing).")
    var workDir: String = "/var/tmp"
    @Option(help: "Directory of the stol-* binaries (default: next to stol-bench).") var binDir: String?

    /// RSS a daemon may gain over the soak (the issue's bound for attacks: normal peak + 64 MiB).
    static let rssGrowthLimitMiB = 64.0
    /// Descriptors a daemon may hold beyond its count before the load (a log or database file reopened).
    static let fdGrowthLimit = 2

    func validate() throws {
        if (file == nil) != (publicKey == nil) { throw ValidationError("--file and --public-key go together") }
        guard clients >= users, users >= 1 else { throw ValidationError("need at least one client per user") }
    }

    func run() throws {
        let binaries = binDir ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let work = try SoakStack.makeWorkDirectory(in: workDir, prefix: "stolbench-soak")
        defer { try? FileManager.default.removeItem(atPath: work) }

        print("preparing the workload from \(database) …")
        let local = try TaxonomyDatabase(path: database, kind: .bundled, loadIndexes: false)
        let workload = try SoakWorkload(lookups: LookupQueries(database: local))
        try workload.write(to: work + "/workload.json")
        chmod(work + "/workload.json", 0o644)

        let stack = try SoakStack.start(binaries: binaries, work: work, database: database, publicKey: publicKey)
        defer { stack.stop() }
        try stack.warmUp()
        // Each user's clients through every operation a few times first: what a daemon
        // keeps per user (a favourites file and its readers open) is then in the
        // "before" figures, and growth is a leak.
        let users = getuid() == 0 ? self.users : 1
        func share(_ user: Int) -> Int { clients / users + (user < clients % users ? 1 : 0) }
        let warmUps = try (0..<users).map { user in
            try SoakWorker.start(binary: binaries + "/stol-bench", uid: getuid() == 0 ? firstUID + user : nil,
                                        clients: share(user), work: work, seed: user, rounds: 3)
        }
        let warmed = try warmUps.map { try $0.collect(SoakResult.self) }
        print("warm-up: \(warmed.reduce(0) { $0 + $1.samples.values.reduce(0) { $0 + $1.count } }) requests, "
              + "\(warmed.reduce(0) { $0 + $1.errors.values.reduce(0, +) }) errors")
        let before = stack.resources(settlingTo: nil)

        print("soak: \(clients) clients of \(users) user(s) for \(Int(seconds)) s\(file.map { ", importing \($0) mid-way" } ?? "") …")
        let start = TaxonomyBench.now()
        var workers: [BenchChild] = []
        defer { workers.forEach { $0.kill() } }
        for user in 0..<users {
            workers.append(try SoakWorker.start(
                binary: binaries + "/stol-bench", uid: getuid() == 0 ? firstUID + user : nil, clients: share(user),
                work: work, seed: user))
        }
        var events: [(String, Double)] = []
        var eventFailure: String?
        if let file {
            // An import, then a switch to the reference and back, while the load runs.
            while TaxonomyBench.now() - start < seconds / 6 { usleep(100_000) }
            do {
                events.append(("import started", TaxonomyBench.now() - start))
                try stack.client(["db", "import", "--json", file], log: "import-client.log")
                events.append(("import done", TaxonomyBench.now() - start))
                try stack.client(["db", "activate"], log: "activate.log")
                try stack.waitForActive(.reference)
                events.append(("reference active", TaxonomyBench.now() - start))
                let serveFrom = TaxonomyBench.now()
                while TaxonomyBench.now() - serveFrom < min(10, seconds / 6) { usleep(100_000) }
                try stack.client(["db", "deactivate"], log: "deactivate.log")
                try stack.waitForActive(.bundled)
                events.append(("bundled active again", TaxonomyBench.now() - start))
            } catch {
                eventFailure = "\(error)"
            }
        }
        while TaxonomyBench.now() - start < seconds { usleep(100_000) }
        workers.forEach { $0.finish() }
        let results = try workers.map { try $0.collect(SoakResult.self) }
        let wall = TaxonomyBench.now() - start
        let after = stack.resources(settlingTo: before)

        let failures = Self.printReport(results: results, wall: wall, events: events, eventFailure: eventFailure,
                                        before: before, after: after, users: users, clients: clients)
        if !failures.isEmpty {
            print("FAILED: \(failures.joined(separator: "; "))")
            throw ExitCode(1)
        }
    }

    static func printReport(results: [SoakResult], wall: Double, events: [(String, Double)], eventFailure: String?,
                            before: [SoakStack.Resources], after: [SoakStack.Resources], users: Int, clients: Int) -> [String] {
        var failures: [String] = []
        func cell(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        print("")
        print(String(format: "soak: %d clients of %d user(s), %.1f s; times in ms", clients, users, wall))
        print(cell("operation", 24) + cell("requests", 10) + cell("req/s", 9) + cell("p50", 9) + cell("p99", 9) + "errors")
        var total = 0, errors = 0
        for operation in SoakOperation.allCases {
            let samples = results.flatMap { $0.samples[operation.rawValue] ?? [] }.sorted()
            let failed = results.reduce(0) { $0 + ($1.errors[operation.rawValue] ?? 0) }
            total += samples.count
            errors += failed
            func percentile(_ p: Double) -> Double { samples.isEmpty ? 0 : samples[min(samples.count - 1, Int(Double(samples.count) * p))] }
            print(cell(operation.rawValue, 24) + cell("\(samples.count)", 10) + cell(String(format: "%.0f", Double(samples.count) / wall), 9)
                  + cell(String(format: "%.3f", percentile(0.5)), 9) + cell(String(format: "%.3f", percentile(0.99)), 9) + "\(failed)")
        }
        print(cell("all", 24) + cell("\(total)", 10) + cell(String(format: "%.0f", Double(total) / wall), 9) + cell("", 18) + "\(errors) (must be 0)")
        for message in results.flatMap(\.messages).prefix(5) { print("  error: \(message)") }
        if errors > 0 { failures.append("\(errors) errors") }
        if total == 0 { failures.append("no request was answered") }
        print("")
        for (event, at) in events { print(String(format: "  %6.1f s  %@", at, event)) }
        if let eventFailure {
            print("  import/activate/deactivate failed: \(eventFailure)")
            failures.append("the import or the switch failed")
        }
        print("")
        print(cell("daemon", 16) + cell("RSS start", 12) + cell("RSS end", 12) + cell("peak", 12) + cell("fds start", 11) + "fds end")
        for (first, last) in zip(before, after) {
            let mib = { (kib: Int) in String(format: "%.1f MiB", Double(kib) / 1024) }
            print(cell(first.name, 16) + cell(mib(first.rssKiB), 12) + cell(mib(last.rssKiB), 12) + cell(mib(last.peakKiB), 12)
                  + cell("\(first.fds)", 11) + "\(last.fds)")
            if last.fds > first.fds + fdGrowthLimit { failures.append("\(first.name) holds \(last.fds - first.fds) more descriptors") }
            if Double(last.rssKiB - first.rssKiB) / 1024 > rssGrowthLimitMiB {
                failures.append("\(first.name) RSS grew by \(String(format: "%.0f", Double(last.rssKiB - first.rssKiB) / 1024)) MiB")
            }
        }
        print("fds end: once every client has gone; RSS may grow by at most \(Int(rssGrowthLimitMiB)) MiB, fds by \(fdGrowthLimit)")
        return failures
    }
}
