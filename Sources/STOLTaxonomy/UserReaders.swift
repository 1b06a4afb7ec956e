import Foundation
import GRDB
import STOLTransport
import Synchronization

/// Whose request a task reads the database for: each user's lane reads through
/// connections of its own (``UserReaders``), through the request's ``ReaderLease``.
public struct ReaderKey: Hashable, Sendable {
    public let uid: UInt32
    /// The user's bulk lane has a connection of its own beside its lookups'.
    public let bulk: Bool

    public init(uid: UInt32, bulk: Bool) {
        self.uid = uid
        self.bulk = bulk
    }
}

/// Read connections per user, opened on a user's first request and closed when
/// idle or when more users need one.
///
/// Four shared connections served every user before (issue 33): a user's long
/// query held one, and another user's lookup that drew it waited for the whole
/// query, whatever the threads; and SQLite's page cache, per connection, kept the
/// pages one user's search had read warm for the next user, so a term another
/// user had just searched answered measurably faster the first time. A user's
/// own connections are busy only with that user's work (one per lane: one at a
/// time), and their caches hold only what that user read. (The kernel's page
/// cache is shared by every process of the machine; it is not prefetched here,
/// since under the unit's `MemoryHigh` a release file's pages would be charged to
/// the daemon and reclaimed with its allocations stalled.)
final class UserReaders: Sendable {
    /// Connections kept open at most; beyond, the least recently used idle one closes.
    static let maximumOpen = 48
    /// A connection unused for this long is closed.
    static let idleTimeoutNanoseconds: UInt64 = 60_000_000_000
    /// How often a check-out looks for idle connections to close.
    static let sweepIntervalNanoseconds: UInt64 = 5_000_000_000

    /// One open connection and who holds it. Requests hold it through their
    /// ``ReaderLease``; counts and times are atomics, so that checking a known
    /// connection out and in takes only the map's read lock.
    final class Connection: Sendable {
        let queue: DatabaseQueue
        /// Requests (``ReaderLease``) or reads holding it now: it is not closed while any does.
        fileprivate let holders = Atomic<Int>(0)
        fileprivate let lastUsed = Atomic<UInt64>(0)

        fileprivate init(queue: DatabaseQueue) {
            self.queue = queue
        }

        fileprivate var isIdle: Bool { holders.load(ordering: .acquiring) == 0 }

        fileprivate func hold(at now: UInt64) {
            holders.add(1, ordering: .acquiringAndReleasing)
            lastUsed.store(now, ordering: .relaxed)
        }
    }

    private let open: @Sendable () throws -> DatabaseQueue
    /// Changed (under the write lock) only to open or close a connection.
    private let lock = ReadWriteLock()
    private nonisolated(unsafe) var connections: [ReaderKey: Connection] = [:]
    private let lastSweep = Atomic<UInt64>(0)
    private let checkOuts = Atomic<Int>(0)

    init(open: @escaping @Sendable () throws -> DatabaseQueue) {
        self.open = open
    }

    /// Runs `body` on `key`'s connection, opening it first if needed: one read
    /// outside a request (a request's reads go through its ``ReaderLease``).
    func read<T>(_ key: ReaderKey, _ body: (Database) throws -> T) throws -> T {
        let connection = try checkOut(key)
        defer { checkIn(connection) }
        return try connection.queue.inDatabase(body)
    }

    /// Connections handed out since the start (tests: once per request, not per read).
    var checkOutCount: Int { checkOuts.load(ordering: .relaxed) }

    /// Connections open now (tests).
    var openCount: Int { lock.withReadLock { connections.count } }

    /// Closes every idle connection (a switch away from the database).
    func close() {
        let closing = lock.withWriteLock { () -> [Connection] in
            let idle = connections.filter { $0.value.isIdle }
            for key in idle.keys { connections[key] = nil }
            return Array(idle.values)
        }
        for connection in closing { try? connection.queue.close() }
    }

    /// `key`'s connection, held (not closed as idle) until ``checkIn(_:)``.
    func checkOut(_ key: ReaderKey) throws -> Connection {
        checkOuts.add(1, ordering: .relaxed)
        let now = DispatchTime.now().uptimeNanoseconds
        sweepIfDue(now: now)
        // Holding it under the read lock: a close, under the write lock, sees the hold.
        if let known = lock.withReadLock({ () -> Connection? in
            let connection = connections[key]
            connection?.hold(at: now)
            return connection
        }) {
            return known
        }
        let opened = Connection(queue: try open())
        let (connection, stale) = lock.withWriteLock { () -> (Connection, [Connection]) in
            // Another request of the same key may have opened one meanwhile: then that one serves both.
            if let earlier = connections[key] {
                earlier.hold(at: now)
                return (earlier, [opened])
            }
            var stale: [Connection] = []
            while connections.count >= Self.maximumOpen,
                  let oldest = connections.filter({ $0.value.isIdle })
                    .min(by: { $0.value.lastUsed.load(ordering: .relaxed) < $1.value.lastUsed.load(ordering: .relaxed) }) {
                stale.append(oldest.value)
                connections[oldest.key] = nil
            }
            opened.hold(at: now)
            connections[key] = opened
            return (opened, stale)
        }
        for old in stale { try? old.queue.close() }
        return connection
    }

    func checkIn(_ connection: Connection) {
        connection.lastUsed.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        connection.holders.subtract(1, ordering: .acquiringAndReleasing)
    }

    /// Closes the connections idle for ``idleTimeoutNanoseconds``, at most once per
    /// ``sweepIntervalNanoseconds`` (the check-out that finds it due does it).
    private func sweepIfDue(now: UInt64) {
        let last = lastSweep.load(ordering: .relaxed)
        guard now &- last >= Self.sweepIntervalNanoseconds,
              lastSweep.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged else { return }
        let stale = lock.withWriteLock { () -> [Connection] in
            let idle = connections.filter {
                let used = $0.value.lastUsed.load(ordering: .relaxed)
                return $0.value.isIdle && now > used && now - used > Self.idleTimeoutNanoseconds
            }
            for key in idle.keys { connections[key] = nil }
            return Array(idle.values)
        }
        for connection in stale { try? connection.queue.close() }
    }
}
