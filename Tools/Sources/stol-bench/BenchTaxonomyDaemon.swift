import Foundation
import STOLTestFixtures

/// `stol-taxonomyd` behind the real `systemd-socket-activate`, as the benchmarks start
/// it: its socket `<scratch>/taxonomy.sock`, its state in `<scratch>/state`, its log in
/// `<scratch>/daemon.log`. The activator binds the socket; the first connection execs
/// the daemon (same pid).
enum BenchTaxonomyDaemon {
    static func socket(in scratch: String) -> String { scratch + "/taxonomy.sock" }

    /// `environment`: more variables for the daemon (`STOL_PINNED_RELEASES_MAX`, …).
    static func start(binaries: String, bundled: String, scratch: String,
                      environment: [String: String] = [:]) throws -> ChildProcess {
        var arguments = ["--listen=\(socket(in: scratch))", "--fdname=taxonomy",
                         "-E", "STOL_BUNDLED_DB=\(URL(fileURLWithPath: bundled).path)", "-E", "STOL_STATE_DIR=\(scratch)/state",
                         "-E", "STOL_RUNTIME_DIR=\(scratch)", "-E", "STOL_LOG_LEVEL=warning"]
        for (key, value) in environment.sorted(by: { $0.key < $1.key }) { arguments += ["-E", "\(key)=\(value)"] }
        return try ChildProcess.start("/usr/bin/systemd-socket-activate", arguments + [binaries + "/stol-taxonomyd"],
                                      log: scratch + "/daemon.log")
    }
}
