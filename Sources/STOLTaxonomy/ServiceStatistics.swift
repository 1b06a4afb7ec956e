import Foundation
import Synchronization

/// Counts of requests per operation and of error answers per code since the
/// daemon started, for the diagnostics report. Counts only: never query text,
/// ids asked for, or who asked.
public final class ServiceStatistics: Sendable {
    private struct Counts {
        var requests: [String: Int] = [:]
        var errors: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())
    public let started = Date()

    public init() {}

    func record(operation: String, errorCode: String?) {
        counts.withLock { counts in
            counts.requests[operation, default: 0] += 1
            if let errorCode { counts.errors[errorCode, default: 0] += 1 }
        }
    }

    public var requests: [String: Int] { counts.withLock { $0.requests } }
    public var errors: [String: Int] { counts.withLock { $0.errors } }
}
