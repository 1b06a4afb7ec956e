import Logging
import STOLTransport
import Synchronization

/// Maps each Unix user to their own ``FavoritesStore``, made on first use and
/// closed again once the user is idle.
///
/// The uid comes from the caller's SO_PEERCRED (``RequestContext/peer``), never
/// from a message, and it only chooses a file name (`<uid>.sqlite`): no file holds
/// more than one user's favourites, so one user cannot reach another's.
///
/// **Lifetime.** An open store holds its SQLite file open (the database, its
/// `-wal` and `-shm`). Kept for every uid that ever connected, a long-running
/// daemon on a machine of many users would hold one such file per user for
/// good. So a store is closed when it has been unused for
/// ``Limits/idleTimeout`` (``closeIdleStores(unusedSince:)``, called
/// periodically by ``IdleStoreCloser``), and when a new user would make more
/// than ``Limits/maximumOpenStores`` stores, the least recently used idle one is
/// closed first. Closing loses nothing: every acknowledged change is committed
/// to the file, and the next request opens it again (through the integrity
/// check, as any first open).
///
/// **Never under a request.** Requests use a store through
/// ``withStore(for:isolation:_:)``, which counts them in flight; only a store
/// with none in flight is closed. While one is being closed, requests of its
/// user wait for the close to finish, then open a new store: one user never
/// has two stores at once, so their operations stay serialised by one actor and
/// the file is never opened twice by this process (see ``FavoritesStore``'s
/// note on POSIX locks).
public final class FavoritesRegistry: Sendable {
    public struct Limits: Sendable {
        /// Most stores kept open at once. More may be open while more users
        /// than that have requests in flight at the same moment; the excess is
        /// closed when the next new user arrives or at the next idle sweep.
        public var maximumOpenStores: Int
        /// A store unused this long is closed by ``FavoritesRegistry/closeIdleStores(unusedSince:)``.
        public var idleTimeout: Duration

        /// 64 stores (the per-user connection limit is 64 too, so one busy
        /// user's connections never compete with each other for a slot) and
        /// 60 s: a user browsing keeps their file open, a user who left closes it.
        public init(maximumOpenStores: Int = 64, idleTimeout: Duration = .seconds(60)) {
            self.maximumOpenStores = max(1, maximumOpenStores)
            self.idleTimeout = idleTimeout
        }
    }

    /// `/var/lib/stol/favorites` when installed (``RuntimePaths/favoritesDirectory``).
    public let directory: String
    public let limits: Limits
    private let logger: Logger
    /// The map of open stores, read by every request under the read lock and changed
    /// (a store opened or closed) under the write lock. Not a `Mutex` taken by each
    /// request: a heavy user's lane (nice +10) preempted while it held one kept every
    /// other user's requests waiting (perf of `stol-bench attack`'s
    /// pipeline-fav-count-64-8uids: 25 % of favoritesd's CPU spinning in it, another
    /// user's `fav count` p99 26× quiet, max 525 ms). An entry's counts are atomics.
    private let lock = ReadWriteLock()
    nonisolated(unsafe) private var state = State()
    /// Order of use, for the least recently used (a counter: two uses can read the
    /// same clock instant).
    private let uses = Atomic<UInt64>(0)
    /// The instant ``Entry/releasedAt`` counts from.
    private let epoch = ContinuousClock.now

    private final class Entry: Sendable {
        let store: FavoritesStore
        /// Requests inside ``withStore(for:isolation:_:)`` now (changed under the read
        /// lock or none; read to close the store only under the write lock, when no
        /// request can take it).
        let inFlight = Atomic<Int>(0)
        /// Order of last use.
        let lastUse = Atomic<UInt64>(0)
        /// When the last request let go (or the store was made), in nanoseconds since the registry's epoch.
        let releasedAt: Atomic<Int64>

        init(store: FavoritesStore, releasedAt: Int64) {
            self.store = store
            self.releasedAt = Atomic(releasedAt)
        }
    }

    private struct State {
        var entries: [UInt32: Entry] = [:]
        /// Stores being closed, by uid; removed once closed.
        var closing: [UInt32: Task<Void, Never>] = [:]
    }

    private func nextUse() -> UInt64 { uses.wrappingAdd(1, ordering: .relaxed).newValue }

