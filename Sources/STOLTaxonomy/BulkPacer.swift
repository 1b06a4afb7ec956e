import Synchronization

/// Paces one user's bulk work while other users are active: after a bulk request
/// that took `d`, the same user's next one starts no sooner than
/// ``paceFactor``·`d` after it ended. Alone on the machine a user is never paced.
///
/// ``BulkExecutor`` puts bulk work below everyone's lookups inside the daemon, but
/// the answers it makes are decoded by the user's own client on the same
/// machine: two connections looping 50,000-node subtrees and 1,000-lineage
/// batches kept both cores of the test machine busy between them, and another
/// user's searches waited for a core (p99 2.3× quiet, `stol-bench attack`).
/// Pacing the daemon's answers paces the client's work too.
public final class BulkPacer: Sendable {
    /// How recent another user's request must be for this user to be paced.
    public static let activityWindow: Duration = .seconds(1)
    /// A user's bulk work waits this many times as long as it ran: its daemon time,
    /// the encoding and its own client's decoding of the answer are each about as
    /// long, so at 2 the user's work takes about one core of two while others are
    /// active (1 left the other user's search p99 at 2.1× quiet, the favourites
    /// daemon's at 9.4×).
    public static let paceFactor = 2

    /// The longest single wait (a pathological request does not stall its user long).
    public static let longestWait: Duration = .milliseconds(250)

    private struct State {
        var lastSeen: [UInt32: ContinuousClock.Instant] = [:]
        var nextBulk: [UInt32: ContinuousClock.Instant] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Records that `uid` asked something (any request: lookups count).
    public func noteActivity(of uid: UInt32, at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            if let seen = state.lastSeen[uid], now - seen < .milliseconds(50) { return }
            state.lastSeen[uid] = now
            if state.lastSeen.count > 1024 {
                state.lastSeen = state.lastSeen.filter { now - $0.value < Self.activityWindow }
                state.nextBulk = state.nextBulk.filter { $0.value > now }
            }
        }
    }

    /// How long `uid`'s next bulk request should wait; zero when no other user was
    /// active in the last ``activityWindow`` or the user's pace allows it now.
    public func delay(for uid: UInt32, at now: ContinuousClock.Instant = .now) -> Duration {
        state.withLock { state in
            guard let next = state.nextBulk[uid], next > now, Self.othersActive(state, besides: uid, at: now) else { return .zero }
            return min(next - now, Self.longestWait)
        }
    }

    /// Charges `uid` for a bulk request that ran from `start` to `end`.
    public func charge(_ uid: UInt32, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) {
        state.withLock { state in
            guard Self.othersActive(state, besides: uid, at: end) else {
                state.nextBulk[uid] = nil
                return
            }
            state.nextBulk[uid] = max(state.nextBulk[uid] ?? end, end) + (end - start) * Self.paceFactor
        }
    }

    private static func othersActive(_ state: State, besides uid: UInt32, at now: ContinuousClock.Instant) -> Bool {
        state.lastSeen.contains { $0.key != uid && now - $0.value < activityWindow }
    }
}
