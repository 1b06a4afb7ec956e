import Logging
import Synchronization

/// Maps each Unix user to their own ``FavoritesStore``, created on first use.
///
/// The uid comes from the caller's SO_PEERCRED (``RequestContext/peer``), never
/// from a message, and it only chooses a file name (`<uid>.sqlite`): no file holds
/// more than one user's favourites, so one user cannot reach another's.
public final class FavoritesRegistry: Sendable {
    /// `/var/lib/stol/favorites` when installed (``RuntimePaths/favoritesDirectory``).
    public let directory: String
    private let logger: Logger
    private let stores = Mutex<[UInt32: FavoritesStore]>([:])

    public init(directory: String, logger: Logger) {
        self.directory = directory
        self.logger = logger
    }

    /// The store of `uid`; the same instance every time, so its actor serialises
    /// all of that user's operations, whichever connection they arrive on.
    public func store(for uid: UInt32) -> FavoritesStore {
        stores.withLock { stores in
            if let store = stores[uid] { return store }
            let store = FavoritesStore(path: path(for: uid), logger: logger)
            stores[uid] = store
            return store
        }
    }

    /// The store of `uid` if one was made already (the event loop's fast path
    /// never creates one).
    public func existingStore(for uid: UInt32) -> FavoritesStore? {
        stores.withLock { $0[uid] }
    }

    /// Where `uid`'s favourites live.
    public func path(for uid: UInt32) -> String {
        "\(directory)/\(uid).sqlite"
    }
}
