import GRDB
import Synchronization

/// One request's hold on its user's read connections (``UserReaders``): the
/// request's first read of a database checks that database's connection out, its
/// later reads use it directly, and ``end()`` checks them all back in.
///
/// Every read used to check its connection out and in again, each time through the
/// one lock of all users' connections: a `roots` request reads dozens of times, and
/// with eight users looping on it that lock was where the others' lookups slept
/// (`perf record -e sched:sched_switch --call-graph dwarf` on taxonomyd: 2,344 of its
/// 3,600 sleeps in 5 s were in `UserReaders.checkOut`/`checkIn`), the more so as a
/// heavy user's lane runs at nice +10 and is preempted while it holds the lock. Now
/// a request checks each connection out once, under a read lock, and in with an
/// atomic; the lease's own lock is only ever taken by its request's task.
public final class ReaderLease: Sendable {
    public let key: ReaderKey
    private struct Held {
        let readers: UserReaders
        let connection: UserReaders.Connection
    }
    private let held = Mutex([ObjectIdentifier: Held]())

    /// The lease of the request the current task answers; unset (benchmarks, tests,
    /// the index build), reads go through the database's shared connections.
    @TaskLocal public static var current: ReaderLease?

    public init(key: ReaderKey) {
        self.key = key
    }

    /// This request's connection of `readers`, checked out on its first use.
    func queue(of readers: UserReaders) throws -> DatabaseQueue {
        let id = ObjectIdentifier(readers)
        if let queue = held.withLock({ $0[id]?.connection.queue }) { return queue }
        let connection = try readers.checkOut(key)
        let kept = held.withLock { held -> DatabaseQueue? in
            if let earlier = held[id] { return earlier.connection.queue }
            held[id] = Held(readers: readers, connection: connection)
            return nil
        }
        // Two child tasks of one request both checked it out: the second gives it back.
        if let kept {
            readers.checkIn(connection)
            return kept
        }
        return connection.queue
    }

    /// Hands every connection back (they may close once idle); reads after it check out again.
    public func end() {
        let released = held.withLock { held -> [Held] in
            defer { held = [:] }
            return Array(held.values)
        }
        for entry in released { entry.readers.checkIn(entry.connection) }
    }
}
