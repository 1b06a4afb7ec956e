import Foundation
import Synchronization

/// A count of requests allowed in progress at once, and the requests waiting for
/// one, admitted in the order they came. A request waits suspended, holding no
/// thread, and a cancelled one (its peer left) leaves the queue at once.
///
/// Used twice (``FramedRequestHandler``):
/// - the daemon's *bulk slots*: how many bulk requests the daemon works on at
///   once, over every user, so that the memory answers take while they are made
///   (a 50,000-node subtree's messages are tens of MiB before they are encoded, a
///   list of 50,000 favourites a few MiB) is bounded by the slots, not by the number
///   of users or connections;
/// - each lane's own (``UserLanes/Lane/slots(for:)``): how many requests of one
///   user are in progress at once. Without it a user's 64 connections each start a
///   request, and each one made the answer that was then queued: taxonomyd and
///   favoritesd held 64 answers per user in the making (favoritesd 1,583 MiB for
///   8 uids listing 50,000 favourites; issue 33). With it, a user's bulk requests
///   queue on its lane and take the daemon's slots in turn with other users'.
public final class RequestSlots: Sendable {
    private struct Waiter {
        let ticket: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var free: Int
        var waiting: [Waiter] = []
        var nextTicket: UInt64 = 0
    }

    private let state: Mutex<State>
    public let count: Int

    /// The daemon's bulk slots: one per core. A user's bulk work is serial on its lane
    /// already; the slots bound what *several* users' bulk work takes together. With two
    /// per core, eight users' bulk mix kept every bulk lane runnable, and another user's
    /// client, woken on a core that ran one, waited for the kernel's next tick (`stol-bench
    /// attack` bulk-2-8uids: `taxon` p99 3.8 ms against 1.0 quiet; the scheduler's trace
    /// showed the victim runnable for 7.8 ms behind bulk lanes at nice +10); one per core:
    /// 0.67–0.89 ms. One per core but one (a core kept free) was worse elsewhere: the guest's
    /// half-idle cores woke slowly and even an echo server outside STOL took 3–5× its quiet
    /// time (docs/benchmarks.md §19.8). Few slots also bound the memory answers take while
    /// they are made (a 50,000-node subtree's messages are tens of MiB before they are encoded).
    public static func bulk(cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> RequestSlots {
        RequestSlots(count: max(1, cores))
    }

    public init(count: Int) {
        self.count = max(1, count)
        state = Mutex(State(free: max(1, count)))
    }

    /// Takes a slot, waiting for one in turn: true once taken (then ``release()`` it),
    /// false when the task was cancelled first (nothing to release).
    public func acquire() async -> Bool {
        let ticket = state.withLock { state -> UInt64? in
            if state.free > 0, state.waiting.isEmpty {
                state.free -= 1
                return nil
            }
            state.nextTicket += 1
            return state.nextTicket
        }
        guard let ticket else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                // The task is marked cancelled before its handler runs, and the handler
                // takes this lock: a cancellation is seen here, or finds the waiter queued.
                let now = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.free > 0, state.waiting.isEmpty {
                        state.free -= 1
                        return true
                    }
                    state.waiting.append(Waiter(ticket: ticket, continuation: continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let index = state.waiting.firstIndex(where: { $0.ticket == ticket }) {
                    return state.waiting.remove(at: index)
                }
                return nil  // not queued yet (it sees the cancellation), or already admitted
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Gives a slot back: to the first waiter, or to the free count.
    public func release() {
        let next = state.withLock { state -> Waiter? in
            if !state.waiting.isEmpty { return state.waiting.removeFirst() }
            state.free += 1
            return nil
        }
        next?.continuation.resume(returning: true)
    }

    /// Slots free now (tests).
    public var free: Int { state.withLock { $0.free } }

    /// Requests waiting now (tests).
    public var waiting: Int { state.withLock { $0.waiting.count } }
}
