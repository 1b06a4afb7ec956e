import Logging
import Synchronization

/// A log handler that keeps the messages: to count the lines a flood produces, or to wait
/// for the line that says something happened.
public final class CapturedLog: @unchecked Sendable {
    public let lines = Mutex<[String]>([])

    public init() {}

    public var logger: Logger {
        Logger(label: "captured") { _ in CapturingHandler(log: self) }
    }

    /// Whether a line starts with `message`: the event a test waits for (``waitUntil(seconds:interval:_:)``).
    public func contains(_ message: String) -> Bool {
        lines.withLock { $0.contains { $0.hasPrefix(message) } }
    }

    struct CapturingHandler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            let details = (metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.lines.withLock { $0.append("\(message) \(details)") }
        }
    }
}

