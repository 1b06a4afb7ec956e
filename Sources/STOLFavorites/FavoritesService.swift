import Logging
import STOLProtocol
import STOLTransport

/// The favourites protocol (`protocol/favorites.proto`) on top of per-user stores.
///
/// Whose favourites a request touches is decided by ``RequestContext/peer`` alone
/// (the kernel's SO_PEERCRED record); no request field can name another user.
/// Uids and taxon ids appear in logs at debug level only.
public struct FavoritesService: FramedService {
    public typealias Request = Stol_V1_FavoritesRequest
    public typealias Response = Stol_V1_FavoritesResponse

    public let registry: FavoritesRegistry
    public let backup: FavoritesBackup

    public init(registry: FavoritesRegistry) {
        self.registry = registry
        self.backup = FavoritesBackup(registry: registry)
    }

    /// Serves the favourites kept under `directory` (one `<uid>.sqlite` per user).
    public init(directory: String, logger: Logger) {
        self.init(registry: FavoritesRegistry(directory: directory, logger: logger))
    }

    /// Lists and merges are bulk work: their cost grows with the user's favourites (a
    /// list of 50,000 is a few MiB in the making), so they run on the caller's bulk
    /// lane and in the daemon's bulk slots, which bound how many are made at once
    /// whatever the number of users and connections. The heart icon's requests
    /// (add, remove, toggle, is-favourite, count) stay lookups.
    public func workClass(of request: Request) -> WorkClass {
        switch request.body {
        case .list, .merge, .backup, .restore: .bulk
        default: .interactive
        }
    }

    /// `count` and `is_favorite` (the heart icon of every screen) answered at once on the
    /// event loop, from the user's open store's memory (``FavoritesStore/fromMemory(_:)``):
    /// no actor, no disk. Nil when the store is not open (its lane opens it) or for any
    /// other request.
    public func respondInline(to request: Request, context: RequestContext) -> Response? {
        let taxonID: Int64?
        switch request.body {
        case .count: taxonID = nil
        case .isFavorite(let query) where query.taxonID > 0 && query.taxonID <= FavoritesError.maximumTaxonID:
            taxonID = query.taxonID
        default: return nil
        }
        guard let store = registry.existingStore(for: context.peer.uid), let memory = store.fromMemory(taxonID) else {
            return nil
        }
        var response = Response()
        response.id = request.id
        if let taxonID {
            response.result = .state(Self.state(taxonID, isFavorite: memory.isFavorite, changed: false))
        } else {
            var count = Stol_V1_Count()
            count.count = UInt64(memory.count)
            response.result = .count(count)
        }
        return response
    }

    public func respond(to request: Request, context: RequestContext) async -> Response {
        guard let body = request.body else {
            return Response(requestID: request.id, error: request.missingBodyError)
        }
        let uid = context.peer.uid
        context.logger.debug("favourites request", metadata: ["uid": "\(uid)", "body": "\(body)"])
        switch body {
        case .backup, .prepareRestore, .restore:
            return await administer(body, requestID: request.id, context: context)
        default:
            break
        }
        // The store stays open (and the same) until the notice is taken: the
        // request is in flight for the registry until then.
        return await registry.withStore(for: uid) { store in
            var response = Response()
            response.id = request.id
            do throws(FavoritesError) {
                response.result = try await Self.perform(body, on: store)
            } catch {
                response.result = .error(error.protocolError.proto)
                if error.protocolError.code == .internal {
                    context.logger.error("favourites request failed", metadata: ["error": "\(error.protocolError.message)"])
                } else {
                    context.logger.debug("favourites request refused",
                                         metadata: ["uid": "\(uid)", "error": "\(error.protocolError.message)"])
                }
            }
            if let notice = await store.takeNotice() {
                response.notice = notice
            }
            return response
        }
    }

