import Foundation
import Logging

/// Logging for every STOL process: swift-log to standard error (unbuffered, so a
/// crash loses nothing; journald picks it up under systemd).
///
/// Privacy rule, enforced by review and by `LoggingPrivacyTests`: query strings,
/// names users searched for and uids are only ever logged at `.debug`.
public enum LoggingSetup {
    /// Bootstraps swift-log once; the level comes from `STOL_LOG_LEVEL` (default info).
    public static func bootstrap(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let level = environment["STOL_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
