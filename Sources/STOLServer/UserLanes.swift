import Foundation
import Glibc
import STOLTransport
import Synchronization

/// Each user's requests run on threads of their own: a lane per user, made of two
/// serial executors (``LaneExecutor``), one for lookups and one, at a lower
/// priority, for bulk work (``WorkClass``). The kernel then schedules users, not
/// requests: a user looping on cheap or heavy requests on 64 connections holds
/// at most one thread of each kind, and another user's lookup runs on its own
/// thread as soon as it arrives, preempting that work, instead of waiting in a
/// queue behind it. A user alone on the machine still gets both cores (a lookup
/// and a batch side by side). Threads of equal niceness share the cores equally,
/// though, whatever each user needs: so a user whose lanes used more than a quarter
/// of a core lately (``LaneMeter``) has its lookups run on its bulk lane too, and a
/// light user's lookup preempts the heavy users' work instead of taking turns with it.
///
/// What came before kept every cheap request on the event loops and the rest on a
/// shared pool with per-user counts (issue 33): a loop of `roots` (45 ms each) on
/// two connections held both event loops and put another user's lookups at 211×
/// their quiet p99, since a queue can only reorder work that has not started.
///
/// A lane lives while its user has a connection or a request in flight, and its
/// threads end after that (`retain`/`release`). At most ``maximumLanes`` users
/// have lanes of their own; beyond, users share ``sharedLanes`` lanes by uid, which
/// keeps the thread count bounded whatever the number of users (512 connections
/// of 512 users), at the cost of fairness between the users of one shared lane:
/// 2 × (48 + 4) lane threads at most, within the units' `TasksMax=160`.
public final class UserLanes: Sendable {
    /// The bulk executors' niceness: lowering one's priority needs no privilege,
    /// raising it back would (`CAP_SYS_NICE`), so bulk work has threads of its own.
    public static let bulkNiceness: Int32 = BackgroundPriority.niceness

    /// Request frames longer than this are bulk work from their size alone, decoded on
    /// the user's bulk lane instead of the event loop: no lookup is this long (a
    /// search's text is at most 512 bytes), and every batch is.
    public static let longFrameBytes = 4096

    /// Requests of one lane in progress at once, by class (``Lane/slots(for:)``):
    /// lookups are small answers, and a few in progress let one run while another
    /// waits for a release to open; bulk work takes one at a time, so that a user's
    /// connections queue on its lane and take the daemon's bulk slots in turn with
    /// other users' instead of filling them.
    public static let interactiveInProgress = 4
    public static let bulkInProgress = 1

    /// One user's two executors, and the CPU they used lately (``LaneMeter``).
    public final class Lane: Sendable {
        let interactive: LaneExecutor
        let bulk: LaneExecutor
        private let interactiveSlots = RequestSlots(count: UserLanes.interactiveInProgress)
        private let bulkSlots = RequestSlots(count: UserLanes.bulkInProgress)
        /// The CPU time of every job both executors ran.
        public let meter: LaneMeter
        fileprivate let key: Key

        init(key: Key, meter: LaneMeter = LaneMeter()) {
            self.key = key
            self.meter = meter
            interactive = LaneExecutor(niceness: 0, meter: meter)
            bulk = LaneExecutor(niceness: UserLanes.bulkNiceness, meter: meter)
        }

        /// The class `requested` work runs as on this lane: a heavy user's lookups
        /// (``LaneMeter/isHeavy``) run as bulk work, at the bulk lane's niceness and in
        /// its slots, so that they never compete with another user's lookups as equals.
        public func workClass(for requested: WorkClass) -> WorkClass {
            requested == .interactive && meter.isHeavy ? .bulk : requested
        }

        public func executor(for work: WorkClass) -> LaneExecutor {
            work == .bulk ? bulk : interactive
        }

        /// The requests of this class the lane has in progress (``RequestSlots``).
        public func slots(for work: WorkClass) -> RequestSlots {
            work == .bulk ? bulkSlots : interactiveSlots
        }

        fileprivate func stop() {
            interactive.stop()
            bulk.stop()
        }
    }

    enum Key: Hashable {
        case user(UInt32)
        case shared(Int)
    }

    private struct Entry {
        let lane: Lane
        var references: Int
    }

    private struct State {
        var lanes: [Key: Entry] = [:]
        var ownLanes = 0
    }

    public let maximumLanes: Int
    public let sharedLanes: Int
    private let state = Mutex(State())
    private let requests = Atomic<Int>(0)

