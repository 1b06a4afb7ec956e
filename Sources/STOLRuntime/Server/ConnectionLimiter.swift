import STOLProtocol
import Synchronization

/// The connections a daemon serves: at most ``limit`` in all and at most
/// ``perUserLimit`` per user (the uid from SO_PEERCRED), so that one user of a
/// shared machine cannot take every slot from the others. It also knows how long
/// the daemon has had no connection at all, for the idle exit.
public final class ConnectionLimiter: Sendable {
    public let limit: Int
    public let perUserLimit: Int

    private struct State {
        var open = 0
        var perUser: [UInt32: Int] = [:]
        var idleSince: ContinuousClock.Instant? = .now
    }

    private let state = Mutex(State())

    public init(limit: Int, perUserLimit: Int) {
        self.limit = limit
        self.perUserLimit = perUserLimit
    }

    /// Takes a slot for `uid`, or returns the error frame's content when none is free.
    public func acquire(uid: UInt32) -> ProtocolError? {
        state.withLock { state in
            if state.open >= limit {
                return ProtocolError(.busy, "too many connections (limit \(limit)); try again",
                                     details: ["limit": String(limit)])
            }
            if state.perUser[uid, default: 0] >= perUserLimit {
                return ProtocolError(.busy, "too many connections from your user (limit \(perUserLimit) per user); " +
                                     "close some and try again", details: ["limit_per_user": String(perUserLimit)])
            }
            state.open += 1
            state.perUser[uid, default: 0] += 1
            state.idleSince = nil
            return nil
        }
    }

    public func release(uid: UInt32) {
        state.withLock { state in
            state.open -= 1
            let left = state.perUser[uid, default: 1] - 1
            state.perUser[uid] = left > 0 ? left : nil
            if state.open == 0 { state.idleSince = .now }
        }
    }

    public var openConnections: Int { state.withLock { $0.open } }

    /// How long there has been no connection (nil while one is open).
    public var idleFor: Duration? {
        state.withLock { state in state.idleSince.map { .now - $0 } }
    }
}
