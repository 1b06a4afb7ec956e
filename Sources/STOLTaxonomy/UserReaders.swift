import Foundation
import GRDB
import Synchronization

/// Whose request a task reads the database for: each user's lane reads through
/// connections of its own (``UserReaders``). Set by ``TaxonomyService`` around a
/// request; unset (benchmarks, tests, the index build) the shared readers serve.
public struct ReaderKey: Hashable, Sendable {
    public let uid: UInt32
    /// The user's bulk lane has a connection of its own beside its lookups'.
    public let bulk: Bool

    public init(uid: UInt32, bulk: Bool) {
        self.uid = uid
        self.bulk = bulk
    }

    @TaskLocal public static var current: ReaderKey?
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
    static let idleTimeout: Duration = .seconds(60)

    private struct Entry {
        let queue: DatabaseQueue
        var lastUsed: ContinuousClock.Instant
        var inUse: Bool
    }

    private let open: @Sendable () throws -> DatabaseQueue
    private let entries = Mutex([ReaderKey: Entry]())

    init(open: @escaping @Sendable () throws -> DatabaseQueue) {
        self.open = open
    }

    /// Runs `body` on `key`'s connection, opening it first if needed.
    func read<T>(_ key: ReaderKey, _ body: (Database) throws -> T) throws -> T {
        let queue = try checkOut(key)
        defer { checkIn(key) }
        return try queue.inDatabase(body)
    }

    /// Connections open now (tests).
    var openCount: Int { entries.withLock { $0.count } }

    /// Closes every idle connection (a switch away from the database).
    func close() {
        let closing = entries.withLock { entries -> [DatabaseQueue] in
            let idle = entries.filter { !$0.value.inUse }
            for key in idle.keys { entries[key] = nil }
            return idle.values.map(\.queue)
        }
        for queue in closing { try? queue.close() }
    }

    private func checkOut(_ key: ReaderKey) throws -> DatabaseQueue {
        let now = ContinuousClock.now
        let (found, stale) = entries.withLock { entries -> (DatabaseQueue?, [DatabaseQueue]) in
            // Idle ones past their time, and the least recently used beyond the maximum.
            var stale: [DatabaseQueue] = []
            for (other, entry) in entries where !entry.inUse && now - entry.lastUsed > Self.idleTimeout {
                stale.append(entry.queue)
                entries[other] = nil
            }
            if var entry = entries[key] {
                entry.inUse = true
                entry.lastUsed = now
                entries[key] = entry
                return (entry.queue, stale)
            }
            while entries.count >= Self.maximumOpen,
                  let oldest = entries.filter({ !$0.value.inUse }).min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                stale.append(oldest.value.queue)
                entries[oldest.key] = nil
            }
            return (nil, stale)
        }
        for queue in stale { try? queue.close() }
        if let found { return found }
        let queue = try open()
        entries.withLock { $0[key] = Entry(queue: queue, lastUsed: now, inUse: true) }
        return queue
    }

    private func checkIn(_ key: ReaderKey) {
        entries.withLock { entries in
            entries[key]?.inUse = false
            entries[key]?.lastUsed = .now
        }
    }
}
