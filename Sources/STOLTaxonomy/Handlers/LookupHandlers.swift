import STOLModel
import STOLProtocol
import STOLTransport

// Lookups by id: one taxon, its page, its children, the roots, many taxa by id.

struct GetTaxonHandler: TaxonomyRequestHandler {
    static let operation = "get_taxon"
    static var mergedIDFields: [WritableKeyPath<Stol_V1_GetTaxonRequest, Int64>] { [\.taxonID] }
    /// One row by id (and its lineage from the in-memory tree): microseconds.
    static func answersInline(_ body: Stol_V1_GetTaxonRequest) -> Bool { true }

    static func answer(_ body: Stol_V1_GetTaxonRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        return .taxon(try LookupQueries(database: context.database).taxon(id: body.taxonID, language: try RequestChecks.language(body.language, in: context.database),
                                                                          ranks: body.ranks))
    }
}

struct DetailHandler: TaxonomyRequestHandler {
    static let operation = "detail"
    static var mergedIDFields: [WritableKeyPath<Stol_V1_TaxonDetailRequest, Int64>] { [\.taxonID] }

    static func answer(_ body: Stol_V1_TaxonDetailRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        return .detail(try LookupQueries(database: context.database).detail(of: body.taxonID, language: try RequestChecks.language(body.language, in: context.database),
                                                                            ranks: body.ranks))
    }
}

/// On the whole tree (`ranks: all`) the children come from memory: until it is
/// loaded they wait on the task pool.
struct ChildrenHandler: TaxonomyRequestHandler {
    static let operation = "children"
    static var mergedIDFields: [WritableKeyPath<Stol_V1_ChildrenRequest, Int64>] { [\.taxonID] }

    static func answer(_ body: Stol_V1_ChildrenRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let limit = try RequestChecks.pageSize(body.limit)
        return .children(try LookupQueries(database: context.database).children(of: body.taxonID, offset: Int(body.offset), limit: limit,
                                                      language: try RequestChecks.language(body.language, in: context.database), ranks: body.ranks))
    }
}

struct RootsHandler: TaxonomyRequestHandler {
    static let operation = "roots"

    static func answer(_ body: Stol_V1_RootsRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        .roots(try LookupQueries(database: context.database).roots(language: try RequestChecks.language(body.language, in: context.database)))
    }
}

/// Many taxa by id (a favourites list naming its entries): at most 1000 ids.
struct GetTaxaHandler: TaxonomyRequestHandler {
    static let operation = "get_taxa"
    static func cost(_ body: Stol_V1_GetTaxaRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_GetTaxaRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.batch(body.taxonIds.count, "ids")
        for id in body.taxonIds { try RequestChecks.id(id) }
        let answer = try LookupQueries(database: context.database).taxa(ids: body.taxonIds, language: try RequestChecks.language(body.language, in: context.database))
        context.merged.append(contentsOf: answer.merged)
        return .taxa(answer.response)
    }
}
