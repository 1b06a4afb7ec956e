import Foundation
import Synchronization

/// How much of the task pool one user may hold: at most ``perUser`` of a user's
/// requests run there at a time; the user's others wait their turn, in order,
/// holding no thread, while other users' requests go ahead.
///
/// The pool has a thread per core. A user looping on the heaviest legal requests
/// (closest relatives on NCBI's tree, 1000-id lineage batches, 27,146-node
/// subtrees) on two connections held both on a two-core machine, and another
/// user's search waited behind them: its p99 went from 2.4 to 37.6 ms (15×;
/// `stol-bench attack`). With one pool thread per user on two cores, the other
/// core stays free for everyone else. A user alone loses half the pool's width
/// for batches: measured and accepted, since being fair to the people of a shared
/// machine is the service's promise.
public final class PerUserShare: Sendable {
    private struct State {
        var running: [UInt32: Int] = [:]
        var waiting: [UInt32: [CheckedContinuation<Void, Never>]] = [:]
    }

    private let state = Mutex(State())
    /// Pool requests one user may run at once.
    public let perUser: Int

    /// By default all the cores but one, at least one.
    public init(perUser: Int = max(1, ProcessInfo.processInfo.activeProcessorCount - 1)) {
        self.perUser = max(1, perUser)
    }

    /// Waits (suspended) until `uid` may run one more request on the pool.
    public func acquire(_ uid: UInt32) async {
        if state.withLock({ admit(uid, &$0) }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state -> Bool in
                if admit(uid, &state) { return true }
                state.waiting[uid, default: []].append(continuation)
                return false
            }
            if admitted { continuation.resume() }
        }
    }

    /// Ends one of `uid`'s requests: its slot goes to that user's next waiting
    /// request, if any, else back to the pool.
    public func release(_ uid: UInt32) {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if var queue = state.waiting[uid], !queue.isEmpty {
                let first = queue.removeFirst()
                state.waiting[uid] = queue.isEmpty ? nil : queue
                return first
            }
            let running = state.running[uid, default: 1] - 1
            state.running[uid] = running > 0 ? running : nil
            return nil
        }
        next?.resume()
    }

    /// Requests of `uid` running and waiting (for tests and diagnostics).
    public func load(of uid: UInt32) -> (running: Int, waiting: Int) {
        state.withLock { ($0.running[uid] ?? 0, $0.waiting[uid]?.count ?? 0) }
    }

    /// Counts one more running request of `uid` if its share allows it.
    private func admit(_ uid: UInt32, _ state: inout State) -> Bool {
        guard state.running[uid, default: 0] < perUser else { return false }
        state.running[uid, default: 0] += 1
        return true
    }
}
