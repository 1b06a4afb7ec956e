import Foundation
import Synchronization

/// How many bulk requests the daemon works on at once, over every user: each user
/// has one bulk lane, so the slots go round the users with bulk work, and the
/// memory the answers take while they are made (a 50,000-node subtree's messages
/// are tens of MiB before they are encoded) is bounded by the slots, not by the
/// number of users. A request waits for a slot suspended, holding no thread.
public final class BulkSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>
    public let count: Int

    /// By default two per core: enough to keep the cores busy while one waits for the
    /// database, few enough to bound the memory.
    public init(count: Int = 2 * ProcessInfo.processInfo.activeProcessorCount) {
        self.count = max(1, count)
        state = Mutex(State(free: max(1, count)))
    }

    public func acquire() async {
        if state.withLock({ state in
            guard state.free > 0 else { return false }
            state.free -= 1
            return true
        }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if !state.waiting.isEmpty { return state.waiting.removeFirst() }
            state.free += 1
            return nil
        }
        next?.resume()
    }

    /// Slots free now (tests).
    public var free: Int { state.withLock { $0.free } }
}