    private func nanoseconds(_ instant: ContinuousClock.Instant) -> Int64 {
        let (seconds, attoseconds) = (instant - epoch).components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    public init(directory: String, logger: Logger, limits: Limits = Limits()) {
        self.directory = directory
        self.logger = logger
        self.limits = limits
    }

    /// Runs `body` with the store of `uid`; the store stays open until `body`
    /// returns. The same instance for every request of the user meanwhile, so
    /// its actor serialises all of that user's operations, whichever connection
    /// they arrive on.
    public func withStore<T, Failure: Error>(
        for uid: UInt32, isolation: isolated (any Actor)? = #isolation,
        _ body: (FavoritesStore) async throws(Failure) -> T
    ) async throws(Failure) -> T {
        let entry = await acquire(uid)
        defer { release(entry) }
        return try await body(entry.store)
    }

    /// The store of `uid` if it is open, without counting a request in flight and
    /// without opening a file (tests of the registry). A store being closed is not returned.
    public func existingStore(for uid: UInt32) -> FavoritesStore? {
        lock.withReadLock { state.entries[uid]?.store }
    }

    /// Stores open now, counting those being closed.
    public var openStoreCount: Int {
        lock.withReadLock { state.entries.count + state.closing.count }
    }

    /// Closes every store with no request in flight that was last used at or
    /// before `cutoff`; returns once they are closed, with how many there were.
    @discardableResult
    public func closeIdleStores(unusedSince cutoff: ContinuousClock.Instant) async -> Int {
        let cutoff = nanoseconds(cutoff)
        let closing = lock.withWriteLock {
            let idle = state.entries.filter {
                $0.value.inFlight.load(ordering: .acquiring) == 0 && $0.value.releasedAt.load(ordering: .relaxed) <= cutoff
            }.map(\.key)
            return idle.map { startClosing($0) }
        }
        for task in closing { await task.value }
        if !closing.isEmpty {
            logger.debug("closed idle favourites stores", metadata: ["count": "\(closing.count)"])
        }
        return closing.count
    }

    /// Where `uid`'s favourites live.
    public func path(for uid: UInt32) -> String {
        "\(directory)/\(uid).sqlite"
    }

    // MARK: - Leases

    private enum Acquisition {
        case use(Entry, closingFirst: [Task<Void, Never>])
        case waitFor(Task<Void, Never>)
    }

    /// The store of `uid`, counted in flight. A new store first closes the least
    /// recently used idle ones over the limit, and waits for them: the limit is
    /// what bounds the open files, so it holds when this returns.
    private func acquire(_ uid: UInt32) async -> Entry {
        // The usual case, under the read lock: the store is open.
        if let open = lock.withReadLock({ state.entries[uid].map(counted) }) { return open }
        while true {
            let next = lock.withWriteLock { () -> Acquisition in
                if let closing = state.closing[uid] { return .waitFor(closing) }
                // Opened by another request since the read lock was let go.
                if let entry = state.entries[uid] { return .use(counted(entry), closingFirst: []) }
                let entry = counted(Entry(store: FavoritesStore(path: path(for: uid), logger: logger),
                                          releasedAt: nanoseconds(.now)))
                state.entries[uid] = entry
                return .use(entry, closingFirst: evictLeastRecentlyUsed())
            }
            switch next {
            case .waitFor(let closing):
                await closing.value
            case .use(let entry, let closingFirst):
                for task in closingFirst { await task.value }
                return entry
            }
        }
    }

    /// `entry` with one more request in flight, used now. Under either lock: the entry is
    /// not closed while the lock is held, nor afterwards while the request counts in it.
    private func counted(_ entry: Entry) -> Entry {
        entry.inFlight.wrappingAdd(1, ordering: .acquiringAndReleasing)
        entry.lastUse.store(nextUse(), ordering: .relaxed)
        return entry
    }

    /// No lock: the entry cannot be closed while this request counts in it.
    private func release(_ entry: Entry) {
        entry.releasedAt.store(nanoseconds(.now), ordering: .relaxed)
        entry.inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing)
    }

    /// Starts closing idle stores, least recently used first, until no more than
    /// the limit are open (fewer may go when too many have requests in flight).
    /// Under the write lock.
    private func evictLeastRecentlyUsed() -> [Task<Void, Never>] {
        let excess = state.entries.count - limits.maximumOpenStores
        guard excess > 0 else { return [] }
        let victims = state.entries.filter { $0.value.inFlight.load(ordering: .acquiring) == 0 }
            .sorted { $0.value.lastUse.load(ordering: .relaxed) < $1.value.lastUse.load(ordering: .relaxed) }
            .prefix(excess)
            .map(\.key)
        return victims.map { startClosing($0) }
    }

    /// Moves `uid`'s idle store from the open ones to those being closed.
    /// Under the write lock.
    private func startClosing(_ uid: UInt32) -> Task<Void, Never> {
        guard let entry = state.entries.removeValue(forKey: uid) else {
            preconditionFailure("closing a store that is not open")
        }
        let store = entry.store
        let task = Task { [self] in
            await store.close()
            self.lock.withWriteLock { _ = self.state.closing.removeValue(forKey: uid) }
        }
        state.closing[uid] = task
        return task
    }
}
