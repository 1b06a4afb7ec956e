import STOLProtocol

/// The rank tables (`rank_order`): static, answered on the event loop.
struct RankOrderHandler: TaxonomyRequestHandler {
    static let operation = "rank_order"

    static func answer(_ body: Stol_V1_RankOrderRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        .rankOrder(.current)
    }
}
