import ArgumentParser
import Foundation
import GRDB
import Glibc
import STOLClientKit
import STOLProtocol
import STOLTestFixtures

/// `stol-bench start`: how soon a socket-activated `stol-taxonomyd` answers its first
/// request (issue 38's "ready at once"), with the tree built from the database's rows
/// (no image: the first start of a release) against the tree read from its image
/// (every later start), round-robin in one run on the same database:
///
/// - first answer: the first connection starts the daemon; a lineage batch of 1,000
///   random ids on NCBI's whole tree (`--ranks all`), from that connect to its answer
///   (target ≤ 1 s on the full reference);
/// - search ready: then a `search`, which waits for the names' indexes;
/// - the daemon's peak RSS (VmHWM) once everything is loaded (target: no higher than
///   without an image).
///
/// When the database has the image the pipeline ships beside it (`DATABASE.tree`,
/// `stol-pipeline build` or `tree-image`), a third kind of start reads that one, with
/// nothing in the server's cache: a node's very first start. Each kind serves the
/// database through a link of its own, so that only its own image is beside it.
struct StartBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract: "First answers of a socket-activated stol-taxonomyd: the tree built from the rows against read from its image.")

    @Option(help: "The database served (the full reference: out/reference.sqlite).") var database: String
    @Option(help: "Starts of each kind, alternating.") var rounds: Int = 3
    @Option(help: "Directory of stol-taxonomyd (default: next to stol-bench).") var binDir: String?

    private struct Sample {
        var firstAnswer: Double
        var searchReady: Double
        var peakMiB: Double
    }

    /// One start of `served`: a fresh activator, the first lineage batch, then a search;
    /// `cache` the daemon's CACHE_DIRECTORY (nil: none).
    private func start(binaries: String, served: String, queries: [String], cache: String?,
                       beforeStop: () throws -> Void = {}) throws -> Sample {
        let scratch = try TemporaryDirectory.make(prefix: "stolstart")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let process = try BenchTaxonomyDaemon.start(binaries: binaries, bundled: served, scratch: scratch,
                                                    environment: cache.map { ["CACHE_DIRECTORY": $0] } ?? [:])
        defer { process.stop() }
        let socket = BenchTaxonomyDaemon.socket(in: scratch)
        guard waitUntil(seconds: 10, { FileManager.default.fileExists(atPath: socket) }) else {
            throw ValidationError("the activator did not bind \(socket)")
        }
        let client = TaxonomyClient(service: "taxonomy", path: socket, timeout: .seconds(600))
        let started = Date()
        let lineages = try client.ask(.with { $0.lineageBatch = .with { $0.queries = queries; $0.ranks = .all; $0.form = .ids } },
                                      as: Stol_V1_LineageBatchResponse.self)
        let firstAnswer = Date().timeIntervalSince(started)
        guard lineages.results.count == queries.count, lineages.results.allSatisfy({ !$0.hasError }) else {
            throw ValidationError("the first batch was not answered whole")
        }
        let hits = try client.ask(.with { $0.search = .with { $0.query = "lion"; $0.limit = 5 } }, as: Stol_V1_SearchResponse.self)
        let searchReady = Date().timeIntervalSince(started)
        guard !hits.hits.isEmpty else { throw ValidationError("search found nothing") }
        let peak = Double(TaxonomyBench.peakRSS(pid: process.pid))
        try beforeStop()
        return Sample(firstAnswer: firstAnswer, searchReady: searchReady, peakMiB: peak / 1024)
    }

    func run() throws {
        let binaries = binDir ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let queue = try DatabaseQueue(path: database, configuration: { var c = Configuration(); c.readonly = true; return c }())
        let queries = try queue.read { db in
            try Int64.fetchAll(db, sql: "SELECT id FROM taxa ORDER BY random() LIMIT 1000").map(String.init)
        }
        try queue.close()
        let cacheRoot = try TemporaryDirectory.make(prefix: "stolstartcache")
        defer { try? FileManager.default.removeItem(atPath: cacheRoot) }
        let cache = cacheRoot + "/taxonomy"
        // The database through a link with nothing beside it, and through one with the shipped image beside it.
        let bare = cacheRoot + "/bare/" + URL(fileURLWithPath: database).lastPathComponent
        let shipped = cacheRoot + "/shipped/" + URL(fileURLWithPath: database).lastPathComponent
        let shippedImage = database + ".tree"
        let hasShipped = FileManager.default.fileExists(atPath: shippedImage)
        let absolute = URL(fileURLWithPath: database).standardizedFileURL.path
        for (link, image) in [(bare, false), (shipped, true)] where !image || hasShipped {
            try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: link).deletingLastPathComponent().path, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: absolute)
            if image { try FileManager.default.createSymbolicLink(atPath: link + ".tree", withDestinationPath: absolute + ".tree") }
        }
        // The server's image: written by a first start with the cache (as after an install), then waited for.
        _ = try start(binaries: binaries, served: bare, queries: queries, cache: cache) {
            guard waitUntil(seconds: 120, {
                ((try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []).contains { $0.hasSuffix(".tree") }
            }) else { throw ValidationError("no tree image was written in \(cache)") }
        }
        print("stol-taxonomyd on \(database): first answer (a lineage batch of 1,000 ids, --ranks all) from the connection that "
              + "starts it; search ready; peak RSS. \(rounds) starts of each, alternating.")
        if !hasShipped {
            print("(no image shipped beside \(database): `stol-pipeline tree-image \(database)` writes one; its row is left out)")
        }
        var built: [Sample] = [], imaged: [Sample] = [], shippedStarts: [Sample] = []
        for _ in 0..<rounds {
            built.append(try start(binaries: binaries, served: bare, queries: queries, cache: nil))
            imaged.append(try start(binaries: binaries, served: bare, queries: queries, cache: cache))
            if hasShipped { shippedStarts.append(try start(binaries: binaries, served: shipped, queries: queries, cache: nil)) }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        print("| start | first answer (s) | search ready (s) | peak RSS (MiB) |")
        print("|---|---|---|---|")
        let kinds = [("tree built from the rows", built), ("tree read from its image (the server's cache)", imaged),
                     ("tree read from the image shipped beside the database (a node's first start)", shippedStarts)]
        for (name, samples) in kinds where !samples.isEmpty {
            print(String(format: "| %@ | %.2f | %.2f | %.0f |", name, median(samples.map(\.firstAnswer)),
                         median(samples.map(\.searchReady)), median(samples.map(\.peakMiB))))
        }
        for (name, samples) in kinds.dropFirst() where !samples.isEmpty {
            let first = median(samples.map(\.firstAnswer))
            print(String(format: "first answer, %@: %.2f s, %.1f× sooner than built (target ≤ 1 s: %@); peak RSS %.0f against %.0f MiB (%@)",
                         name, first, median(built.map(\.firstAnswer)) / first, first <= 1 ? "met" : "MISSED",
                         median(samples.map(\.peakMiB)), median(built.map(\.peakMiB)),
                         median(samples.map(\.peakMiB)) <= median(built.map(\.peakMiB)) ? "met" : "MISSED"))
        }
    }
}
