import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLModel
import STOLProtocol
import STOLTestFixtures
import Synchronization

/// `stol-bench switch`: what clients see while `stol-taxonomyd` switches from the
/// bundled database to the full reference. Clients loop on `taxon` through the real
/// socket while the activation state is written as `stol-importd` writes it; the
/// longest wait of any request during the switch is the figure (target ≤ 100 ms:
/// the new database opens on a thread of its own, the previous one answers).
struct SwitchBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switch",
        abstract: "Longest request wait while the taxonomy service switches to the reference database (target ≤ 100 ms).")

    @Option(help: "The bundled database that serves first.") var bundled: String
    @Option(help: "The reference database switched to (e.g. the full NCBI build).") var reference: String
    @Option(help: "Clients looping on `taxon` during the switch.") var clients: Int = 4
    @Option(help: "Directory of stol-taxonomyd (default: next to stol-bench).") var binDir: String?

    func run() throws {
        let binaries = binDir ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let scratch = try TemporaryDirectory.make(prefix: "stolswitch")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let databases = scratch + "/state/databases"
        try FileManager.default.createDirectory(atPath: databases, withIntermediateDirectories: true)
        // The installed reference: a link to the file given (an import would copy it).
        try FileManager.default.createSymbolicLink(atPath: databases + "/reference.sqlite",
                                                   withDestinationPath: URL(fileURLWithPath: reference).path)
        let socket = BenchTaxonomyDaemon.socket(in: scratch)
        let daemon = try BenchTaxonomyDaemon.start(binaries: binaries, bundled: bundled, scratch: scratch)
        defer { daemon.stop() }
        _ = waitUntil(seconds: 5) { FileManager.default.fileExists(atPath: socket) }
        func status() -> Stol_V1_StatusResponse? {
            var request = Stol_V1_TaxonomyRequest()
            request.status = Stol_V1_StatusRequest()
            guard case .status(let status)? = try? TaxonomyClient(service: "taxonomy", path: socket).call(request).result
            else { return nil }
            return status
        }
        guard waitUntil(seconds: 60, interval: 0.05, { status()?.treeLoaded == true }) else {
            throw ValidationError("the bundled database's indexes did not load within 60 s")
        }

        // Clients: each answer's wait, its time and the database that gave it.
        struct Sample { let at: Double; let wait: Double; let kind: Stol_V1_DatabaseKind; let failed: Bool }
        let samples = Mutex<[Sample]>([])
        let stop = Atomic<Bool>(false)
        let start = Date()
        let ids: [Int64] = [9689, 9606, 9615, 562, 3702, 7227, 10090, 4932, 9913, 2759]
        var threads: [Thread] = []
        let finished = DispatchGroup()
        for client in 0..<clients {
            finished.enter()
            let thread = Thread {
                let connection = TaxonomyClient(service: "taxonomy", path: socket)
                var local: [Sample] = []
                var index = client
                while !stop.load(ordering: .relaxed) {
                    var request = Stol_V1_TaxonomyRequest()
                    request.getTaxon = .with { $0.taxonID = ids[index % ids.count] }
                    index += 1
                    let sent = Date()
                    let response = try? connection.call(request)
                    local.append(Sample(at: sent.timeIntervalSince(start), wait: Date().timeIntervalSince(sent) * 1000,
                                        kind: response?.database.kind ?? .unspecified, failed: response == nil))
                }
                samples.withLock { $0 += local }
                finished.leave()
            }
            threads.append(thread)
            thread.start()
        }
        Thread.sleep(forTimeInterval: 1)  // the steady state before the switch, for comparison
        let switchedAt = Date().timeIntervalSince(start)
        let state = try JSONEncoder().encode(ActivationState(useReferenceDB: true))
        try state.write(to: URL(fileURLWithPath: databases + "/activation.json"), options: .atomic)
        let loaded = waitUntil(seconds: 120, interval: 0.05) { status()?.active.kind == .reference && status()?.treeLoaded == true }
        Thread.sleep(forTimeInterval: 1)  // and after it
        stop.store(true, ordering: .relaxed)
        finished.wait()

        let all = samples.withLock { $0 }
        let before = all.filter { $0.at < switchedAt }, during = all.filter { $0.at >= switchedAt }
        let firstReference = during.filter { $0.kind == .reference }.map(\.at).min()
        func p99(_ set: [Sample]) -> Double {
            let sorted = set.map(\.wait).sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
        }
        let longest = during.map(\.wait).max() ?? 0
        print("stol-taxonomyd switching from \(bundled) to \(reference), \(clients) clients looping on taxon")
        print(String(format: "before the switch: %d requests, p99 %.3f ms, longest %.3f ms", before.count, p99(before),
                     before.map(\.wait).max() ?? 0))
        print(String(format: "from the switch on: %d requests, p99 %.3f ms, longest %.3f ms; %d failed", during.count,
                     p99(during), longest, during.filter(\.failed).count))
        if let firstReference {
            print(String(format: "answers from the reference after %.2f s (the old database answered until then)",
                         firstReference - switchedAt))
        }
        if !loaded { print("the reference was not answering with its indexes within 120 s") }
        let met = longest <= 100 && during.allSatisfy { !$0.failed } && loaded
        print(String(format: "longest wait during the switch: %.1f ms (target ≤ 100: %@)", longest, met ? "met" : "MISSED"))
        if !met { throw ExitCode(1) }
    }
}
