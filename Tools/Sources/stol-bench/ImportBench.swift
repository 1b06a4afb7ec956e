import ArgumentParser
import Foundation
import Glibc
import STOLContainer
import STOLFormat
import STOLVerifier
import STOLModel
import STOLTestFixtures

/// `stol-bench import`: the import of a signed `.stol` file end to end — the real
/// `stol-client db import --json`, `stol-importd` and a sandboxed, per-connection
/// `stol-verifyd` under the real `systemd-socket-activate` — with the time of each
/// stage and the peak memory of each process, next to the same checks run
/// directly in this process (SHA-256, inflate, `PRAGMA integrity_check`, through
/// the same `StolFile.verify` and `DatabaseChecks`). Rounds alternate the two so
/// that both meet the same page cache; the best of each is printed. Prints a
/// table; never fails on a timing.
struct ImportBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import of a signed .stol end to end: stage times, peak RSS per process, verifier cost vs the checks run directly.")

    @Option(help: "The signed .stol file (e.g. out/reference.stol from make build-db).") var file: String
    @Option(help: "The public key file it is signed for (the verifier trusts only this).") var publicKey: String
    @Option(help: "Rounds of (direct checks, import); the best of each is printed.") var rounds: Int = 2
    @Option(help: "Directory for the state, the staging file and the verifier's scratch file (needs 3× the database).")
    var workDir: String = "/var/tmp"
    @Option(help: "Directory of the stol-* binaries (default: next to stol-bench).") var binDir: String?

    struct ImportRun {
        var seconds: Double
        /// Seconds from each stage's first progress frame to the next stage's (the last to `done`).
        var stages: [(name: String, seconds: Double)]
        var verifierSeconds: Double
        var peakKiB: [String: Int]
    }

    struct DirectRun {
        var sqliteBytes: UInt64
        var checksum: Double
        var inflate: Double
        var integrity: Double
        var total: Double { checksum + inflate + integrity }
    }

    /// What is read of a `db import --json` line: `{"progress": {"stage": …}}` (other lines are skipped).
    struct ProgressLine: Decodable {
        struct Progress: Decodable { let stage: String }
        let progress: Progress
    }

    func run() throws {
        let binaries = binDir ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let key = try SigningKeyFile.loadPublicKey(path: publicKey)
        let fileBytes = UInt64((try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.uint64Value ?? 0)
        var directs: [DirectRun] = []
        var imports: [ImportRun] = []
        for round in 1...max(1, rounds) {
            print("round \(round)/\(rounds): the checks directly …")
            directs.append(try direct(key: key))
            print("round \(round)/\(rounds): the import through the daemons …")
            imports.append(try importThroughDaemons(binaries: binaries))
        }
        let direct = directs.min { $0.total < $1.total }!
        let best = imports.min { $0.seconds < $1.seconds }!
        let verifier = imports.map(\.verifierSeconds).min()!
        let sqliteBytes = direct.sqliteBytes
        print("""

            == stol-bench import: \(file) (\(mb(fileBytes)) → \(mb(sqliteBytes)) SQLite), best of \(rounds)
            stage                          seconds
            """)
        for (name, seconds) in best.stages { print("  \(name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(f(seconds))") }
        print("""
              end to end (client)          \(f(best.seconds))   target < 60 s \(best.seconds < 60 ? "met" : "MISSED")
            peak RSS: stol-client \(mib(best.peakKiB["stol-client"])), stol-importd \(mib(best.peakKiB["stol-importd"])), \
            stol-verifyd \(mib(best.peakKiB["stol-verifyd"]))   target verifier < 256 MiB \
            \((best.peakKiB["stol-verifyd"] ?? .max) < 256 * 1024 ? "met" : "MISSED")
            direct, one process:           \(f(direct.total)) s (SHA-256 \(f(direct.checksum)), inflate \(f(direct.inflate)), \
            integrity_check \(f(direct.integrity)))
            stol-verifyd, start to done:   \(f(verifier)) s (the same checks, sandboxed, plus streaming the database to stol-importd)
            verifier / direct:             \(String(format: "%.2f", verifier / direct.total))   target < 1.3 \
            \(verifier / direct.total < 1.3 ? "met" : "MISSED")
            rounds (direct / import / verifier): \(zip(directs, imports).map { "\(f($0.total)) / \(f($1.seconds)) / \(f($1.verifierSeconds))" }.joined(separator: ", "))
            """)
        var missed: [String] = []
        if best.seconds >= 60 { missed.append("end to end") }
        if (best.peakKiB["stol-verifyd"] ?? .max) >= 256 * 1024 { missed.append("verifier RSS") }
        if verifier / direct.total >= 1.3 { missed.append("verifier / direct") }
        if !missed.isEmpty {
            print("FAILED: target missed by \(missed.joined(separator: ", "))")
            throw ExitCode(1)
        }
    }

    // MARK: Direct

    /// SHA-256 and inflate through `StolFile.verify`, then `DatabaseChecks`, in this process.
    func direct(key: Ed25519.PublicKey) throws -> DirectRun {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ValidationError("cannot open \(file)") }
        defer { close(fd) }
        let scratch = try ScratchFile(directory: workDir)
        var marks: [StolFile.Stage: Date] = [:]
        let start = Date()
        let verified = try StolFile.verify(fileDescriptor: fd, publicKey: key,
                                           options: .init(supportedSchemaVersions: TaxonomySchema.supportedVersions),
                                           events: { event in
            if case .progress(let stage, let fraction) = event, fraction == 0 { marks[stage] = Date() }
        }, output: { (chunk) throws(StolFormatError) in
            do { try scratch.append(chunk) } catch { throw .outputFailed("\(error)") }
        })
        try scratch.finish()
        let inflated = Date()
        _ = try DatabaseChecks.run(descriptor: scratch.descriptor, headerSchemaVersion: verified.header.schemaVersion)
        let end = Date()
        let checksum = (marks[.verifyingSignature] ?? start).timeIntervalSince(start)
        return DirectRun(sqliteBytes: verified.sqliteBytes, checksum: checksum, inflate: inflated.timeIntervalSince(start) - checksum,
                         integrity: end.timeIntervalSince(inflated))
    }

    // MARK: Through the daemons

    func importThroughDaemons(binaries: String) throws -> ImportRun {
        let work = try TemporaryDirectory.make(prefix: "stolbench-import", in: workDir)
        defer { try? FileManager.default.removeItem(atPath: work) }
        for directory in ["run", "state", "tmp"] {
            try FileManager.default.createDirectory(atPath: work + "/" + directory, withIntermediateDirectories: true)
        }
        let environment = ["STOL_RUNTIME_DIR=\(work)/run", "STOL_STATE_DIR=\(work)/state", "TMPDIR=\(work)/tmp",
                           "STOL_TRUSTED_KEY=\(URL(fileURLWithPath: publicKey).path)", "STOL_LOG_LEVEL=info"]
        var daemons: [ChildProcess] = []
        defer { daemons.forEach { $0.stop() } }
        let passed: [String] = environment.flatMap { ["-E", $0] }
        for (name, extra) in [("import", [String]()), ("verify", ["--accept"])] {
            var arguments: [String] = extra + ["--listen=\(work)/run/\(name).sock", "--fdname=\(name)"]
            arguments += passed
            arguments.append(binaries + "/stol-\(name)d")
            daemons.append(try ChildProcess.start("/usr/bin/systemd-socket-activate", arguments, log: "\(work)/\(name).log"))
            waitUntil(seconds: 1, interval: 0.002) { FileManager.default.fileExists(atPath: "\(work)/run/\(name).sock") }
        }

        var pipe: [Int32] = [-1, -1]
        guard Glibc.pipe(&pipe) == 0 else { throw ValidationError("pipe failed") }
        let start = Date()
        let client: ChildProcess
        do {
            client = try ChildProcess.spawn(binaries + "/stol-client", ["db", "import", "--json", file],
                                            environment: ["STOL_RUNTIME_DIR": "\(work)/run"], inheritEnvironment: false,
                                            stdin: .inherited, stdout: .descriptor(pipe[1]), stderr: .inherited,
                                            closing: [pipe[0]])
        } catch {
            close(pipe[0])
            close(pipe[1])
            throw error
        }
        close(pipe[1])
        var stageStarts: [(String, Date)] = []
        let input = FileHandle(fileDescriptor: pipe[0], closeOnDealloc: true)
        var pending = Data()
        var lastLine = ""
        let decoder = JSONDecoder()
        while case let data = input.availableData, !data.isEmpty {
            pending.append(data)
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                lastLine = line
                guard let stage = try? decoder.decode(ProgressLine.self, from: Data(line.utf8)).progress.stage else {
                    continue
                }
                let name = stage.replacingOccurrences(of: "IMPORT_STAGE_", with: "").lowercased().replacingOccurrences(of: "_", with: " ")
                if stageStarts.last?.0 != name { stageStarts.append((name, Date())) }
            }
        }
        let (status, usage) = client.waitWithUsage()
        let end = Date()
        guard status == 0 else { throw ValidationError("the import failed: \(lastLine)") }
        var stages: [(name: String, seconds: Double)] = []
        for (index, (name, begun)) in stageStarts.enumerated() {
            let next = index + 1 < stageStarts.count ? stageStarts[index + 1].1 : end
            stages.append((name, next.timeIntervalSince(begun)))
        }
        let verifyLog = (try? String(contentsOfFile: "\(work)/verify.log", encoding: .utf8)) ?? ""
        let verified = verifyLog.split(separator: "\n").last { $0.contains("] verified") } ?? ""
        return ImportRun(seconds: end.timeIntervalSince(start), stages: stages,
                         verifierSeconds: Double(field("seconds", in: verified)) ?? 0,
                         peakKiB: ["stol-client": usage.ru_maxrss,
                                   "stol-importd": TaxonomyBench.peakRSS(pid: daemons[0].pid),
                                   "stol-verifyd": Int(field("peak_rss_kib", in: verified)) ?? 0])
    }

    /// `name=value` from a log line (swift-log's metadata).
    func field(_ name: String, in line: Substring) -> String {
        guard let range = line.range(of: " \(name)=") ?? line.range(of: ": \(name)=") else { return "" }
        return String(line[range.upperBound...].prefix { $0 != " " })
    }

    func f(_ seconds: Double) -> String { String(format: "%6.2f", seconds) }
    func mb(_ bytes: UInt64) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
    func mib(_ kib: Int?) -> String { kib.map { String(format: "%.0f MiB", Double($0) / 1024) } ?? "?" }
}
