import Foundation
import Glibc
import STOLClientKit
import STOLProtocol

/// Shows an import's progress frames: one live line per stage on a terminal
/// (stage, percentage, bytes per second, time left), one plain line per finished
/// stage otherwise, or one JSON object per frame with `--json`.
final class ImportProgressPrinter {
    enum Mode {
        case terminal, plain, json
    }

    private let mode: Mode
    private var stage: Stol_V1_ImportStage = .unspecified
    private var stageStarted = Date()
    private var last = Stol_V1_ImportProgress()
    private var lineOpen = false

    init(json: Bool) {
        mode = json ? .json : isatty(STDERR_FILENO) == 1 ? .terminal : .plain
    }

    func show(_ progress: Stol_V1_ImportProgress) {
        let now = Date()
        if progress.stage != stage {
            finishStage()
            stage = progress.stage
            stageStarted = now
        }
        last = progress
        let elapsed = now.timeIntervalSince(stageStarted)
        let rate = elapsed > 0.05 && progress.bytesDone > 0 ? Double(progress.bytesDone) / elapsed : nil
        let left = rate.map { Double(progress.bytesTotal - min(progress.bytesDone, progress.bytesTotal)) / $0 }
        switch mode {
        case .json:
            let frame = ProgressJSON(progress: .init(
                stage: progress.stage.protoName, fraction: progress.fraction,
                bytesDone: progress.bytesDone, bytesTotal: progress.bytesTotal,
                bytesPerSecond: rate.map { Int($0) }, secondsLeft: left.map { ($0 * 10).rounded() / 10 }))
            // One write per line: a script reading the pipe sees each object at once.
            FileHandle.standardOutput.write(Data((TextFormatter.json(frame) + "\n").utf8))
        case .terminal:
            var line = "  \(TextFormatter.stage(progress.stage).padding(toLength: 20, withPad: " ", startingAt: 0))"
            line += String(format: "%4d%%", Int((progress.fraction * 100).rounded(.down)))
            if let rate { line += "  \(Self.bytes(rate))/s" }
            if let left, progress.fraction < 1 { line += "  \(Self.duration(left)) left" }
            FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
            lineOpen = true
        case .plain:
            break
        }
    }

    /// Ends the current stage's line (call once the final frame has arrived, too).
    func finishStage() {
        guard stage != .unspecified else { return }
        let elapsed = Date().timeIntervalSince(stageStarted)
        switch mode {
        case .terminal:
            if lineOpen { FileHandle.standardError.write(Data("\n".utf8)) }
            lineOpen = false
        case .plain:
            var line = "\(TextFormatter.stage(stage)): \(Int((last.fraction * 100).rounded(.down)))%"
            if last.bytesDone > 0 {
                line += ", \(Self.bytes(Double(last.bytesDone))) in \(Self.duration(elapsed))"
                if elapsed > 0.05 { line += " (\(Self.bytes(Double(last.bytesDone) / elapsed))/s)" }
            }
            FileHandle.standardError.write(Data((line + "\n").utf8))
        case .json:
            break
        }
        stage = .unspecified
    }

    /// One `--json` line: `{"progress": {…}}`; the rate and the time left only once known.
    struct ProgressJSON: Encodable {
        struct Progress: Encodable {
            let stage: String
            let fraction: Double
            let bytesDone, bytesTotal: UInt64
            let bytesPerSecond: Int?
            let secondsLeft: Double?

            enum CodingKeys: String, CodingKey {
                case stage, fraction, bytesDone = "bytes_done", bytesTotal = "bytes_total"
                case bytesPerSecond = "bytes_per_second", secondsLeft = "seconds_left"
            }
        }

        let progress: Progress
    }

    /// `1.6 GB`, `426.5 MB`, `812 kB` (decimal units, as disks are sold).
    static func bytes(_ count: Double) -> String {
        switch count {
        case 1e9...: String(format: "%.1f GB", count / 1e9)
        case 1e6...: String(format: "%.1f MB", count / 1e6)
        case 1e3...: String(format: "%.0f kB", count / 1e3)
        default: "\(Int(count)) B"
        }
    }

    static func duration(_ seconds: Double) -> String {
        seconds < 10 ? String(format: "%.1f s", seconds)
            : seconds < 120 ? "\(Int(seconds.rounded())) s" : "\(Int(seconds / 60)) min \(Int(seconds) % 60) s"
    }
}

extension Stol_V1_ImportStage {
    /// The enum value's name in the `.proto` file (as the JSON mapping prints it).
    var protoName: String {
        switch self {
        case .received: "IMPORT_STAGE_RECEIVED"
        case .checkingHeader: "IMPORT_STAGE_CHECKING_HEADER"
        case .verifyingChecksum: "IMPORT_STAGE_VERIFYING_CHECKSUM"
        case .verifyingSignature: "IMPORT_STAGE_VERIFYING_SIGNATURE"
        case .decompressing: "IMPORT_STAGE_DECOMPRESSING"
        case .checkingDatabase: "IMPORT_STAGE_CHECKING_DATABASE"
        case .installing: "IMPORT_STAGE_INSTALLING"
        case .unspecified: "IMPORT_STAGE_UNSPECIFIED"
        case .UNRECOGNIZED(let value): "\(value)"
        }
    }
}
