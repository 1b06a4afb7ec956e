import ArgumentParser
import Foundation
import Glibc
import STOLTaxonomy
import STOLTestFixtures

/// `stol-bench attack`: what hostile users cost another user (issue 33). Each phase
/// (``AttackPhase``) starts attackers (`stol-bench attacker`, each uid through
/// `setpriv` when root) and, once they are sending, the victim (`stol-bench
/// attack-victim`, another uid), which times a taxon by id and its favourites'
/// count, each once every 10 ms, and as often a round trip to an echo server
/// outside STOL (`stol-bench attack-echo`): the machine's floor under that attack. Meanwhile the daemons' peak RSS is read from
/// /proc; when the victim is done the attackers stop, and the daemons' CPU time in
/// the next 5 s (work nobody waits for any more) and their RSS `--settle` seconds
/// later are read. ``AttackReport`` prints one row per phase with the targets, and
/// the bench exits 1 when one is missed.
struct AttackBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attack",
        abstract: "Another user's taxon and fav count latency, and the daemons' memory and CPU, under each attack of issue 33.")

    @Option(help: "Database the taxonomy daemon serves (e.g. out/reference.sqlite).") var database: String
    @Option(help: "Seconds the victim is measured in each phase: one request of each kind every 10 ms (20 s: 2,000 each).")
    var seconds: Double = 20
    @Option(help: "Seconds after a phase at which the daemons' RSS is read (the memory they kept).") var settle: Double = 60
    @Option(help: "Comma-separated phases or families to run after quiet (default: all; an unknown name lists them).")
    var phases: String?
    @Option(help: "The first attacking uid (the others follow it); the victim is the first + 10.") var firstUID = 61_100
    @Option(help: "Directory for the scratch state.") var workDir: String = "/var/tmp"
    @Option(help: "Directory of the stol-* binaries (default: next to stol-bench).") var binDir: String?

    static let victimInterval = 0.01
    /// The longest wait for the daemons to be idle before a phase (a phase before may have left work running).
    static let idleTimeout = 120.0

    func validate() throws {
        guard seconds > 0, settle >= 0 else { throw ValidationError("--seconds must be positive and --settle not negative") }
        _ = try AttackPhase.select(phases)
    }

    func run() throws {
        let binaries = binDir ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let selected = [AttackPhase.quiet] + (try AttackPhase.select(phases))
        let asRoot = getuid() == 0
        if !asRoot { print("not root: the attackers and the victim are all this user, so no fairness between users is measured") }
        let work = try SoakStack.makeWorkDirectory(in: workDir, prefix: "stolbench-attack")
        defer { try? FileManager.default.removeItem(atPath: work) }

        print("preparing the workload from \(database) …")
        let local = try TaxonomyDatabase(path: database, kind: .bundled, loadIndexes: false)
        try AttackWorkload(lookups: LookupQueries(database: local)).write(to: work + "/attack-workload.json")
        chmod(work + "/attack-workload.json", 0o644)

        let stack = try SoakStack.start(binaries: binaries, work: work, database: database, publicKey: nil)
        defer { stack.stop() }
        let echo = try BenchChild.start(binary: binaries + "/stol-bench", ["attack-echo", "--socket", work + "/run/echo.sock"],
                                        uid: nil, output: work + "/echo.out", log: work + "/echo.log")
        defer { echo.kill() }
        guard waitUntil(seconds: 10, interval: 0.01, { echo.logText.contains("started") }) else {
            throw ValidationError("the echo server did not start: \(echo.logText)")
        }
        try stack.warmUp()
        let session = Session(binary: binaries + "/stol-bench", work: work, stack: stack, seconds: seconds, settle: settle,
                              uid: { asRoot ? firstUID + $0 : nil }, victimUID: asRoot ? firstUID + 10 : nil)
        // The favourites a list or merge attacker lists or merges: the most a user may keep, once.
        let favouriteUsers = selected.filter { $0.requests?.service == "favorites" }.map(\.uids).max() ?? 0
        try session.fill(users: favouriteUsers)

        var results: [AttackPhaseResult] = []
        for phase in selected {
            print("\(phase.name): \(phase.what) …")
            results.append(try session.measure(phase))
        }
        let header = "attack bench: \(database) (\(local.taxaCount) taxa), victim uid \(asRoot ? "\(firstUID + 10)" : "(this user)"), "
            + "attackers uid \(asRoot ? "\(firstUID)…" : "(this user)"); \(Int(seconds)) s per phase, RSS after \(Int(settle)) s"
        let failures = AttackReport.print(results, settle: settle, header: header)
        if !failures.isEmpty {
            print("FAILED: \(failures.count) targets missed: \(failures.joined(separator: "; "))")
            throw ExitCode(1)
        }
    }

    /// One run's stack, binaries and knobs: what measuring a phase needs.
    struct Session {
        var binary: String
        var work: String
        var stack: SoakStack
        var seconds: Double
        var settle: Double
        /// The uid of the nth attacker (nil: this user).
        var uid: (Int) -> Int?
        var victimUID: Int?

        func fill(users: Int) throws {
            for user in 0..<users {
                let child = try BenchChild.start(binary: binary, ["attacker", "--work", work, "--requests", AttackRequests.favoritesFill.rawValue,
                                                                  "--mode", "once"],
                                                 uid: uid(user), output: "\(work)/fill-\(user).json", log: "\(work)/fill-\(user).log")
                let report = try child.collect(AttackerReport.self, timeoutSeconds: 600)
                guard report.errors.isEmpty, report.failures == 0 else {
                    throw ValidationError("filling the favourites of attacker \(user) failed: \(report.summary)")
                }
            }
        }

        func measure(_ phase: AttackPhase) throws -> AttackPhaseResult {
            var notes: [String] = []
            if !waitUntilIdle() { notes.append("the daemons were still busy \(Int(AttackBench.idleTimeout)) s after the phase before") }
            let peaksReset = stack.resetPeaks()
            var attackers: [BenchChild] = []
            defer { attackers.forEach { $0.kill() } }
            for user in 0..<(phase.requests == nil ? 0 : phase.uids) {
                attackers.append(try BenchChild.start(binary: binary, phase.attackerArguments(work: work), uid: uid(user),
                                                      output: "\(work)/\(phase.name)-\(user).json",
                                                      log: "\(work)/\(phase.name)-\(user).log"))
            }
            // Measure once every attacker is sending, and its unsent answers have piled up.
            let deadline = TaxonomyBench.now() + 30
            while attackers.contains(where: { !$0.logText.contains("started") }) && TaxonomyBench.now() < deadline { usleep(10_000) }
            if !attackers.isEmpty { usleep(1_000_000) }

            let requests = Int(seconds / AttackBench.victimInterval)
            // However slow the victim's answers, a phase ends: at 3× its time, or 30 s more.
            let victim = try BenchChild.start(binary: binary, ["attack-victim", "--work", work, "--requests", "\(requests)",
                                                               "--at-most-seconds", "\(max(3 * seconds, seconds + 30))"],
                                              uid: victimUID, output: "\(work)/\(phase.name)-victim.json",
                                              log: "\(work)/\(phase.name)-victim.log")
            defer { victim.kill() }
            let start = TaxonomyBench.now()
            var sampled: [String: Int] = [:]
            while !victim.hasExited {
                for daemon in stack.resources() { sampled[daemon.name] = max(sampled[daemon.name] ?? 0, daemon.rssKiB) }
                usleep(100_000)
            }
            let victimSeconds = TaxonomyBench.now() - start
            let load = Self.loadAverage()
            let measured = try victim.collect(SoakResult.self)

            var reports: [AttackerReport] = []
            for attacker in attackers {
                do {
                    reports.append(try attacker.collect(AttackerReport.self, timeoutSeconds: 10))
                } catch {
                    notes.append("an attacker failed: \(error); \(attacker.logText.suffix(300))")
                }
            }
            // The attackers' connections are closed: what the daemons do now, nobody waits for.
            let left = TaxonomyBench.now()
            let before = stack.resources()
            sleep(until: left + AttackReport.cpuWindowSeconds)
            let cpu = zip(before, stack.resources()).reduce(0) { $0 + $1.1.cpuSeconds - $1.0.cpuSeconds }
            var peak: [String: Int] = [:]
            for daemon in stack.resources() {
                peak[daemon.name] = max(sampled[daemon.name] ?? 0, peaksReset ? daemon.peakKiB : 0)
            }
            sleep(until: left + settle)
            var after: [String: Int] = [:]
            for daemon in stack.resources() { after[daemon.name] = daemon.rssKiB }

            func latencies(_ kind: String) -> TaxonomyBench.Latencies {
                TaxonomyBench.summarize((measured.samples[kind] ?? []).map { $0 / 1000 }, wall: victimSeconds,
                                        errors: measured.errors[kind] ?? 0)
            }
            return AttackPhaseResult(phase: phase, taxon: latencies(AttackVictim.taxon), count: latencies(AttackVictim.favoritesCount),
                                     echo: latencies(AttackVictim.echo),
                                     victimRequests: measured.samples.mapValues(\.count).merging(measured.errors, uniquingKeysWith: +),
                                     victimSeconds: victimSeconds, victimMessages: measured.messages,
                                     peakKiB: peak, afterKiB: after, cpuAfter: cpu, load: load,
                                     attackers: AttackerReport.total(reports), notes: notes)
        }

        /// Waits until the daemons use less than 5 % of a core over a second (at most
        /// ``AttackBench/idleTimeout``): false when they never did.
        func waitUntilIdle() -> Bool {
            let deadline = TaxonomyBench.now() + AttackBench.idleTimeout
            var before = stack.resources()
            while TaxonomyBench.now() < deadline {
                usleep(1_000_000)
                let now = stack.resources()
                if zip(before, now).reduce(0, { $0 + $1.1.cpuSeconds - $1.0.cpuSeconds }) < 0.05 { return true }
                before = now
            }
            return false
        }

        func sleep(until deadline: Double) {
            let left = deadline - TaxonomyBench.now()
            if left > 0 { usleep(useconds_t(left * 1_000_000)) }
        }

        static func loadAverage() -> Double {
            let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
            return Double(text.split(separator: " ").first ?? "") ?? 0
        }
    }
}
