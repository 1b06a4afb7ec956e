import STOLModel
import STOLProtocol
import STOLTransport

/// What changed between two releases, a page at a time (``ReleaseDiff``): bulk work,
/// read from the two files.
struct DiffHandler: TaxonomyRequestHandler {
    static let operation = "diff"
    static func cost(_ body: Stol_V1_DiffRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_DiffRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        guard !body.fromRelease.isEmpty, !body.toRelease.isEmpty else {
            throw TaxonomyError.invalidArgument("a diff names two releases (from_release, to_release)")
        }
        guard body.limit <= ReleaseDiff.maximumPage else {
            throw TaxonomyError.invalidArgument("limit must be at most \(ReleaseDiff.maximumPage)")
        }
        guard body.taxonIds.count <= ReleaseDiff.maximumIDs else {
            throw TaxonomyError.invalidArgument("at most \(ReleaseDiff.maximumIDs) taxon_ids per request")
        }
        let provider = context.service.provider
        let old = try ReleaseDiff.Release(name: body.fromRelease, path: provider.file(ofRelease: body.fromRelease))
        let new = try ReleaseDiff.Release(name: body.toRelease, path: provider.file(ofRelease: body.toRelease))
        if !body.taxonIds.isEmpty {
            for id in body.taxonIds { try RequestChecks.id(id) }
            return .diff(try ReleaseDiff.changes(of: body.taxonIds, from: old, to: new))
        }
        let limit = body.limit == 0 ? ReleaseDiff.maximumPage : Int(body.limit)
        return .diff(try ReleaseDiff.page(from: old, to: new, afterID: max(0, body.afterID), limit: limit))
    }
}

/// One id through the bundled database and every installed release, oldest first.
struct HistoryHandler: TaxonomyRequestHandler {
    static let operation = "history"
    static func cost(_ body: Stol_V1_HistoryRequest) -> WorkClass { .interactive }

    static func answer(_ body: Stol_V1_HistoryRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let provider = context.service.provider
        var history = Stol_V1_HistoryResponse()
        history.taxonID = body.taxonID
        for release in [ReleaseName.bundled] + provider.pinned.installed() {
            // A release deleted meanwhile is left out, not an error.
            guard let path = try? provider.file(ofRelease: release) else { continue }
            history.releases.append(try ReleaseDiff.state(of: body.taxonID, in: ReleaseDiff.Release(name: release, path: path)))
        }
        return .history(history)
    }
}
