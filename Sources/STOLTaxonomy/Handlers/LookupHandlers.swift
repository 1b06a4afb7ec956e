import STOLModel
import STOLProtocol

// Lookups by id: one taxon, its page, its children, the roots, many taxa by id.

struct GetTaxonHandler: TaxonomyRequestHandler {
    static func answer(_ body: Stol_V1_GetTaxonRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        return .taxon(try context.queries.taxon(id: body.taxonID, language: try RequestChecks.language(body.language, in: context.database)))
    }
}

struct DetailHandler: TaxonomyRequestHandler {
    static func answer(_ body: Stol_V1_TaxonDetailRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        return .detail(try context.queries.detail(of: body.taxonID, language: try RequestChecks.language(body.language, in: context.database)))
    }
}

struct ChildrenHandler: TaxonomyRequestHandler {
    static func answer(_ body: Stol_V1_ChildrenRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let limit = try RequestChecks.pageSize(body.limit)
        return .children(try context.queries.children(of: body.taxonID, offset: Int(body.offset), limit: limit,
                                                      language: try RequestChecks.language(body.language, in: context.database), ranks: body.ranks))
    }
}

struct RootsHandler: TaxonomyRequestHandler {
    static func answer(_ body: Stol_V1_RootsRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        .roots(try context.queries.roots(language: try RequestChecks.language(body.language, in: context.database)))
    }
}

/// Many taxa by id (a favourites list naming its entries): at most 1000 ids.
struct GetTaxaHandler: TaxonomyRequestHandler {
    static func runsInline(_ body: Stol_V1_GetTaxaRequest, database: TaxonomyDatabase) -> Bool { false }
    static func isBulk(_ body: Stol_V1_GetTaxaRequest) -> Bool { true }

    static func answer(_ body: Stol_V1_GetTaxaRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.batch(body.taxonIds.count, "ids")
        for id in body.taxonIds { try RequestChecks.id(id) }
        let answer = try context.queries.taxa(ids: body.taxonIds, language: try RequestChecks.language(body.language, in: context.database))
        context.merged.append(contentsOf: answer.merged)
        return .taxa(answer.response)
    }
}