    /// Requests started on any lane, or answered inline, since the start (``IdleMemoryTrim`` watches it).
    public var requestsStarted: Int { requests.load(ordering: .relaxed) }

    /// Counts a request answered inline on an event loop (it holds no lane of its own).
    public func countInline() { requests.add(1, ordering: .relaxed) }

    public init(maximumLanes: Int = 48, sharedLanes: Int = 4) {
        self.maximumLanes = max(1, maximumLanes)
        self.sharedLanes = max(1, sharedLanes)
    }

    /// `uid`'s lane, counted once more: a connection holds it while open, a request
    /// while it runs. Each `retain` is matched by one ``release(_:)``.
    public func retain(_ uid: UInt32) -> Lane {
        state.withLock { state in
            if var entry = state.lanes[.user(uid)] {
                entry.references += 1
                state.lanes[.user(uid)] = entry
                return entry.lane
            }
            let key: Key
            if state.ownLanes < maximumLanes {
                key = .user(uid)
                state.ownLanes += 1
            } else {
                key = .shared(Int(uid) % sharedLanes)
            }
            var entry = state.lanes[key] ?? Entry(lane: Lane(key: key), references: 0)
            entry.references += 1
            state.lanes[key] = entry
            return entry.lane
        }
    }

    /// Counts one more use of a lane already held: a request of a connection that holds it.
    public func retain(_ lane: Lane) {
        requests.add(1, ordering: .relaxed)
        state.withLock { state in
            guard let entry = state.lanes[lane.key], entry.lane === lane else { return }
            state.lanes[lane.key]?.references += 1
        }
    }

    /// Ends one use of `uid`'s lane; the last one stops its threads once they have
    /// run what is queued.
    public func release(_ lane: Lane) {
        let stopped = state.withLock { state -> Lane? in
            let key = lane.key
            guard let entry = state.lanes[key], entry.lane === lane else { return nil }
            guard entry.references > 1 else {
                state.lanes[key] = nil
                if case .user = key { state.ownLanes -= 1 }
                return entry.lane
            }
            state.lanes[key]?.references -= 1
            return nil
        }
        stopped?.stop()
    }

    /// Users (or shared slots) with a lane now (tests and diagnostics).
    public var laneCount: Int { state.withLock { $0.lanes.count } }
}

/// A serial executor on one thread of its own, for Swift tasks that prefer it
/// (`Task(executorPreference:)`): their synchronous parts run here in order; while
/// one waits (for the in-memory indexes, a release opening) the thread runs the
/// next. Default actors the task calls run here too (SE-0417), so a user's
/// favourites store works on its user's thread.
public final class LaneExecutor: TaskExecutor, Sendable {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var head = 0
        var stopping = false
    }

    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)
    /// The thread's niceness (0: the daemon's own priority).
    public let niceness: Int32

    /// Where the CPU time of each job is counted (its user's lane).
    private let meter: LaneMeter?

    init(niceness: Int32, meter: LaneMeter? = nil) {
        self.niceness = niceness
        self.meter = meter
        // No uid in the thread's name: /proc shows thread names to every user.
        let thread = Thread(named: niceness > 0 ? "stol.lane.bulk" : "stol.lane") { [self] in run() }
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.jobs.append(job) }
        available.signal()
    }

    /// Ends the thread once the queue is empty.
    func stop() {
        queue.withLock { $0.stopping = true }
        available.signal()
    }

    private func run() {
        // A lower niceness, the shortest slice and yields while a job runs, so that lookups
        // woken meanwhile preempt it (BackgroundPriority says why all three).
        let background = niceness > 0
        if background { BackgroundPriority.lowerCallingThread(to: niceness) }
        while true {
            available.wait()
            let next = queue.withLock { queue -> UnownedJob?? in
                guard queue.head < queue.jobs.count else { return queue.stopping ? .some(nil) : nil }
                let job = queue.jobs[queue.head]
                queue.head += 1
                if queue.head == queue.jobs.count {
                    queue.jobs.removeAll(keepingCapacity: true)
                    queue.head = 0
                }
                return job
            }
            switch next {
            case .some(.some(let job)):
                let started = meter == nil ? 0 : LaneMeter.threadCPUSeconds()
                if background {
                    BackgroundPriority.yieldingOften { job.runSynchronously(on: asUnownedTaskExecutor()) }
                } else {
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
                if let meter { meter.add(LaneMeter.threadCPUSeconds() - started) }
            case .some(.none):  // stopped and drained
                if background { BackgroundPriority.endCallingThread() }
                return
            case .none: continue       // a stop's or a spent signal
            }
        }
    }
}
