import ArgumentParser
import Foundation
import GRDB
import Glibc
import Logging
import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import STOLTransport

/// `stol-bench costs`: what the most expensive legal request of each kind costs
/// (issue 33: no single legal request may cost more than 100 ms of CPU on the full
/// reference). The adversarial requests of ``CostsWorkload`` are answered in-process
/// by the daemon's own request handler (``TaxonomyService``, every check, the handler,
/// the answer's encoding), one at a time on one thread, and timed as that thread's CPU
/// time (`CLOCK_THREAD_CPUTIME_ID`): what the daemon would spend on them, with no
/// socket or scheduler in between. The reference is served as an activated release,
/// with the bundled database beside it (`diff` compares the two), as an installed
/// daemon serves them.
///
/// Prints, for each kind, its most expensive request and its CPU time against the
/// target, and exits 1 when one passes it.
struct CostsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "costs",
        abstract: "The most expensive legal request of each kind: CPU ms in-process on one thread, against 100 ms.")

    @Option(help: "The full reference database, served as the default release.") var database: String
    @Option(help: "The bundled database (diff compares it with the reference).") var bundled: String
    @Option(help: "Timed runs of each request, after one untimed run; the median is reported.") var repeats: Int = 3
    @Option(help: "CPU milliseconds no request may pass.") var target: Double = 100
    @Option(help: "Measure only the kinds whose name contains this text (e.g. search).") var only: String?
    @Flag(help: "Print every request measured, not only the most expensive of each kind.") var all = false
    @Option(help: ArgumentHelp("With --all: search again in the library with these limits (words,rowsPerWalk,rows,sqlSteps,"
                               + "cladeNodes,candidates) and print its work and CPU, to see what a cap would cost.",
                               valueName: "n,n,n,n,n,n"))
    var searchLimits: String?

    func run() throws {
        let scratch = try TemporaryDirectory.make(prefix: "stolcosts")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let reference = URL(fileURLWithPath: database).path
        let release = try TaxonomyDatabase(path: reference, kind: .reference, loadIndexes: false).release
        let releases = scratch + "/releases"
        try FileManager.default.createDirectory(atPath: releases, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: releases + "/\(release).sqlite", withDestinationPath: reference)
        try JSONEncoder().encode(ActivationState(useReferenceDB: true, defaultRelease: release))
            .write(to: URL(fileURLWithPath: scratch + "/activation.json"))
        let provider = try ActiveDatabaseProvider(bundledPath: URL(fileURLWithPath: bundled).path,
                                                  referencePath: scratch + "/reference.sqlite", releasesDirectory: releases,
                                                  activationPath: scratch + "/activation.json", logger: Logger(label: "bench"))
        let served = provider.current().database
        guard served.release == release else {
            throw ValidationError("the reference \(reference) did not become the default release (serving \(served.release))")
        }
        print("loading the in-memory indexes of \(reference) …")
        guard let tree = served.waitForMemoryIndexes().tree else { throw ValidationError("the in-memory tree could not be built") }
        var configuration = Configuration()
        configuration.readonly = true
        let workload = try CostsWorkload(tree: tree, database: DatabaseQueue(path: reference, configuration: configuration),
                                         diff: (from: ReleaseName.bundled, to: release))
        let service = TaxonomyService(provider: provider)
        let context = RequestContext(peer: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()), logger: Logger(label: "bench"))

        var measured: [Measured] = []
        for item in workload.cases where only.map({ item.kind.contains($0) }) ?? true {
            var samples: [Double] = []
            var outcome = ""
            for run in 0...max(1, repeats) {
                let start = Self.threadCPUMilliseconds()
                let response = service.respondNow(to: item.request, context: context)
                let bytes: [UInt8] = (try? response.serializedBytes()) ?? []
                let spent = Self.threadCPUMilliseconds() - start
                if run > 0 { samples.append(spent) }
                outcome = Self.describe(response, bytes: bytes.count)
            }
            samples.sort()
            measured.append(Measured(kind: item.kind, label: item.label, cpu: samples[samples.count / 2], outcome: outcome))
            if all { print("  " + Self.padded(item.kind, 14) + String(format: "%9.2f ms  ", measured.last!.cpu) + "\(item.label) — \(outcome)") }
            if all, case .search(let body)? = item.request.body {
                printWork(of: body, database: served)
            }
        }
        let failed = printTable(measured, release: release, taxa: served.taxaCount)
        if !failed.isEmpty {
            // `make bench` stops here: a request over its budget is a failure, not a line to skim past.
            print("FAILED: over \(Int(target)) ms of CPU: \(failed.joined(separator: ", "))")
            throw ExitCode(1)
        }
    }

    /// What the library's search examined for `body` (``SearchWork``), with the standard
    /// limits or those of `--search-limits`, and its CPU time.
    func printWork(of body: Stol_V1_SearchRequest, database: TaxonomyDatabase) {
        var limits = SearchLimits.standard
        if let searchLimits {
            let values = searchLimits.split(separator: ",").compactMap { Int($0) }
            if values.count == 6 {
                limits = SearchLimits(words: values[0], rowsPerWalk: values[1], rows: values[2], sqlSteps: values[3],
                                      cladeNodes: values[4], candidates: values[5])
            }
        }
        let options = SearchOptions(rank: TaxonRank(body.rank), conservation: Set(body.conservation),
                                    limit: body.limit == 0 ? 20 : Int(body.limit), fuzzy: !body.noFuzzy, within: body.within,
                                    limits: limits)
        let start = Self.threadCPUMilliseconds()
        let query = SearchQuery(text: body.query, prefix: body.prefix, phrase: body.phrase)
        let answer = try? SearchEngine(database: database).answer(query, options: options)
        let spent = Self.threadCPUMilliseconds() - start
        guard let work = answer?.work else { return print("                    (refused)") }
        print(String(format: "                    %8.2f ms: ", spent) + "\(work.sqlSteps) SQL steps, \(work.rowsRead) rows, "
              + "\(work.cladeNodes) clade nodes, \(work.candidates) candidates\(work.partial ? ", partial" : "")")
    }

    struct Measured {
        let kind: String
        let label: String
        /// Median CPU milliseconds of the thread that answered and encoded it.
        let cpu: Double
        let outcome: String
    }

    /// The most expensive request of each kind, most expensive kind first; returns the kinds over the target.
    func printTable(_ measured: [Measured], release: String, taxa: Int) -> [String] {
        print("")
        print("Cost of the most expensive legal request of each kind — \(release) (\(taxa) taxa), "
              + "in-process, one thread, CPU ms (median of \(repeats)), target \(Int(target)) ms")
        print(Self.padded("kind", 14) + "    CPU ms  target  the most expensive request (answer)")
        var failed: [String] = []
        let worst = Dictionary(grouping: measured, by: \.kind).compactMap { $0.value.max { $0.cpu < $1.cpu } }
        for row in worst.sorted(by: { $0.cpu > $1.cpu }) {
            let over = row.cpu > target
            if over { failed.append(row.kind) }
            print(Self.padded(row.kind, 14) + String(format: "%10.2f %7d  ", row.cpu, Int(target))
                  + "\(row.label) (\(row.outcome))" + (over ? "  ← OVER" : ""))
        }
        return failed
    }

    /// What the answer was, in a few words: an error code, or the result and its size.
    static func describe(_ response: Stol_V1_TaxonomyResponse, bytes: Int) -> String {
        switch response.result {
        case .error(let error)?: return "error \(error.code): \(error.message.prefix(100))"
        case .search(let search)?: return "\(search.hits.count) hits\(search.partial ? ", partial" : ""), \(bytes) bytes"
        case .diff(let diff)?: return "\(diff.changes.count) changes\(diff.done ? "" : ", more to come"), \(bytes) bytes"
        default: return "\(bytes) bytes"
        }
    }

    static func padded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    static func threadCPUMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1000 + Double(time.tv_nsec) / 1_000_000
    }
}
