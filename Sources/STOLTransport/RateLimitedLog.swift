import Logging
import Synchronization

/// Notices a client can cause (a framing error, a refused import request), logged
/// so that a flood of them cannot flood the log: the first of a window is logged
/// at notice, the others are counted by code and summed up in one line when the
/// window has passed ("N more …").
public final class RateLimitedLog: Sendable {
    public static let window: Duration = .seconds(10)

    private struct State {
        var windowStart: ContinuousClock.Instant?
        var suppressed: [String: Int] = [:]
    }

    private let state = Mutex(State())
    private let window: Duration
    /// The line of the first of a window, and of the sum of the others.
    private let first: String
    private let more: String

    public init(window: Duration = RateLimitedLog.window, first: String, more: String) {
        self.window = window
        self.first = first
        self.more = more
    }

    /// The servers' framing errors (a connection is closed after each).
    public static func framingErrors(window: Duration = RateLimitedLog.window) -> RateLimitedLog {
        RateLimitedLog(window: window, first: "closing connection after framing error",
                       more: "more framing errors since the last one logged")
    }

    /// Logs the count of a window that has passed (called every window by the server,
    /// so that the last burst of a flood is summed up too).
    public func flushIfDue(logger: Logger) {
        let now = ContinuousClock.now
        flush(logger: logger) { start in now - start >= window }
    }

    /// Logs the count of the window in progress now, whatever its age: at stop, so that a
    /// restart never loses what was counted but not yet summed up.
    public func flush(logger: Logger) {
        flush(logger: logger) { _ in true }
    }

    /// Takes the counts when a window has started and `due` says its start is old enough.
    private func flush(logger: Logger, due: (ContinuousClock.Instant) -> Bool) {
        let summary = state.withLock { state -> [String: Int] in
            guard let start = state.windowStart, due(start), !state.suppressed.isEmpty else { return [:] }
            let summary = state.suppressed
            state.windowStart = nil
            state.suppressed = [:]
            return summary
        }
        log(summary, logger: logger)
    }

    private func log(_ summary: [String: Int], logger: Logger) {
        guard !summary.isEmpty else { return }
        logger.notice("\(more)", metadata: [
            "count": "\(summary.values.reduce(0, +))",
            "codes": "\(summary.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","))",
            "window": "\(window)"])
    }

    /// Records one event of `code` and logs what the window allows.
    public func record(code: String, logger: Logger) {
        let now = ContinuousClock.now
        let (isFirst, summary) = state.withLock { state -> (Bool, [String: Int]) in
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
        if isFirst {
            logger.notice("\(first) (others in the next \(window) are counted, not logged)", metadata: ["code": "\(code)"])
        }
    }
}
