import Logging
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
    private let state = Mutex(State())

    private struct Entry {
        let store: FavoritesStore
        /// Requests inside ``withStore(for:isolation:_:)`` now.
        var inFlight = 0
        /// Order of last use, for the least recently used (a counter: two
        /// uses can read the same clock instant).
        var lastUse: UInt64
        /// When the last request let go (or the store was made).
        var releasedAt: ContinuousClock.Instant
    }

    private struct State {
        var entries: [UInt32: Entry] = [:]
        /// Stores being closed, by uid; removed once closed.
        var closing: [UInt32: Task<Void, Never>] = [:]
        var uses: UInt64 = 0

        mutating func nextUse() -> UInt64 {
            uses += 1
            return uses
        }
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
        let store = await acquire(uid)
        defer { release(uid) }
        return try await body(store)
    }

    /// The store of `uid` if it is open, without counting a request in flight and
    /// without opening a file (tests of the registry). A store being closed is not returned.
    public func existingStore(for uid: UInt32) -> FavoritesStore? {
        state.withLock { $0.entries[uid]?.store }
    }

    /// Stores open now, counting those being closed.
    public var openStoreCount: Int {
        state.withLock { $0.entries.count + $0.closing.count }
    }

    /// Closes every store with no request in flight that was last used at or
    /// before `cutoff`; returns once they are closed, with how many there were.
    @discardableResult
    public func closeIdleStores(unusedSince cutoff: ContinuousClock.Instant) async -> Int {
        let closing = state.withLock { state in
            let idle = state.entries.filter { $0.value.inFlight == 0 && $0.value.releasedAt <= cutoff }.map(\.key)
            return idle.map { startClosing($0, in: &state) }
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
        case use(FavoritesStore, closingFirst: [Task<Void, Never>])
        case waitFor(Task<Void, Never>)
    }

    /// The store of `uid`, counted in flight. A new store first closes the least
    /// recently used idle ones over the limit, and waits for them: the limit is
    /// what bounds the open files, so it holds when this returns.
    private func acquire(_ uid: UInt32) async -> FavoritesStore {
        while true {
            let next = state.withLock { state -> Acquisition in
                if let closing = state.closing[uid] { return .waitFor(closing) }
                let use = state.nextUse()
                if var entry = state.entries[uid] {
                    entry.inFlight += 1
                    entry.lastUse = use
                    state.entries[uid] = entry
                    return .use(entry.store, closingFirst: [])
                }
                let store = FavoritesStore(path: path(for: uid), logger: logger)
                state.entries[uid] = Entry(store: store, inFlight: 1, lastUse: use, releasedAt: .now)
                return .use(store, closingFirst: evictLeastRecentlyUsed(in: &state))
            }
            switch next {
            case .waitFor(let closing):
                await closing.value
            case .use(let store, let closingFirst):
                for task in closingFirst { await task.value }
                return store
            }
        }
    }

    private func release(_ uid: UInt32) {
        state.withLock { state in
            guard var entry = state.entries[uid] else { return }
            entry.inFlight -= 1
            entry.releasedAt = .now
            state.entries[uid] = entry
        }
    }

    /// Starts closing idle stores, least recently used first, until no more than
    /// the limit are open (fewer may go when too many have requests in flight).
    private func evictLeastRecentlyUsed(in state: inout State) -> [Task<Void, Never>] {
        let excess = state.entries.count - limits.maximumOpenStores
        guard excess > 0 else { return [] }
        let victims = state.entries.filter { $0.value.inFlight == 0 }
            .sorted { $0.value.lastUse < $1.value.lastUse }
            .prefix(excess)
            .map(\.key)
        return victims.map { startClosing($0, in: &state) }
    }

    /// Moves `uid`'s idle store from the open ones to those being closed.
    private func startClosing(_ uid: UInt32, in state: inout State) -> Task<Void, Never> {
        guard let entry = state.entries.removeValue(forKey: uid) else {
            preconditionFailure("closing a store that is not open")
        }
        let store = entry.store
        let task = Task { [self] in
            await store.close()
            self.state.withLock { _ = $0.closing.removeValue(forKey: uid) }
        }
        state.closing[uid] = task
        return task
    }
}
