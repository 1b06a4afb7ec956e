import Foundation

/// What one phase of `stol-bench attack` measured.
struct AttackPhaseResult {
    var phase: AttackPhase
    var taxon: TaxonomyBench.Latencies
    var count: TaxonomyBench.Latencies
    /// The same victim's round trips to the echo server outside STOL: the machine's floor.
    var echo: TaxonomyBench.Latencies
    /// Requests the victim made of each kind, and how long it took.
    var victimRequests: [String: Int]
    var victimSeconds: Double
    var victimMessages: [String]
    /// Peak RSS during the phase and RSS `settle` seconds after it, per daemon (KiB).
    var peakKiB: [String: Int]
    var afterKiB: [String: Int]
    /// CPU seconds both daemons used in the first seconds after the attackers had gone.
    var cpuAfter: Double
    /// The 1-minute load average when the victim finished: how noisy the machine was.
    var load: Double
    var attackers: AttackerReport
    /// Anything that makes the numbers suspect (the daemons still busy from before, an attacker that failed).
    var notes: [String]
}

/// The targets of issue 33 and the table `stol-bench attack` prints: one row per
/// phase, the victim's `taxon` and `fav count` latencies against quiet, each
/// daemon's peak RSS and RSS after the phase, and the daemons' CPU once the
/// attackers had gone. A cell that misses its target is marked `!`. The echo
/// columns (no target) are the same round trip to a server outside STOL
/// (``AttackEcho``): how much of a p99 the machine itself adds under that attack.
enum AttackReport {
    static let taxonomyd = "stol-taxonomyd"
    static let favoritesd = "stol-favoritesd"
    static let p99Ratio = 2.0
    static let maxMilliseconds = 50.0
    static let peakMiB = [taxonomyd: 1536.0, favoritesd: 256.0]
    static let keptMiB = 64.0
    static let cpuAfterSeconds = 0.25
    /// How long after the attackers left the daemons' CPU is counted.
    static let cpuWindowSeconds = 5.0

