import Foundation
import Glibc
import Synchronization

/// Threads for bulk work — batches of a thousand lineages, comparisons or names,
/// 50,000-node subtrees, closest relatives on NCBI's whole tree — started once at
/// a lower scheduling priority (nice +10), so that when the machine is busy the
/// kernel runs everyone's interactive lookups and searches first.
///
/// ``PerUserShare`` bounds how many of one user's requests run at once; this
/// bounds what they cost the others while they run. With one user looping on the
/// heaviest legal requests on two connections, another user's search waited on
/// a two-core machine for the cores those requests held (p99 2.2× quiet,
/// `stol-bench attack`). A thread cannot raise its priority back without
/// `CAP_SYS_NICE`, so bulk work gets threads of its own rather than lowering and
/// restoring a pool thread's.
public final class BulkExecutor: Sendable {
    /// The niceness of the bulk threads (lowering one's priority needs no privilege).
    public static let niceness: Int32 = 10

    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
    }

    private let queue = Mutex(Queue())
    private let available: DispatchSemaphore

    /// - Parameter threads: one per core by default: the kernel decides how much
    ///   of the machine they get.
    public init(threads: Int = ProcessInfo.processInfo.activeProcessorCount) {
        available = DispatchSemaphore(value: 0)
        for index in 0..<max(1, threads) {
            let thread = Thread { [self] in work() }
            thread.name = "stol.bulk.\(index)"
            thread.start()
        }
    }

    /// Runs `body` on a bulk thread and resumes with its result; the caller's task
    /// holds no thread meanwhile.
    public func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            queue.withLock { $0.jobs.append { continuation.resume(returning: body()) } }
            available.signal()
        }
    }

    private func work() {
        // Lower this thread's priority: on Linux `setpriority(PRIO_PROCESS, 0, …)`
        // applies to the calling thread alone (setpriority(2), NOTES). If the sandbox
        // refuses it, bulk work merely runs at the same priority as the rest.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Self.niceness)
        while true {
            available.wait()
            let job = queue.withLock { queue -> (@Sendable () -> Void)? in
                guard queue.head < queue.jobs.count else { return nil }
                let job = queue.jobs[queue.head]
                queue.head += 1
                if queue.head == queue.jobs.count {
                    queue.jobs.removeAll(keepingCapacity: true)
                    queue.head = 0
                }
                return job
            }
            job?()
        }
    }
}
