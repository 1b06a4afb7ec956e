import ArgumentParser
import Foundation
import GRDB
import Glibc
import STOLClientKit
import STOLModel
import STOLProtocol
import STOLTestFixtures

/// `stol-bench releases`: several full releases installed side by side, as issue 21
/// measures them. Through the real `stol-taxonomyd` and its socket:
///
/// - a lineage batch from the default release, and the same batch pinned to each other
///   release once it is loaded (target: at most 1.5× the default's time);
/// - the first answer from a cold release, a lookup and a lineage batch (target ≤ 3 s);
/// - batches spread over all releases for a while: the server's peak RSS (VmHWM,
///   target ≤ 1 GiB) with every release loaded;
/// - `diff` of the default and the next release in a fresh server: time (target ≤ 30 s)
///   and the server's peak RSS (target ≤ 1 GiB).
struct ReleasesBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "releases",
        abstract: "Several full releases side by side: pinned batches, cold releases, peak RSS, a diff (issue 21's targets).")

    @Option(help: "The bundled database.") var bundled: String
    @Option(name: .customLong("release"), help: ArgumentHelp("NAME=FILE of an installed release (repeat; the first is the default).",
                                                             valueName: "name=file"))
    var releases: [String]
    @Option(help: "Ids per lineage batch run (sent 1000 per request).") var ids: Int = 20_000
    @Option(help: "Seconds of batches spread over every release.") var spreadSeconds: Double = 20
    @Option(help: "Directory of stol-taxonomyd (default: next to stol-bench).") var binDir: String?

    func validate() throws {
        guard releases.count >= 2 else { throw ValidationError("give at least two --release NAME=FILE") }
        for release in releases where release.split(separator: "=", maxSplits: 1).count != 2 {
            throw ValidationError("--release \(release): give NAME=FILE")
        }
    }

    private var pairs: [(name: String, file: String)] {
        releases.map { let parts = $0.split(separator: "=", maxSplits: 1); return (String(parts[0]), String(parts[1])) }
    }

    /// One taxonomy daemon over the releases, in a scratch state directory.
    final class Server {
        let scratch: String
        let socket: String
        let process: ChildProcess

        init(binaries: String, bundled: String, releases: [(name: String, file: String)]) throws {
            scratch = try TemporaryDirectory.make(prefix: "stolreleases")
            let directory = scratch + "/state/databases/releases"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for release in releases {
                try FileManager.default.createSymbolicLink(atPath: directory + "/\(release.name).sqlite",
                                                           withDestinationPath: URL(fileURLWithPath: release.file).path)
            }
            try JSONEncoder().encode(ActivationState(useReferenceDB: true, defaultRelease: releases[0].name))
                .write(to: URL(fileURLWithPath: scratch + "/state/databases/activation.json"))
            socket = BenchTaxonomyDaemon.socket(in: scratch)
            process = try BenchTaxonomyDaemon.start(binaries: binaries, bundled: bundled, scratch: scratch,
                                                    environment: ["STOL_PINNED_RELEASES_MAX": "\(max(2, releases.count - 1))"])
            _ = waitUntil(seconds: 5) { FileManager.default.fileExists(atPath: socket) }
        }

        deinit {
            process.stop()
            try? FileManager.default.removeItem(atPath: scratch)
        }

        func client() -> TaxonomyClient { TaxonomyClient(service: "taxonomy", path: socket, timeout: .seconds(600)) }

        func status(release: String = "") -> Stol_V1_StatusResponse? {
            try? client().ask(.with { $0.release = release; $0.status = .init() }, as: Stol_V1_StatusResponse.self)
        }

        /// VmHWM and VmRSS of the daemon, in MiB.
        func memory() -> (peak: Double, now: Double) {
            let text = (try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8)) ?? ""
            func field(_ name: String) -> Double {
                guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
                return (Double(line.split(separator: " ").dropFirst().first { !$0.isEmpty }.map(String.init) ?? "") ?? 0) / 1024
            }
            return (field("VmHWM"), field("VmRSS"))
        }

        /// Seconds for one lineage batch of `queries` (whole NCBI tree, ids), pinned to `release`.
        func lineageBatch(_ queries: [String], release: String) throws -> Double {
            let client = client()
            var remaining = queries[...]
            let started = Date()
            var answered = 0
            try client.pipeline(next: { () throws(ClientError) -> Stol_V1_TaxonomyRequest? in
                guard !remaining.isEmpty else { return nil }
                let chunk = Array(remaining.prefix(1000))
                remaining = remaining.dropFirst(chunk.count)
                return .with { $0.release = release; $0.lineageBatch = .with { $0.queries = chunk; $0.ranks = .all; $0.form = .ids } }
            }, onAnswer: { (response) throws(ClientError) in
                guard response.database.release == release || release.isEmpty else {
                    throw .local("answered from \(response.database.release), pinned \(release)")
                }
                answered += response.lineageBatch.results.count
            })
            guard answered == queries.count else { throw ValidationError("\(answered) answers for \(queries.count) queries") }
            return Date().timeIntervalSince(started)
        }
    }

    func run() throws {
        let binaries = binDir ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let releases = pairs
        let queue = try DatabaseQueue(path: releases[0].file, configuration: { var c = Configuration(); c.readonly = true; return c }())
        let queries = try queue.read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM taxa ORDER BY random() LIMIT ?", arguments: [ids]).map(String.init)
        }
        try queue.close()
        print("stol-taxonomyd with \(releases.count) releases (default \(releases[0].name)); lineage batches of \(queries.count) "
              + "random ids of the default, NCBI's whole tree")
        var met = true
        func verdict(_ ok: Bool) -> String { met = met && ok; return ok ? "met" : "MISSED" }

        // Phase 1: cold releases, pinned batches, spread queries.
        do {
            let server = try Server(binaries: binaries, bundled: bundled, releases: releases)
            let started = Date()
            guard waitUntil(seconds: 120, interval: 0.05, { server.status()?.fullTreeLoaded == true }) else {
                throw ValidationError("the default release did not load within 120 s")
            }
            print(String(format: "default %@ ready after %.2f s, server RSS %.0f MiB", releases[0].name,
                         Date().timeIntervalSince(started), server.memory().now))
            _ = try server.lineageBatch(queries, release: "")  // warm
            let defaultTimes = try (0..<3).map { _ in try server.lineageBatch(queries, release: "") }
            let defaultTime = defaultTimes.sorted()[1]
            print(String(format: "  default batch: %.3f s (median of 3)", defaultTime))
            for release in releases.dropFirst() {
                let coldStart = Date()
                let taxon = try server.client().call(.with { $0.release = release.name; $0.getTaxon = .with { $0.taxonID = 9606 } })
                let firstAnswer = Date().timeIntervalSince(coldStart)
                guard taxon.database.release == release.name else { throw ValidationError("\(release.name): answered by \(taxon.database.release)") }
                let firstBatch = try server.lineageBatch(Array(queries.prefix(1000)), release: release.name)
                let firstLineage = Date().timeIntervalSince(coldStart)
                _ = firstBatch
                _ = try server.lineageBatch(queries, release: release.name)  // warm
                let pinned = try (0..<3).map { _ in try server.lineageBatch(queries, release: release.name) }.sorted()[1]
                print(String(format: "  %@ cold: first answer %.2f s, first lineage batch answered %.2f s after the first request "
                             + "(target ≤ 3 s: %@); pinned batch %.3f s = %.2f× the default's (target ≤ 1.5: %@); RSS now %.0f MiB",
                             release.name, firstAnswer, firstLineage, verdict(firstLineage <= 3), pinned, pinned / defaultTime,
                             verdict(pinned / defaultTime <= 1.5), server.memory().now))
            }
            let spreadStart = Date()
            var rounds = 0
            let chunk = Array(queries.prefix(2000))
            while Date().timeIntervalSince(spreadStart) < spreadSeconds {
                for release in [""] + releases.dropFirst().map(\.name) { _ = try server.lineageBatch(chunk, release: release) }
                rounds += 1
            }
            let memory = server.memory()
            let loaded = server.status()?.releases.filter(\.loaded).map(\.release) ?? []
            print(String(format: "spread over all %d releases for %.0f s (%d rounds of %d lineages each): loaded %@; "
                         + "server peak RSS %.0f MiB (target ≤ 1024: %@), now %.0f MiB",
                         releases.count, spreadSeconds, rounds, chunk.count, loaded.joined(separator: ", "), memory.peak,
                         verdict(memory.peak <= 1024), memory.now))
        }

        // Phase 2: a diff of the default and the next release, in a fresh server.
        do {
            let server = try Server(binaries: binaries, bundled: bundled, releases: releases)
            guard waitUntil(seconds: 120, interval: 0.05, { server.status()?.fullTreeLoaded == true }) else {
                throw ValidationError("the default release did not load within 120 s")
            }
            let before = server.memory()
            let client = server.client()
            let started = Date()
            var afterID: Int64 = 0
            var changes = 0
            var pages = 0
            while true {
                let page = try client.ask(.with { $0.diff = .with {
                    $0.fromRelease = releases[1].name; $0.toRelease = releases[0].name; $0.afterID = afterID
                } }, as: Stol_V1_DiffResponse.self)
                changes += page.changes.count
                pages += 1
                if page.done { break }
                afterID = page.nextAfterID
            }
            let seconds = Date().timeIntervalSince(started)
            let after = server.memory()
            print(String(format: "diff %@ → %@: %d changes in %d pages, %.1f s (target ≤ 30: %@); server peak RSS %.0f MiB "
                         + "(%.0f before the diff; target ≤ 1024: %@)", releases[1].name, releases[0].name, changes, pages,
                         seconds, verdict(seconds <= 30), after.peak, before.peak, verdict(after.peak <= 1024)))
        }
        if !met { throw ExitCode(1) }
    }
}