    /// Prints the table and returns the targets missed.
    static func print(_ results: [AttackPhaseResult], settle: Double, header: String) -> [String] {
        guard let quiet = results.first else { return ["nothing measured"] }
        var failures: [String] = []
        func mib(_ kib: Int?) -> Double { Double(kib ?? 0) / 1024 }
        func ms(_ value: Double) -> String {
            String(format: value < 10 ? "%.2f" : value < 100 ? "%.1f" : "%.0f", value)
        }
        func cell(_ text: String, _ width: Int, missed: Bool = false) -> String {
            let text = text + (missed ? "!" : "")
            return String(repeating: " ", count: max(0, width - text.count)) + text + " "
        }
        let nameWidth = max(24, results.map(\.phase.name.count).max() ?? 0)
        func name(_ text: String) -> String { text.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + " " }

        Swift.print("")
        Swift.print(header)
        Swift.print(name("") + "│ " + "taxon (ms)".padding(toLength: 30, withPad: " ", startingAt: 0) + "│ "
                    + "fav count (ms)".padding(toLength: 30, withPad: " ", startingAt: 0) + "│ echo (ms)    "
                    + "│ taxonomyd MiB │ favoritesd MiB│ CPU s")
        Swift.print(name("phase") + "│" + cell("p50", 6) + cell("p99", 7) + cell("max", 7) + cell("×quiet", 7)
                    + "│" + cell("p50", 6) + cell("p99", 7) + cell("max", 7) + cell("×quiet", 7)
                    + "│" + cell("p99", 5) + cell("×quiet", 7) + "│" + cell("peak", 6) + cell("after", 7) + "│" + cell("peak", 6) + cell("after", 7) + "│" + cell("after", 5)
                    + cell("load", 5))
        Swift.print(name("target") + "│" + cell("", 6) + cell("", 7) + cell("<\(Int(maxMilliseconds))", 7)
                    + cell("≤\(Int(p99Ratio))", 7) + "│" + cell("", 6) + cell("", 7) + cell("<\(Int(maxMilliseconds))", 7)
                    + cell("≤\(Int(p99Ratio))", 7) + "│" + cell("", 5) + cell("", 7) + "│" + cell("≤\(Int(peakMiB[taxonomyd]!))", 6) + cell("q+\(Int(keptMiB))", 7)
                    + "│" + cell("≤\(Int(peakMiB[favoritesd]!))", 6) + cell("q+\(Int(keptMiB))", 7)
                    + "│" + cell("≤\(cpuAfterSeconds)", 5))
        for result in results {
            let phase = result.phase.name
            var row = name(phase) + "│"
            for (label, latencies, quietLatencies) in [("taxon", result.taxon, quiet.taxon), ("fav count", result.count, quiet.count)] {
                let ratio = quietLatencies.p99 > 0 ? latencies.p99 / quietLatencies.p99 : 0
                let slow = latencies.max >= maxMilliseconds, unfair = ratio > p99Ratio
                if slow { failures.append("\(phase): \(label) max \(ms(latencies.max)) ms") }
                if unfair { failures.append("\(phase): \(label) p99 \(String(format: "%.1f", ratio))× quiet") }
                if latencies.errors > 0 { failures.append("\(phase): \(latencies.errors) \(label) errors") }
                row += cell(ms(latencies.p50), 6) + cell(ms(latencies.p99), 7) + cell(ms(latencies.max), 7, missed: slow)
                    + cell(String(format: "%.1f", ratio), 7, missed: unfair) + "│"
            }
            let echoRatio = quiet.echo.p99 > 0 ? result.echo.p99 / quiet.echo.p99 : 0
            row += cell(ms(result.echo.p99), 5) + cell(String(format: "%.1f", echoRatio), 7) + "│"
            for daemon in [taxonomyd, favoritesd] {
                let peak = mib(result.peakKiB[daemon]), after = mib(result.afterKiB[daemon])
                let kept = after - mib(quiet.afterKiB[daemon])
                let tooBig = peak > peakMiB[daemon]!, notReturned = kept > keptMiB
                if tooBig { failures.append("\(phase): \(daemon) peak \(Int(peak)) MiB") }
                if notReturned { failures.append("\(phase): \(daemon) kept \(Int(kept)) MiB \(Int(settle)) s after") }
                row += cell(String(format: "%.0f", peak), 6, missed: tooBig) + cell(String(format: "%.0f", after), 7, missed: notReturned) + "│"
            }
            let busy = result.cpuAfter > cpuAfterSeconds
            if busy { failures.append("\(phase): the daemons used \(String(format: "%.2f", result.cpuAfter)) s of CPU after the attackers left") }
            row += cell(String(format: "%.2f", result.cpuAfter), 5, missed: busy) + cell(String(format: "%.1f", result.load), 5)
            Swift.print(row)
        }
        Swift.print("")
        Swift.print("×quiet: p99 over the quiet p99. echo: the victim's round trip to a server outside STOL "
                    + "(the machine's floor; no target). MiB: peak RSS during the phase, RSS \(Int(settle)) s after it "
                    + "(q+64: at most 64 MiB over quiet's). CPU s after: both daemons' CPU time in the "
                    + "\(Int(cpuWindowSeconds)) s after the attackers had gone. load: 1-minute load average.")
        for result in results {
            Swift.print("\(result.phase.name): \(result.phase.what)")
            var victim = String(format: "    victim: %d taxon and %d fav count requests in %.1f s",
                                result.victimRequests[AttackVictim.taxon] ?? 0, result.victimRequests[AttackVictim.favoritesCount] ?? 0,
                                result.victimSeconds)
            if result.taxon.errors + result.count.errors > 0 {
                victim += "; errors: \(result.victimMessages.joined(separator: "; "))"
            }
            Swift.print(victim)
            if result.phase.requests != nil { Swift.print("    attackers: \(result.attackers.summary)") }
            for note in result.notes { Swift.print("    note: \(note)") }
        }
        return failures
    }
}
