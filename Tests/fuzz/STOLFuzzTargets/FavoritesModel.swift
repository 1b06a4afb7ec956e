import STOLFavorites
import STOLProtocol

/// What one user's favourites must be after the requests so far: the reference
/// the favourites target checks every answer against (PROTOCOL.md §5).
struct FavoritesModel {
    private(set) var ids: Set<Int64> = []
    /// The user's file exists: created by the first add or toggle, kept by clear,
    /// removed by forget-me (storage answers 0 bytes exactly when there is none).
    private(set) var fileExists = false

    static func isValid(_ taxonID: Int64) -> Bool {
        taxonID > 0 && taxonID <= FavoritesError.maximumTaxonID
    }

    /// The result `body` must be answered with, or nil when only the answer itself
    /// can say (list), applying the request to the model.
    mutating func apply(_ body: Stol_V1_FavoritesRequest.OneOf_Body) -> Stol_V1_FavoritesResponse.OneOf_Result? {
        switch body {
        case .add(let add):
            guard Self.isValid(add.taxonID) else { return Self.invalid }
            fileExists = true
            return .state(Self.state(add.taxonID, true, changed: ids.insert(add.taxonID).inserted))
        case .remove(let remove):
            guard Self.isValid(remove.taxonID) else { return Self.invalid }
            return .state(Self.state(remove.taxonID, false, changed: ids.remove(remove.taxonID) != nil))
        case .toggle(let toggle):
            guard Self.isValid(toggle.taxonID) else { return Self.invalid }
            fileExists = true
            let now = ids.remove(toggle.taxonID) == nil
            if now { ids.insert(toggle.taxonID) }
            return .state(Self.state(toggle.taxonID, now, changed: true))
        case .isFavorite(let query):
            guard Self.isValid(query.taxonID) else { return Self.invalid }
            return .state(Self.state(query.taxonID, ids.contains(query.taxonID), changed: false))
        case .list, .storage:
            return nil
        case .count:
            return .count(.with { $0.count = UInt64(ids.count) })
        case .clear:
            defer { ids.removeAll() }
            return .cleared(.with { $0.removed = UInt64(ids.count) })
        case .forgetMe:
            ids.removeAll()
            fileExists = false
            return .forgotten(Stol_V1_Forgotten())
        case .merge(let merge):
            // Refused whole when one entry is bad; the limit is out of a fuzz run's reach.
            guard merge.entries.allSatisfy({ Self.isValid($0.taxonID) && FavoriteEntry.isValidTimestamp($0.createdAt) }) else {
                return Self.invalid
            }
            let given = Set(merge.entries.map(\.taxonID))
            let new = given.subtracting(ids)
            if !given.isEmpty { fileExists = true }
            ids.formUnion(new)
            return .merged(.with {
                $0.added = UInt64(new.count)
                $0.alreadyPresent = UInt64(given.count - new.count)
            })
        case .backup, .prepareRestore, .restore:
            // The fuzzed peer is not root: backup and restore are refused, nothing changes.
            return .error(.with { $0.code = .permissionDenied })
        }
    }

    /// Marks where only the error code is compared (the message names the id).
    static let invalid = Stol_V1_FavoritesResponse.OneOf_Result.error(.with { $0.code = .invalidRequest })

    private static func state(_ taxonID: Int64, _ isFavorite: Bool, changed: Bool) -> Stol_V1_FavoriteState {
        .with {
            $0.taxonID = taxonID
            $0.isFavorite = isFavorite
            $0.changed = changed
        }
    }
}
