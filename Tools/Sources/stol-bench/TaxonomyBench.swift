import ArgumentParser
import Dispatch
import Foundation
import Glibc
import Logging
import STOLClientKit
import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import STOLTransport
import Synchronization

/// `stol-bench taxonomy`: latency, throughput, cold start and memory of
/// `stol-taxonomyd` through its real socket, started by the real
/// `systemd-socket-activate` on the database given, next to the same queries run
/// in-process on the same file without the server (the floor). Prints a table
/// with each target beside its number, and exits 1 when one is missed.
struct TaxonomyBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taxonomy",
        abstract: "Taxonomy latency (p50/p99, 1 and 8 clients), requests/s, cold start, peak RSS, and the in-process floor.")

    @Option(help: "Taxonomy database to serve (e.g. the full NCBI build).") var database: String
    @Option(help: "Requests per operation and client count.") var requests: Int = 2000
    @Option(help: "Concurrent clients of the parallel runs.") var clients: Int = 8
    @Option(help: "Directory of stol-taxonomyd (default: next to stol-bench).") var binDir: String?
    @Option(help: "Seconds to wait for the in-memory indexes before measuring.") var warmupTimeout: Double = 60
    @Option(help: "Measure only operations whose name contains this text (e.g. search).") var only: String?
    @Flag(help: "Also print the slowest requests of each operation (single client).") var slowest = false

    func run() throws {
        let binaries = binDir ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let scratch = try TemporaryDirectory.make(prefix: "stolbench")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let socket = BenchTaxonomyDaemon.socket(in: scratch)
        try FileManager.default.createDirectory(atPath: scratch + "/state", withIntermediateDirectories: true)

        print("preparing the workload from \(database) …")
        let local = try TaxonomyDatabase(path: database, kind: .bundled, loadIndexes: true)
        let workload = try Workload(lookups: LookupQueries(database: local), size: max(200, requests))

        // Cold start: the activator binds the socket; the first connection execs the daemon.
        let daemon = try BenchTaxonomyDaemon.start(binaries: binaries, bundled: database, scratch: scratch)
        defer { daemon.stop() }
        waitUntil(seconds: 1, interval: 0.002) { FileManager.default.fileExists(atPath: socket) }
        let coldStart = try Self.coldStart(socket: socket)

        // Measure the steady state once the in-memory indexes are built.
        let warmupStart = Date()
        var treeSeconds = 0.0
        while Date().timeIntervalSince(warmupStart) < warmupTimeout {
            let client = TaxonomyClient(service: "taxonomy", path: socket)
            var request = Stol_V1_TaxonomyRequest()
            request.status = Stol_V1_StatusRequest()
            if case .status(let status)? = try? client.call(request).result, status.treeLoaded {
                treeSeconds = Date().timeIntervalSince(warmupStart)
                break
            }
            usleep(50_000)
        }
        _ = local.waitForMemoryIndexes()
        // The daemon's own request handler in-process, for the "service+codec" columns.
        let provider = try ActiveDatabaseProvider(bundledPath: database, referencePath: scratch + "/no-reference",
                                                  activationPath: scratch + "/no-activation", logger: Logger(label: "bench"))
        _ = provider.current().database.waitForMemoryIndexes()
        let inProcess = TaxonomyService(provider: provider)

        var rows: [Row] = []
        for operation in Operation.allCases where only.map({ operation.rawValue.contains($0) }) ?? true {
            let requests = workload.requests(operation)
            let floor = Self.measureFloor(operation, workload: workload, database: local)
            let codec = Self.measureServiceAndCodec(operation, workload: workload, service: inProcess)
            let single = try Self.measure(socket: socket, requests: requests, clients: 1, count: self.requests,
                                          slowest: slowest ? operation.rawValue : nil)
            let parallel = try Self.measure(socket: socket, requests: requests, clients: clients, count: self.requests)
            rows.append(Row(operation: operation, single: single, parallel: parallel, floor: floor, codec: codec))
        }
        var throughput: [Throughput] = []
        // The target is for simple requests, a taxon by id; the mix with lineages
        // (about eight rows each) is printed beside it for comparison.
        for (label, requests) in [("simple requests (taxon by id)", workload.requests(.taxon)),
                                  ("mix of taxon and ancestors", workload.requests(.taxon) + workload.requests(.ancestors))] {
            let oneAtATime = try Self.measure(socket: socket, requests: requests, clients: clients, count: self.requests * 4)
            let pipelined = Self.measurePipelined(socket: socket, requests: requests, clients: clients,
                                                  count: self.requests * 8, depth: 16)
            throughput.append(Throughput(label: label, oneAtATime: oneAtATime.perSecond, pipelined: pipelined,
                                         isTarget: throughput.isEmpty))
        }
        let peak = Self.peakRSS(pid: daemon.pid)
        let roundTrip = Self.socketRoundTrip(count: 20_000)
        let missed = Self.printTable(rows: rows, throughput: throughput, roundTrip: roundTrip, coldStart: coldStart,
                                     treeSeconds: treeSeconds, peakKB: peak, clients: clients, database: database,
                                     taxa: local.taxaCount, wholeTree: local.fullTreeCount)
        if !missed.isEmpty {
            // `make bench` stops here: a missed target is a failure, not a line to skim past.
            print("FAILED: target missed by \(missed.joined(separator: ", "))")
            throw ExitCode(1)
        }
    }

    // MARK: Workload

    enum Operation: String, CaseIterable {
        case taxon, children, ancestors, detail
        case searchWord = "search word"
        case searchPrefix12 = "search 1-2 char prefix"
        case searchPrefix = "search prefix 3+"
        case searchFuzzy = "search fuzzy"
        case searchRank = "search, rank filter"
        case searchStatus = "search, status filter"
        case searchShortWords = "search, short words + rank"
        case searchCombined = "search, phrase/rank+status"
        case compare
        case relativesPrecomputed = "relatives n=10"
        case relativesComputed = "relatives n=50 computed"

        var target: Double {
            switch self {
            case .taxon, .children, .ancestors: 0.5
            case .searchWord, .searchPrefix12, .searchPrefix, .searchFuzzy, .searchRank, .searchStatus, .searchShortWords, .searchCombined: 5
            case .compare, .relativesPrecomputed, .relativesComputed, .detail: 1
            }
        }
    }

    struct Workload {
        var bodies: [Operation: [Stol_V1_TaxonomyRequest.OneOf_Body]] = [:]

        init(lookups: LookupQueries, size: Int) throws {
            let count = min(size, 500)
            let species = try lookups.sampleIDs(rank: .species, count: 2 * count)
            var higher: [TaxonID] = []
            for rank in [TaxonRank.genus, .family, .order, .class] {
                higher += try lookups.sampleIDs(rank: rank, count: count / 4)
            }
            let any = try lookups.sampleIDs(rank: nil, count: count)
            var names: [String] = []
            for id in species.prefix(count) { names.append(try lookups.taxon(id: id, language: "en").scientificName) }
            let genera = try higher.prefix(count / 4).map { try lookups.taxon(id: $0, language: "en").scientificName }

            bodies[.taxon] = any.map { id in var r = Stol_V1_GetTaxonRequest(); r.taxonID = id; return .getTaxon(r) }
            bodies[.children] = higher.map { id in var r = Stol_V1_ChildrenRequest(); r.taxonID = id; return .children(r) }
            bodies[.ancestors] = species.prefix(count).map { id in var r = Stol_V1_AncestorsRequest(); r.taxonID = id; return .ancestors(r) }
            bodies[.detail] = species.prefix(count).map { id in var r = Stol_V1_TaxonDetailRequest(); r.taxonID = id; return .detail(r) }
            let common = ["lion", "tiger", "oak", "wolf", "bacterium", "virus", "human", "frog", "rose", "león", "Löwe"]
            bodies[.searchWord] = (names + common + genera).map { Self.search($0, prefix: false) }
            let letters = Array("abcdefghijklmnopqrstuvwxyz")
            var short: [String] = letters.map(String.init)
            for first in letters { for second in ["a", "e", "i", "o", "u", "r", "l"] { short.append("\(first)\(second)") } }
            bodies[.searchPrefix12] = short.map { Self.search($0, prefix: true) }
            bodies[.searchPrefix] = names.map { Self.search(String($0.prefix(max(3, $0.count / 2))), prefix: true) }
            // One-letter typos of species names and of genus names.
            var generator = SystemRandomNumberGenerator()
            bodies[.searchFuzzy] = (names + genera).compactMap { name in
                var characters = Array(name)
                guard characters.count >= 5 else { return nil }
                let position = Int.random(in: 1..<characters.count, using: &generator)
                guard characters[position].isLetter else { return nil }
                characters[position] = characters[position] == "x" ? "z" : "x"
                return Self.search(String(characters), prefix: false)
            }
            // Filters (issue 13): every rank and every status, with frequent words, names,
            // prefixes and many short words: the plans that used to start at idx_taxa_rank.
            let ranks: [Stol_V1_Rank] = [.domain, .kingdom, .phylum, .class, .order, .family, .genus, .species]
            let filterWords = ["virus", "bacterium", "sp", "uncultured", "lion", "oak", "panthera", "felis", "rosa", "a"]
                + genera.prefix(20) + names.prefix(20)
            bodies[.searchRank] = ranks.flatMap { rank in
                filterWords.map { Self.search($0, prefix: false, rank: rank) }
                    + filterWords.map { Self.search(String($0.prefix(2)), prefix: true, rank: rank) }
            }
            let statuses = ["LC", "NT", "VU", "EN", "CR", "EW", "EX", "DD", "NE"]
            bodies[.searchStatus] = statuses.flatMap { status in
                filterWords.map { Self.search($0, prefix: false, statuses: [status]) }
                    + filterWords.map { Self.search(String($0.prefix(1)), prefix: true, rank: .species, statuses: [status]) }
            }
            // Combinations: phrases, rank and status together, and words whose matches are
            // almost all of other ranks (no-rank "environmental samples" nodes, genera).
            let awkward = ["environmental samples", "unclassified", "incertae sedis", "bacteria", "viruses",
                           "uncultured bacterium", "group", "complex", "clade"]
            var combined: [Stol_V1_TaxonomyRequest.OneOf_Body] = []
            for rank in ranks {
                combined += awkward.map { Self.search($0, prefix: false, rank: rank) }
                combined += awkward.map { Self.search($0, prefix: false, rank: rank, phrase: true) }
                combined += filterWords.prefix(12).map { Self.search($0, prefix: true, rank: rank, phrase: true) }
                combined += statuses.prefix(4).map { Self.search("a", prefix: true, rank: rank, statuses: [$0]) }
                combined.append(Self.search("panthera leo", prefix: false, rank: rank, statuses: statuses, phrase: true))
            }
            bodies[.searchCombined] = combined
            bodies[.searchShortWords] = ranks.flatMap { rank in
                ["a b c d e f g h", "a b c d e f g h i j k l m n o p", "s p", "x y", "a", "b c"].map {
                    Self.search($0, prefix: false, rank: rank)
                }
            }
            bodies[.compare] = zip(species.prefix(count), species.suffix(count)).map { a, b in
                var r = Stol_V1_CompareRequest(); r.taxonA = a; r.taxonB = b; return .compare(r)
            }
            bodies[.relativesPrecomputed] = species.prefix(count).map { id in
                var r = Stol_V1_RelativesRequest(); r.taxonID = id; r.n = 10; return .relatives(r)
            }
            bodies[.relativesComputed] = species.prefix(count).map { id in
                var r = Stol_V1_RelativesRequest(); r.taxonID = id; r.n = 50; r.computed = true; return .relatives(r)
            }
        }

        static func search(_ text: String, prefix: Bool, rank: Stol_V1_Rank = .unspecified,
                           statuses: [String] = [], phrase: Bool = false) -> Stol_V1_TaxonomyRequest.OneOf_Body {
            var search = Stol_V1_SearchRequest()
            search.query = text
            search.prefix = prefix
            search.phrase = phrase
            search.rank = rank
            search.conservation = statuses
            return .search(search)
        }

        func requests(_ operation: Operation) -> [Stol_V1_TaxonomyRequest.OneOf_Body] { bodies[operation] ?? [] }
    }

    // MARK: Measuring

    struct Latencies {
        var p50: Double
        var p99: Double
        var perSecond: Double
        var errors: Int
        var max: Double = 0
    }

    struct Row {
        let operation: Operation
        let single: Latencies
        let parallel: Latencies
        let floor: Latencies
        let codec: Latencies
    }

    static func summarize(_ samples: [Double], wall: Double, errors: Int) -> Latencies {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        return Latencies(p50: percentile(0.5) * 1000, p99: percentile(0.99) * 1000,
                         perSecond: wall > 0 ? Double(samples.count) / wall : 0, errors: errors,
                         max: (sorted.last ?? 0) * 1000)
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// `count` requests spread over `clients` connections, each on its own thread.
    static func measure(socket: String, requests: [Stol_V1_TaxonomyRequest.OneOf_Body], clients: Int,
                        count: Int, slowest: String? = nil) throws -> Latencies {
        let samples = Mutex<[Double]>([])
        let worst = Mutex<[(Double, String)]>([])
        let errors = Atomic<Int>(0)
        let perClient = max(1, count / clients)
        let start = now()
        onThreads(clients) { clientIndex in
            let client = TaxonomyClient(service: "taxonomy", path: socket)
            var local: [Double] = []
            local.reserveCapacity(perClient)
            for i in 0..<perClient {
                var request = Stol_V1_TaxonomyRequest()
                request.body = requests[(clientIndex * 7919 + i) % requests.count]
                let begin = now()
                do {
                    _ = try client.call(request)
                } catch {
                    if case ClientError.server(_)? = error as? ClientError {} else { errors.add(1, ordering: .relaxed) }
                }
                local.append(now() - begin)
                if slowest != nil {
                    let elapsed = local[local.count - 1]
                    worst.withLock { $0.append((elapsed, Self.describe(request.body!))); $0.sort { $0.0 > $1.0 }; if $0.count > 5 { $0.removeLast() } }
                }
            }
            samples.withLock { $0 += local }
        }
        let wall = now() - start
        if let slowest {
            for (elapsed, body) in worst.withLock({ $0 }) {
                print(String(format: "  slow %@: %.2f ms %@", slowest, elapsed * 1000, String(body.prefix(160))))
            }
        }
        return summarize(samples.withLock { $0 }, wall: wall, errors: errors.load(ordering: .relaxed))
    }

    /// Requests per second when each client keeps `depth` requests in flight on
    /// its connection (the protocol allows pipelining; answers come in order).
    static func measurePipelined(socket: String, requests: [Stol_V1_TaxonomyRequest.OneOf_Body], clients: Int,
                                 count: Int, depth: Int) -> Double {
        let done = Atomic<Int>(0)
        let perClient = max(depth, count / clients)
        let start = now()
        onThreads(clients) { clientIndex in
            guard let socket = try? FrameSocket.connect(path: socket) else { return }
            var sent = 0, received = 0
            func send() -> Bool {
                var request = Stol_V1_TaxonomyRequest()
                request.id = UInt64(sent + 1)
                request.body = requests[(clientIndex * 7919 + sent) % requests.count]
                sent += 1
                return (try? socket.send(request)) != nil
            }
            while sent < depth { guard send() else { return } }
            while received < perClient {
                guard (try? socket.receive(Stol_V1_TaxonomyResponse.self)) != nil else { return }
                received += 1
                if sent < perClient { guard send() else { return } }
            }
            done.add(received, ordering: .relaxed)
        }
        return Double(done.load(ordering: .relaxed)) / (now() - start)
    }

    /// The daemon's request handler in-process, plus encoding the answer and
    /// decoding it as the client does: everything a request costs but the socket,
    /// the event loop and the frame.
    static func measureServiceAndCodec(_ operation: Operation, workload: Workload, service: TaxonomyService) -> Latencies {
        var samples: [Double] = []
        let bodies = workload.requests(operation)
        let context = RequestContext(peer: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()),
                                     logger: Logger(label: "bench"))
        let start = now()
        for i in 0..<min(2000, bodies.count * 4) {
            var request = Stol_V1_TaxonomyRequest()
            request.id = UInt64(i + 1)
            request.body = bodies[i % bodies.count]
            let begin = now()
            let response = service.respondNow(to: request, context: context)
            if let bytes: [UInt8] = try? response.serializedBytes() {
                _ = try? Stol_V1_TaxonomyResponse(serializedBytes: bytes)
            }
            samples.append(now() - begin)
        }
        return summarize(samples, wall: now() - start, errors: 0)
    }

    /// The same queries in-process, straight on the library: no socket, no framing.
    static func measureFloor(_ operation: Operation, workload: Workload, database: TaxonomyDatabase) -> Latencies {
        let lookups = LookupQueries(database: database), search = SearchEngine(database: database)
        let comparisons = ComparisonQueries(database: database), relatives = RelativesQueries(database: database)
        var samples: [Double] = []
        let bodies = workload.requests(operation)
        let start = now()
        for i in 0..<min(2000, bodies.count * 4) {
            let begin = now()
            switch bodies[i % bodies.count] {
            case .getTaxon(let r): _ = try? lookups.taxon(id: r.taxonID, language: "en")
            case .children(let r): _ = try? lookups.children(of: r.taxonID, offset: 0, limit: 50, language: "en")
            case .ancestors(let r): _ = try? lookups.ancestors(of: r.taxonID, language: "en")
            case .detail(let r): _ = try? lookups.detail(of: r.taxonID, language: "en")
            case .search(let r):
                let options = SearchOptions(rank: TaxonRank(r.rank), conservation: Set(r.conservation))
                _ = try? search.search(SearchQuery(text: r.query, prefix: r.prefix, phrase: r.phrase), options: options)
            case .compare(let r): _ = try? comparisons.compare(r.taxonA, r.taxonB, language: "en")
            case .relatives(let r):
                _ = try? relatives.relatives(of: r.taxonID, n: Int(r.n), computed: r.computed,
                                             maximumCandidates: RelativesQueries.defaultMaximumCandidates, language: "en")
            default: break
            }
            samples.append(now() - begin)
        }
        return summarize(samples, wall: now() - start, errors: 0)
    }

    /// The machine's own floor for one request/answer over a Unix socket: a
    /// 32-byte ping echoed by another thread (two thread wake-ups, no work). On a
    /// virtual machine this alone can be a third of a lookup's latency.
    static func socketRoundTrip(count: Int) -> Latencies {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { return summarize([], wall: 1, errors: 1) }
        let echo = pair[1]
        let echoThread = Thread {
            var buffer = [UInt8](repeating: 0, count: 64)
            while true {
                let n = read(echo, &buffer, 64)
                if n <= 0 { break }
                _ = write(echo, buffer, n)
            }
            close(echo)
        }
        echoThread.start()
        var ping = [UInt8](repeating: 7, count: 32)
        var samples: [Double] = []
        samples.reserveCapacity(count)
        let start = now()
        for _ in 0..<count {
            let begin = now()
            _ = write(pair[0], &ping, 32)
            var received = 0
            while received < 32 {
                let n = ping.withUnsafeMutableBytes { read(pair[0], $0.baseAddress! + received, 32 - received) }
                if n <= 0 { break }
                received += n
            }
            samples.append(now() - begin)
        }
        let wall = now() - start
        close(pair[0])
        return summarize(samples, wall: wall, errors: 0)
    }

    /// Connect (which makes systemd-socket-activate exec the daemon) until the first answer.
    static func coldStart(socket: String) throws -> Double {
        let begin = now()
        var request = Stol_V1_TaxonomyRequest()
        request.status = Stol_V1_StatusRequest()
        while now() - begin < 30 {
            let client = TaxonomyClient(service: "taxonomy", path: socket)
            do {
                _ = try client.call(request)
                return (now() - begin) * 1000
            } catch {
                usleep(1_000)
            }
        }
        return (now() - begin) * 1000
    }

    static func describe(_ body: Stol_V1_TaxonomyRequest.OneOf_Body) -> String {
        if case .search(let search) = body { return "\(search.prefix ? "prefix " : "")\(search.query.debugDescription)" }
        if case .children(let children) = body { return "children of \(children.taxonID)" }
        return "\(body)"
    }

    static func peakRSS(pid: pid_t) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    // MARK: Output

    struct Throughput {
        var label: String
        var oneAtATime: Double
        var pipelined: Double
        /// Whether the ≥ 20,000 requests/s target applies to this line.
        var isTarget: Bool

        func verdict(_ perSecond: Double) -> String {
            isTarget ? "target ≥ 20000: \(perSecond >= 20000 ? "met" : "MISSED")" : "for comparison, no target"
        }
    }

    /// Prints the results; returns what missed its target.
    static func printTable(rows: [Row], throughput: [Throughput], roundTrip: Latencies, coldStart: Double, treeSeconds: Double,
                           peakKB: Int, clients: Int, database: String, taxa: Int, wholeTree: Int) -> [String] {
        // The server's memory target: 200 MB for the eight ranks; 400 MB once it also holds
        // NCBI's whole tree in memory (2.6 M more nodes, names and their index; issue 14).
        let peakTargetMB = wholeTree > 0 ? 400 : 200
        var missed: [String] = []
        func ms(_ value: Double) -> String { String(format: "%.3f", value) }
        func cell(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        print("")
        print("stol-taxonomyd on \(database) (\(taxa) taxa), through the real socket; times in ms")
        print(cell("operation", 28) + cell("1 client p50", 14) + cell("p99", 10) + cell("\(clients) clients p50", 16)
              + cell("p99", 10) + cell("req/s (\(clients))", 14) + cell("floor p50", 11) + cell("floor p99", 11)
              + cell("svc+codec p50", 15) + cell("p99", 8) + cell("ratio", 8) + "p99 target")
        for row in rows {
            let ratio = row.floor.p50 > 0 ? row.single.p50 / row.floor.p50 : 0
            let met = row.single.p99 <= row.operation.target ? "met" : "MISSED"
            if met == "MISSED" { missed.append(row.operation.rawValue + " p99") }
            print(cell(row.operation.rawValue, 28) + cell(ms(row.single.p50), 14) + cell(ms(row.single.p99), 10)
                  + cell(ms(row.parallel.p50), 16) + cell(ms(row.parallel.p99), 10)
                  + cell(String(format: "%.0f", row.parallel.perSecond), 14) + cell(ms(row.floor.p50), 11) + cell(ms(row.floor.p99), 11)
                  + cell(ms(row.codec.p50), 15) + cell(ms(row.codec.p99), 8)
                  + cell(String(format: "%.1fx", ratio), 8) + "≤ \(row.operation.target) (\(met))"
                  + (row.single.errors + row.parallel.errors > 0 ? "  transport errors: \(row.single.errors + row.parallel.errors)" : ""))
        }
        print("")
        for line in throughput {
            if line.isTarget && min(line.oneAtATime, line.pipelined) < 20000 { missed.append(line.label + " req/s") }
            print(String(format: "%@, %d clients, one request at a time: %.0f req/s (%@)",
                         line.label, clients, line.oneAtATime, line.verdict(line.oneAtATime)))
            print(String(format: "%@, %d clients, pipelined 16 deep (PROTOCOL.md §1.3): %.0f req/s (%@)",
                         line.label, clients, line.pipelined, line.verdict(line.pipelined)))
        }
        print(String(format: "machine floor: one 32-byte Unix-socket round trip between two threads, p50 %.3f ms, p99 %.3f ms",
                     roundTrip.p50, roundTrip.p99))
        print(String(format: "cold start (socket activation → first answer): %.1f ms (target ≤ 500: %@)",
                     coldStart, coldStart <= 500 ? "met" : "MISSED"))
        print(String(format: "in-memory tree and search indexes ready after: %.1f s (background; answers flow meanwhile)", treeSeconds))
        print(String(format: "server peak RSS (VmHWM): %.1f MB (target ≤ %d%@: %@)", Double(peakKB) / 1024, peakTargetMB,
                     wholeTree > 0 ? ", with the whole tree of \(wholeTree) nodes" : "", peakKB <= peakTargetMB * 1024 ? "met" : "MISSED"))
        print("floor = the same queries in-process on the library (no socket, no protobuf framing); svc+codec = the daemon's")
        print("request handler in-process plus encoding the answer and decoding it as the client does; ratio = server p50 / floor p50")
        if coldStart > 500 { missed.append("cold start") }
        if peakKB > peakTargetMB * 1024 { missed.append("peak RSS") }
        return missed
    }
}

/// The benchmark's children: the test kit's ``ChildProcess`` (posix_spawn; Foundation's
/// Process can hang here), with standard input /dev/null and both outputs appended to `log`.
extension ChildProcess {
    static func start(_ executable: String, _ arguments: [String], log: String) throws -> ChildProcess {
        try spawn(executable, arguments, stdout: .file(log))
    }

    /// SIGTERM, and SIGKILL after 4 s.
    func stop() { terminate(timeoutSeconds: 4) }
}
