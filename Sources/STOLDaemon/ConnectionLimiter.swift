import STOLProtocol
import Synchronization

/// The connections a daemon serves: at most ``limit`` in all and at most
/// ``perUserLimit`` per user (the uid from SO_PEERCRED), so that one user of a
/// shared machine cannot take every slot from the others. It also knows how long
/// the daemon has had no connection at all, for the idle exit.
///
/// The per-user limit alone does not stop several users together (eight users of
/// 64 fill 512): when the daemon is full, ``admit(uid:close:)`` lets a user who
/// holds at least two connections fewer than the user holding the most take that
/// user's oldest connection, which is closed. Shares even out, and a newcomer is
/// served rather than told BUSY while some user holds many slots.
public final class ConnectionLimiter: Sendable {
    public let limit: Int
    public let perUserLimit: Int

    /// A connection taken with ``admit(uid:close:)``; give it back with ``release(_:)``.
    public struct Admission: Sendable {
        public let uid: UInt32
        let id: UInt64
    }

    private struct Evictable {
        let id: UInt64
        let close: @Sendable () -> Void
    }

    private struct State {
        var open = 0
        var perUser: [UInt32: Int] = [:]
        var idleSince: ContinuousClock.Instant? = .now
        var nextID: UInt64 = 1
        /// Connections that may be closed to make room, oldest first, per user.
        var evictable: [UInt32: [Evictable]] = [:]
        /// Connections closed to make room, over the daemon's life.
        var evictions = 0
    }

    private let state = Mutex(State())

    public init(limit: Int, perUserLimit: Int) {
        self.limit = limit
        self.perUserLimit = perUserLimit
    }

    /// Takes a slot for `uid`, or returns the error frame's content when none is
    /// free. Such a slot is never closed to make room for another user.
    public func acquire(uid: UInt32) -> ProtocolError? {
        state.withLock { state in
            if let refusal = refusal(&state, uid: uid, mayEvict: false).error { return refusal }
            take(&state, uid: uid)
            return nil
        }
    }

    /// Takes a slot for `uid`, closing (with `close` of that connection) the oldest
    /// connection of the user holding the most when the daemon is full and that
    /// user holds at least two more than `uid`. While the closed connection goes
    /// away, the daemon holds one connection over its limit.
    public func admit(uid: UInt32, close: @escaping @Sendable () -> Void) -> Result<Admission, ProtocolError> {
        let (result, victim) = state.withLock { state -> (Result<Admission, ProtocolError>, Evictable?) in
            let (error, victim) = refusal(&state, uid: uid, mayEvict: true)
            if let error { return (.failure(error), nil) }
            take(&state, uid: uid)
            let id = state.nextID
            state.nextID += 1
            state.evictable[uid, default: []].append(Evictable(id: id, close: close))
            return (.success(Admission(uid: uid, id: id)), victim)
        }
        victim?.close()  // outside the lock: closing may run handlers
        return result
    }

    /// Gives back a slot of ``acquire(uid:)``.
    public func release(uid: UInt32) {
        state.withLock { state in give(&state, uid: uid) }
    }

    /// Gives back a slot of ``admit(uid:close:)`` (also after it was closed to make room).
    public func release(_ admission: Admission) {
        state.withLock { state in
            if var list = state.evictable[admission.uid], let index = list.firstIndex(where: { $0.id == admission.id }) {
                list.remove(at: index)
                state.evictable[admission.uid] = list.isEmpty ? nil : list
            }
            give(&state, uid: admission.uid)
        }
    }

    public var openConnections: Int { state.withLock { $0.open } }

    /// Connections closed so far to make room for another user.
    public var evictions: Int { state.withLock { $0.evictions } }

    /// How long there has been no connection (nil while one is open).
    public var idleFor: Duration? {
        state.withLock { state in state.idleSince.map { .now - $0 } }
    }

    /// Why `uid` gets no slot, or (when full and `mayEvict`) the connection to
    /// close for it, already taken off the evictable list.
    private func refusal(_ state: inout State, uid: UInt32, mayEvict: Bool) -> (error: ProtocolError?, victim: Evictable?) {
        let mine = state.perUser[uid, default: 0]
        if mine >= perUserLimit {
            return (ProtocolError(.busy, "too many connections from your user (limit \(perUserLimit) per user); " +
                                  "close some and try again", details: ["limit_per_user": String(perUserLimit)]), nil)
        }
        guard state.open >= limit else { return (nil, nil) }
        if mayEvict,
           let (victimUID, list) = state.evictable.filter({ $0.key != uid }).max(by: { $0.value.count < $1.value.count }),
           list.count >= mine + 2 {
            var rest = list
            let victim = rest.removeFirst()
            state.evictable[victimUID] = rest.isEmpty ? nil : rest
            state.evictions += 1
            return (nil, victim)
        }
        return (ProtocolError(.busy, "too many connections (limit \(limit)); try again",
                              details: ["limit": String(limit)]), nil)
    }

    private func take(_ state: inout State, uid: UInt32) {
        state.open += 1
        state.perUser[uid, default: 0] += 1
        state.idleSince = nil
    }

    private func give(_ state: inout State, uid: UInt32) {
        state.open -= 1
        let left = state.perUser[uid, default: 1] - 1
        state.perUser[uid] = left > 0 ? left : nil
        if state.open == 0 { state.idleSince = .now }
    }
}
