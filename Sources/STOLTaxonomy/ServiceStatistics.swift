import Foundation
import Synchronization

/// Counts of requests per operation and of error answers per code since the
/// daemon started, for the diagnostics report, kept per user: the report shows
/// its caller's own counts only, so that no user learns from it what another is
/// doing (issue 33: another uid's searches and detail requests showed as they
/// happened). Counts only: never query text or ids asked for.
public final class ServiceStatistics: Sendable {
    private struct Counts {
        var requests: [String: Int] = [:]
        var errors: [String: Int] = [:]
    }

    /// Users counted apart; beyond them (a machine with more users than this asking
    /// in one daemon's life), the counts go to the totals only.
    public static let maximumUsers = 4096

    private let total = Mutex(Counts())
    private let byUser = Mutex([UInt32: Counts]())
    public let started = Date()

    public init() {}

    func record(uid: UInt32, operation: String, errorCode: String?) {
        func add(_ counts: inout Counts) {
            counts.requests[operation, default: 0] += 1
            if let errorCode { counts.errors[errorCode, default: 0] += 1 }
        }
        total.withLock { add(&$0) }
        byUser.withLock { users in
            guard users[uid] != nil || users.count < Self.maximumUsers else { return }
            add(&users[uid, default: Counts()])
        }
    }

    /// Every user's requests by operation (tests; never shown to a user).
    public var requests: [String: Int] { total.withLock { $0.requests } }
    public var errors: [String: Int] { total.withLock { $0.errors } }

    /// One user's own requests by operation, and error answers by code.
    public func requests(of uid: UInt32) -> [String: Int] { byUser.withLock { $0[uid]?.requests ?? [:] } }
    public func errors(of uid: UInt32) -> [String: Int] { byUser.withLock { $0[uid]?.errors ?? [:] } }
}
