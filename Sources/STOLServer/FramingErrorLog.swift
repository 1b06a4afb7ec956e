import Logging
import Synchronization

/// Framing errors, logged so that a flood of bad frames cannot flood the log:
/// the first of a window is logged at notice, the others are counted and summed
/// up in one line when the window has passed ("N more framing errors").
public final class FramingErrorLog: Sendable {
    public static let window: Duration = .seconds(10)

    private struct State {
        var windowStart: ContinuousClock.Instant?
        var suppressed: [String: Int] = [:]
    }

    private let state = Mutex(State())
    private let window: Duration

    public init(window: Duration = FramingErrorLog.window) {
        self.window = window
    }

    /// Logs the count of a window that has passed (called every window by the server,
    /// so that the last burst of a flood is summed up too).
    public func flushIfDue(logger: Logger) {
        let now = ContinuousClock.now
        let summary = state.withLock { state -> [String: Int] in
            guard let start = state.windowStart, now - start >= window, !state.suppressed.isEmpty else { return [:] }
            let summary = state.suppressed
            state.windowStart = nil
            state.suppressed = [:]
            return summary
        }
        log(summary, logger: logger)
    }

    private func log(_ summary: [String: Int], logger: Logger) {
        guard !summary.isEmpty else { return }
        logger.notice("more framing errors since the last one logged", metadata: [
            "count": "\(summary.values.reduce(0, +))",
            "codes": "\(summary.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","))",
            "window": "\(window)"])
    }

    /// Records one framing error of `code` and logs what the window allows.
    public func record(code: String, logger: Logger) {
        let now = ContinuousClock.now
        let (first, summary) = state.withLock { state -> (Bool, [String: Int]) in
            if let start = state.windowStart, now - start < window {
                state.suppressed[code, default: 0] += 1
                return (false, [:])
            }
            let summary = state.suppressed
            state.windowStart = now
            state.suppressed = [:]
            return (true, summary)
        }
        log(summary, logger: logger)
        if first {
            logger.notice("closing connection after framing error (others in the next \(window) are counted, not logged)",
                          metadata: ["code": "\(code)"])
        }
    }
}
