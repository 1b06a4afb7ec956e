import STOLProtocol
import STOLTransport

/// taxonkit's filter over at most 1000 queries on the whole tree: bulk work, as a lineage batch.
struct RankFilterHandler: TaxonomyRequestHandler {
    static let operation = "rank_filter"
    static func cost(_ body: Stol_V1_RankFilterRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_RankFilterRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.batch(body.queries.count, "queries")
        return .rankFilter(try LineageQueries(database: context.database).rankFilter(body))
    }
}
