import Glibc
import Synchronization

/// How much CPU one user's lanes used lately: the thread CPU time of every job its
/// lanes ran, decayed with a time constant of ``timeConstant`` (so a user that keeps
/// a core busy reads 1 second per second of it, one that asks a lookup every 10 ms
/// about 0.03). A user above ``heavyLoad`` is *heavy*: its lookups run on its bulk
/// lane (nice +10) until its use decays below ``lightLoad``
/// (``UserLanes/Lane/workClass(for:)``).
///
/// Why: lanes give each user a thread, and the kernel shares the cores between
/// threads of equal niceness equally, so eight users looping on cheap lookups (8
/// threads on 2 cores) put a ninth user's lookup behind a quarter of a time slice:
/// `stol-bench attack` measured another user's `taxon` p99 at 41× quiet. Demoted to
/// nice +10, each of those threads weighs a ninth of the ninth user's, whose lookup
/// then preempts them as soon as it wakes. A user alone, however heavy, loses
/// nothing: niceness only orders threads that compete.
public final class LaneMeter: Sendable {
    /// Seconds over which use is remembered (an exponential decay).
    public static let timeConstant = 1.0
    /// CPU seconds per second above which a user's lookups are demoted: a tenth of a
    /// core, three times what a user asking a lookup every 10 ms uses. Not higher:
    /// eight users looping on `roots` on two cores get a quarter of a core each, and
    /// with a quarter as the threshold they stayed just below it, light, sharing the
    /// cores with a ninth user's lookups as equals (roots-8-8uids: its p99 11×).
    public static let heavyLoad = 0.1
    /// CPU seconds per second below which a heavy user is light again. Apart from
    /// ``heavyLoad`` on purpose: users sharing the cores near one threshold went back
    /// and forth across it, their lookups half the time at the light users' priority
    /// (`stol-bench attack`, roots-8-8uids: another user's `taxon` p99 23×).
    public static let lightLoad = 0.05

    private struct State {
        var load = 0.0
        var at: Double
        var heavy = false
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> Double

    /// - Parameter clock: seconds on a monotonic clock (tests pass their own).
    public init(clock: @escaping @Sendable () -> Double = LaneMeter.monotonicSeconds) {
        self.clock = clock
        state = Mutex(State(at: clock()))
    }

    /// Counts `seconds` of CPU used now.
    public func add(_ seconds: Double) {
        let now = clock()
        state.withLock { state in
            Self.decay(&state, to: now)
            state.load += max(0, seconds)
            Self.classify(&state)
        }
    }

    /// CPU seconds per second lately (the decayed sum).
    public var load: Double {
        let now = clock()
        return state.withLock { state in
            Self.decay(&state, to: now)
            return state.load
        }
    }

    /// Above ``heavyLoad``, or above ``lightLoad`` since it was.
    public var isHeavy: Bool {
        let now = clock()
        return state.withLock { state in
            Self.decay(&state, to: now)
            Self.classify(&state)
            return state.heavy
        }
    }

    /// Heavy above ``heavyLoad``, light below ``lightLoad``, as it was in between.
    private static func classify(_ state: inout State) {
        if state.load > heavyLoad {
            state.heavy = true
        } else if state.load < lightLoad {
            state.heavy = false
        }
    }

    private static func decay(_ state: inout State, to now: Double) {
        guard now > state.at else { return }
        state.load *= exp(-(now - state.at) / timeConstant)
        state.at = now
    }

    @Sendable public static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The calling thread's CPU time in seconds.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
