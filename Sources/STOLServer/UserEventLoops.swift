import Glibc
import NIOCore
import NIOPosix
import Synchronization

/// The event loops a server's connections are read and written on, every
/// connection of one user (uid) on the same loop, and each new user on the loop
/// that serves the fewest users: while there are no more users than loops, no
/// two users share one.
///
/// Why (issue 33, docs/benchmarks.md §19.7): the lanes (``UserLanes``) keep one
/// user's *work* from another's, but every connection was read and written on one
/// of two shared loops. Eight users looping on bulk requests kept both loops busy
/// writing their answers, and another user's lookup, answered on the loop that
/// read it, waited behind them: the loop that wakes the client keeps running, and
/// on a loaded machine the woken client then waits for the scheduler's next tick
/// (p99 5.3 ms against 0.64 quiet). On a loop of its own, the loop answers and goes
/// back to sleep, and the kernel hands the CPU to the client at once.
public final class UserEventLoops: Sendable {
    /// The loops' threads, shut down by the server when it stops.
    public let group: MultiThreadedEventLoopGroup
    private let loops: [any EventLoop]

    private struct Assignment {
        var loop: Int
        var connections: Int
    }

    private struct State {
        var byUser: [UInt32: Assignment] = [:]
        /// Users on each loop.
        var users: [Int]
    }

    private let state: Mutex<State>

    public init(count: Int) {
        precondition(count > 0, "a server needs at least one event loop")
        group = MultiThreadedEventLoopGroup(numberOfThreads: count)
        loops = Array(group.makeIterator())
        state = Mutex(State(users: Array(repeating: 0, count: loops.count)))
        // A thread starts at its creator's niceness, and the group is made on a
        // concurrency pool thread, which libdispatch sets from its QoS (-2, where
        // allowed): every loop, and the lanes its connections start, runs at the
        // daemon's own priority (its main thread's), set before any connection comes.
        let niceness = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
        for loop in loops {
            loop.execute { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) }
        }
    }

    /// One connection's hold on its user's loop, given back once (``release()``),
    /// whichever of the connection's close and a failed registration comes first.
    public final class Ticket: Sendable {
        public let uid: UInt32
        public let loop: any EventLoop
        private let owner: UserEventLoops
        private let released = Atomic<Bool>(false)

        fileprivate init(uid: UInt32, loop: any EventLoop, owner: UserEventLoops) {
            self.uid = uid
            self.loop = loop
            self.owner = owner
        }

        /// The connection has closed (or was never served); later calls do nothing.
        public func release() {
            guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
            owner.release(uid)
        }
    }

    /// The loop `uid`'s new connection goes on: the one its other connections are
    /// on, else the loop with the fewest users (the first of them). Give it back
    /// with ``Ticket/release()`` when the connection has closed.
    public func acquire(_ uid: UInt32) -> Ticket {
        let index = state.withLock { state -> Int in
            if var assignment = state.byUser[uid] {
                assignment.connections += 1
                state.byUser[uid] = assignment
                return assignment.loop
            }
            let least = state.users.indices.min { state.users[$0] < state.users[$1] }!
            state.users[least] += 1
            state.byUser[uid] = Assignment(loop: least, connections: 1)
            return least
        }
        return Ticket(uid: uid, loop: loops[index], owner: self)
    }

    private func release(_ uid: UInt32) {
        state.withLock { state in
            guard var assignment = state.byUser[uid] else { return }
            assignment.connections -= 1
            if assignment.connections > 0 {
                state.byUser[uid] = assignment
            } else {
                state.byUser[uid] = nil
                state.users[assignment.loop] -= 1
            }
        }
    }

    /// The index of the loop `uid`'s connections are on (nil: it has none open).
    public func loopIndex(of uid: UInt32) -> Int? {
        state.withLock { $0.byUser[uid]?.loop }
    }
}