    /// Backup and restore of every user's favourites: root only (uid 0 by
    /// SO_PEERCRED), and they use no store of the caller's own.
    private func administer(_ body: Request.OneOf_Body, requestID: UInt64, context: RequestContext) async -> Response {
        var response = Response()
        response.id = requestID
        do throws(FavoritesError) {
            switch body {
            case .backup:
                guard context.peer.uid == 0 else { throw .notRoot(operation: "back up favourites") }
                let made = try await backup.backupAll()
                var done = Stol_V1_BackupDone()
                done.directory = made.directory
                done.users = made.users.map { copy in
                    .with { $0.uid = copy.uid; $0.fileName = copy.fileName; $0.favorites = UInt64(copy.favorites) }
                }
                context.logger.info("favourites backed up", metadata: ["users": "\(made.users.count)"])
                response.result = .backup(done)
            case .prepareRestore:
                guard context.peer.uid == 0 else { throw .notRoot(operation: "restore favourites") }
                let directory = try backup.prepareRestore()
                response.result = .staging(.with { $0.directory = directory })
            case .restore(let restore):
                guard context.peer.uid == 0 else { throw .notRoot(operation: "restore favourites") }
                let merged = try await backup.restore(uid: restore.uid, fileName: restore.fileName,
                                                      checkOnly: restore.checkOnly)
                context.logger.debug("favourites restored", metadata: ["uid": "\(restore.uid)", "added": "\(merged?.added ?? 0)"])
                response.result = .merged(.with {
                    $0.uid = restore.uid
                    $0.added = UInt64(merged?.added ?? 0)
                    $0.alreadyPresent = UInt64(merged?.alreadyPresent ?? 0)
                })
            default:
                throw .storageFailure("not an administrative request")
            }
        } catch {
            response.result = .error(error.protocolError.proto)
            context.logger.debug("favourites administration refused", metadata: ["error": "\(error.protocolError.message)"])
        }
        return response
    }

    /// Runs one request body against the caller's store.
    private static func perform(_ body: Request.OneOf_Body,
                                on store: FavoritesStore) async throws(FavoritesError) -> Response.OneOf_Result {
        switch body {
        case .add(let add):
            let changed = try await store.add(add.taxonID)
            return .state(state(add.taxonID, isFavorite: true, changed: changed))
        case .remove(let remove):
            let changed = try await store.remove(remove.taxonID)
            return .state(state(remove.taxonID, isFavorite: false, changed: changed))
        case .toggle(let toggle):
            let isFavorite = try await store.toggle(toggle.taxonID)
            return .state(state(toggle.taxonID, isFavorite: isFavorite, changed: true))
        case .isFavorite(let query):
            let isFavorite = try await store.isFavorite(query.taxonID)
            return .state(state(query.taxonID, isFavorite: isFavorite, changed: false))
        case .list:
            var list = Stol_V1_FavoriteList()
            list.entries = try await store.list().map { entry in
                var wire = Stol_V1_FavoriteEntry()
                wire.taxonID = entry.taxonID
                wire.createdAt = entry.createdAt
                return wire
            }
            return .list(list)
        case .count:
            var count = Stol_V1_Count()
            count.count = UInt64(try await store.count())
            return .count(count)
        case .clear:
            var cleared = Stol_V1_Cleared()
            cleared.removed = UInt64(try await store.clear())
            return .cleared(cleared)
        case .storage:
            var storage = Stol_V1_Storage()
            storage.bytes = UInt64(try await store.storageBytes())
            return .storage(storage)
        case .forgetMe:
            try await store.forgetMe()
            return .forgotten(Stol_V1_Forgotten())
        case .merge(let merge):
            let merged = try await store.merge(merge.entries.map { FavoriteEntry(taxonID: $0.taxonID, createdAt: $0.createdAt) })
            var wire = Stol_V1_Merged()
            wire.added = UInt64(merged.added)
            wire.alreadyPresent = UInt64(merged.alreadyPresent)
            return .merged(wire)
        case .backup, .prepareRestore, .restore:
            throw .storageFailure("an administrative request reached a user's store")  // routed to administer(_:) first
        }
    }

    private static func state(_ taxonID: Int64, isFavorite: Bool, changed: Bool) -> Stol_V1_FavoriteState {
        var state = Stol_V1_FavoriteState()
        state.taxonID = taxonID
        state.isFavorite = isFavorite
        state.changed = changed
        return state
    }
}
