import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLTestFixtures

/// The four daemons of a soak, each under the real `systemd-socket-activate`
/// (the verifier with `--accept`, one process per import), in a scratch
/// runtime and state directory; and what the soak reads of them.
struct SoakStack {
    let work: String
    let binaries: String
    let environment: [String]
    /// taxonomy, favorites, import: the activator's pid becomes the daemon's at the first connection.
    let daemons: [(name: String, process: ChildProcess)]

    struct Resources {
        var name: String
        var rssKiB: Int
        var peakKiB: Int
        var fds: Int
        /// User and system CPU time the daemon has used since it started (/proc/PID/stat).
        var cpuSeconds: Double
    }

    /// A scratch directory under `parent` with `run`, `state` and `tmp`, readable by
    /// the other users a soak or an attack plays (they reach the sockets and the
    /// workload): the caller removes it.
    static func makeWorkDirectory(in parent: String, prefix: String) throws -> String {
        let work = try TemporaryDirectory.make(prefix: prefix, in: parent, mode: 0o755)
        for directory in ["run", "state", "tmp"] {
            try FileManager.default.createDirectory(atPath: work + "/" + directory, withIntermediateDirectories: true)
        }
        chmod(work + "/run", 0o755)
        return work
    }

    static func start(binaries: String, work: String, database: String, publicKey: String?) throws -> SoakStack {
        var environment = ["STOL_RUNTIME_DIR=\(work)/run", "STOL_STATE_DIR=\(work)/state", "TMPDIR=\(work)/tmp",
                           "STOL_BUNDLED_DB=\(URL(fileURLWithPath: database).path)", "STOL_LOG_LEVEL=notice"]
        if let publicKey { environment.append("STOL_TRUSTED_KEY=\(URL(fileURLWithPath: publicKey).path)") }
        // The allocator's own settings and statistics (MIMALLOC_SHOW_STATS=1, …) reach the
        // daemons: systemd-socket-activate passes only the variables it is given.
        environment += ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("MIMALLOC_") }
            .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        var daemons: [(String, ChildProcess)] = []
        var verifier: ChildProcess?
        do {
            for (name, extra) in [("taxonomy", [String]()), ("favorites", []), ("import", []), ("verify", ["--accept"])] {
                var arguments = extra + ["--listen=\(work)/run/\(name).sock", "--fdname=\(name)"]
                arguments += environment.flatMap { ["-E", $0] }
                arguments.append(binaries + "/stol-\(name)d")
                let process = try ChildProcess.start("/usr/bin/systemd-socket-activate", arguments, log: "\(work)/\(name).log")
                if name == "verify" { verifier = process } else { daemons.append(("stol-\(name)d", process)) }
                let socket = "\(work)/run/\(name).sock"
                waitUntil(seconds: 2, interval: 0.002) { FileManager.default.fileExists(atPath: socket) }
                // The soak's other users must reach the two public sockets (a bench, not
                // the product: systemd's units create them with their mode).
                if name == "taxonomy" || name == "favorites" { chmod(socket, 0o666) }
            }
        } catch {
            daemons.forEach { $0.1.stop() }
            verifier?.stop()
            throw error
        }
        if let verifier { daemons.append(("stol-verifyd (activator)", verifier)) }
        return SoakStack(work: work, binaries: binaries, environment: environment, daemons: daemons)
    }

    func stop() { daemons.forEach { $0.process.stop() } }

    /// One answer from each daemon: each has been exec'd, the taxonomy's indexes are built.
    func warmUp() throws {
        let deadline = TaxonomyBench.now() + 120
        while true {
            var request = Stol_V1_TaxonomyRequest()
            request.status = Stol_V1_StatusRequest()
            if case .status(let status)? = try? TaxonomyClient(service: "taxonomy", path: "\(work)/run/taxonomy.sock")
                .call(request).result, status.treeLoaded { break }
            guard TaxonomyBench.now() < deadline else { throw ValidationError("stol-taxonomyd did not load its indexes in 120 s") }
            usleep(50_000)
        }
        var count = Stol_V1_FavoritesRequest()
        count.count = Stol_V1_CountFavorites()
        _ = try FavoritesClient(service: "favorites", path: "\(work)/run/favorites.sock").call(count)
        var status = Stol_V1_ImportRequest()
        status.status = Stol_V1_ImportStatusRequest()
        _ = try ImportClient(service: "import", path: "\(work)/run/import.sock").call(status)
    }

    /// RSS, peak RSS and open descriptors of the three long-lived daemons.
    func resources() -> [Resources] {
        daemons.filter { !$0.name.hasPrefix("stol-verifyd") }.map { name, process in
            let status = (try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8)) ?? ""
            func kib(_ field: String) -> Int {
                for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
                    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
                }
                return 0
            }
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.pid)/fd").count) ?? -1
            return Resources(name: name, rssKiB: kib("VmRSS"), peakKiB: kib("VmHWM"), fds: fds,
                             cpuSeconds: Self.cpuSeconds(pid: process.pid))
        }
    }

    /// utime + stime of `pid`: fields 14 and 15 of /proc/PID/stat, counted after the
    /// command's closing parenthesis (the command itself may hold spaces).
    static func cpuSeconds(pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        // fields[0] is field 3 (the state): utime is field 14, stime field 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Starts each daemon's peak RSS (VmHWM) afresh from its RSS now (`clear_refs` 5,
    /// Linux 4.0), so that the next reading of ``Resources/peakKiB`` is the peak since.
    /// False when the kernel refused (another owner, not root).
    @discardableResult
    func resetPeaks() -> Bool {
        daemons.filter { !$0.name.hasPrefix("stol-verifyd") }.allSatisfy { _, process in
            (try? "5".write(toFile: "/proc/\(process.pid)/clear_refs", atomically: false, encoding: .utf8)) != nil
        }
    }

    /// The resources once departed clients' connections are closed (the daemons see
    /// the hang-ups asynchronously): up to 10 s for the descriptors to come back to
    /// `before` (nil: to stop changing).
    func resources(settlingTo before: [Resources]?) -> [Resources] {
        let deadline = TaxonomyBench.now() + 10
        var previous = resources()
        while TaxonomyBench.now() < deadline {
            if let before, !zip(before, previous).contains(where: { $1.fds > $0.fds + SoakBench.fdGrowthLimit }) { break }
            usleep(200_000)
            let now = resources()
            if before == nil, zip(previous, now).allSatisfy({ $0.fds == $1.fds }) { return now }
            previous = now
        }
        return previous
    }

    /// Runs the real `stol-client` with `arguments` (as this process's user), output to `log`.
    func client(_ arguments: [String], log: String) throws {
        let child = try ChildProcess.spawn(binaries + "/stol-client", arguments,
                                           environment: ["STOL_RUNTIME_DIR": "\(work)/run"], inheritEnvironment: false,
                                           stdout: .file("\(work)/\(log)", truncate: true))
        guard child.wait() == 0 else {
            let output = (try? String(contentsOfFile: "\(work)/\(log)", encoding: .utf8)) ?? ""
            throw ValidationError("stol-client \(arguments.prefix(2).joined(separator: " ")) failed: "
                                  + (output.split(separator: "\n").last.map(String.init) ?? "no output"))
        }
    }

    /// Waits until the taxonomy daemon answers from the database of `kind`.
    func waitForActive(_ kind: Stol_V1_DatabaseKind) throws {
        let deadline = TaxonomyBench.now() + 120
        let client = TaxonomyClient(service: "taxonomy", path: "\(work)/run/taxonomy.sock")
        while TaxonomyBench.now() < deadline {
            var request = Stol_V1_TaxonomyRequest()
            request.status = Stol_V1_StatusRequest()
            if case .status(let status)? = try? client.call(request).result, status.active.kind == kind { return }
            usleep(50_000)
        }
        throw ValidationError("the taxonomy daemon did not switch to \(kind) in 120 s")
    }
}
