import STOLModel
import STOLProtocol
import STOLTransport

// Batches: up to 1000 queries, names or pairs per request, each answered on its
// own (a miss is that line's error, a merged id that line's `merged`), always bulk work.

struct LineageBatchHandler: TaxonomyRequestHandler {
    static let operation = "lineage_batch"
    static func cost(_ body: Stol_V1_LineageBatchRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_LineageBatchRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.batch(body.queries.count, "queries")
        let template = body.hasTemplate ? try LineageBatchTemplate(body.template) : nil
        let language = try RequestChecks.language(body.language, in: context.database)
        let lineages = LineageQueries(database: context.database)
        if body.form == .packed {
            guard template == nil, body.columns.isEmpty else {
                throw TaxonomyError.invalidOption("the packed form (LINEAGE_FORM_PACKED) takes no template or columns",
                                     details: ["field": "form"])
            }
            return .lineageBatch(try lineages.lineageBatch(body.queries, language: language, ranks: body.ranks, form: .packed))
        }
        guard let template else {
            return .lineageBatch(try lineages.lineageBatch(body.queries, language: language, ranks: body.ranks, form: body.form,
                                                           columns: body.columns))
        }
        if body.ranks == .all && body.form == .ids {
            // The template alone (what `lineage --format` asks): filled from the tree itself.
            var response = try lineages.wholeLineageBatch(body.queries, columns: body.columns, formatted: template.treeFormatter)
            response.unclassified = template.unclassified
            return .lineageBatch(response)
        }
        var response = try lineages.lineageBatch(body.queries, language: language, ranks: body.ranks,
                                                 form: LineageBatchTemplate.workingForm(for: body.form), columns: body.columns)
        template.apply(to: &response, form: body.form)
        return .lineageBatch(response)
    }
}

struct CompareBatchHandler: TaxonomyRequestHandler {
    static let operation = "compare_batch"
    static func cost(_ body: Stol_V1_CompareBatchRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_CompareBatchRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.batch(body.pairs.count, "pairs")
        return .compareBatch(try ComparisonQueries(database: context.database).compareBatch(body.pairs, ranks: body.ranks))
    }
}

/// The common ancestor or majority taxon of each set: at most 1000 sets, 10,000 members.
struct LcaBatchHandler: TaxonomyRequestHandler {
    static let operation = "lca_batch"
    static func cost(_ body: Stol_V1_LcaBatchRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_LcaBatchRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.batch(body.sets.count, "sets")
        return .lcaBatch(try ComparisonQueries(database: context.database).lcaBatch(body))
    }
}

/// Every taxon of each name: at most 1000 names, at most 100 ids listed per name
/// (``NameQueries/maximumIDsPerName``; `total` says how many when more).
struct NameLookupHandler: TaxonomyRequestHandler {
    static let operation = "name_lookup"
    static func cost(_ body: Stol_V1_NameLookupRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_NameLookupRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.batch(body.names.count, "names")
        return .nameLookup(try NameQueries(database: context.database).lookUpNames(body.names, within: body.within,
                                                                                          idsOnly: body.idsOnly))
    }
}
