import STOLModel
import STOLProtocol
import STOLTransport

// Questions about places in the tree: ancestors, common ancestors, closest
// relatives, subtrees. On the whole tree they are answered from memory once it is
// loaded; until then they wait for it (``TaxonomyService/respond(to:context:)``).

struct AncestorsHandler: TaxonomyRequestHandler {
    static let operation = "ancestors"
    static var mergedIDFields: [WritableKeyPath<Stol_V1_AncestorsRequest, Int64>] { [\.taxonID] }

    static func answer(_ body: Stol_V1_AncestorsRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let lookups = LookupQueries(database: context.database)
        var list = Stol_V1_TaxonList()
        list.taxa = body.ranks == .all ? try lookups.ancestorsOnFullTree(of: body.taxonID)
            : try lookups.ancestors(of: body.taxonID, language: try RequestChecks.language(body.language, in: context.database))
        return .ancestors(list)
    }
}

struct CompareHandler: TaxonomyRequestHandler {
    static let operation = "compare"
    static var mergedIDFields: [WritableKeyPath<Stol_V1_CompareRequest, Int64>] { [\.taxonA, \.taxonB] }
    // Both views compare on the in-memory tree; before it is loaded the request
    // waits for it (``TaxonomyService/respond(to:context:)``).

    static func answer(_ body: Stol_V1_CompareRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonA)
        try RequestChecks.id(body.taxonB)
        let language = body.ranks == .all ? "en" : try RequestChecks.language(body.language, in: context.database)
        return .compare(try ComparisonQueries(database: context.database).compare(body.taxonA, body.taxonB, language: language, ranks: body.ranks))
    }
}

/// Closest relatives: n in 1…100 (default 10), computed within a candidate guard.
struct RelativesHandler: TaxonomyRequestHandler {
    static let defaultCount = 10
    static let maximumCount = 100

    static let operation = "relatives"
    static var mergedIDFields: [WritableKeyPath<Stol_V1_RelativesRequest, Int64>] { [\.taxonID] }

    /// On NCBI's whole tree the search may examine a million nodes: bulk. On the
    /// main ranks it is a lookup: from the table, or computed on the in-memory tree.
    static func cost(_ body: Stol_V1_RelativesRequest) -> WorkClass { body.ranks == .all ? .bulk : .interactive }

    static func answer(_ body: Stol_V1_RelativesRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let n = body.n == 0 ? defaultCount : Int(body.n)
        guard n <= maximumCount else { throw TaxonomyError.invalidArgument("n must be 1…\(maximumCount)") }
        let guardLimit = body.maxCandidates == 0 ? RelativesQueries.defaultMaximumCandidates : Int(body.maxCandidates)
        let relatives = RelativesQueries(database: context.database)
        if body.ranks == .all {
            return .relatives(try relatives.relativesOnFullTree(of: body.taxonID, n: n, maximumCandidates: guardLimit))
        }
        return .relatives(try relatives.relatives(of: body.taxonID, n: n, computed: body.computed,
                                                        maximumCandidates: guardLimit,
                                                        language: try RequestChecks.language(body.language, in: context.database)))
    }
}

/// A whole subtree: at most `max_taxa` (default 10,000, at most 50,000), refused with its size beyond.
struct SubtreeHandler: TaxonomyRequestHandler {
    static let operation = "subtree"
    static var mergedIDFields: [WritableKeyPath<Stol_V1_SubtreeRequest, Int64>] { [\.taxonID] }
    static func cost(_ body: Stol_V1_SubtreeRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_SubtreeRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let maximum = body.maxTaxa == 0 ? TreeQueries.defaultSubtreeTaxa : Int(body.maxTaxa)
        guard maximum <= TreeQueries.maximumSubtreeTaxa else {
            throw TaxonomyError.invalidArgument("max_taxa must be at most \(TreeQueries.maximumSubtreeTaxa)")
        }
        return .subtree(try TreeQueries(database: context.database).subtree(of: body.taxonID, ranks: body.ranks, maximumTaxa: maximum))
    }
}

/// The smallest tree connecting up to 10,000 taxa: a walk of their lineages, bulk work.
struct InducedTreeHandler: TaxonomyRequestHandler {
    static let operation = "induced_tree"
    static func cost(_ body: Stol_V1_InducedTreeRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_InducedTreeRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        .inducedTree(try TreeQueries(database: context.database).inducedTree(body))
    }
}

/// The descendants of a taxon at one rank, a page of at most 10,000 (default
/// 1,000): a scan of the subtree's range of the tree's preorder per page (at most
/// 2.6 M bytes on NCBI's root), bulk work.
struct DescendantsHandler: TaxonomyRequestHandler {
    static let operation = "descendants"
    static var mergedIDFields: [WritableKeyPath<Stol_V1_DescendantsRequest, Int64>] { [\.taxonID] }
    static func cost(_ body: Stol_V1_DescendantsRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_DescendantsRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let limit = body.limit == 0 ? TreeQueries.defaultDescendantsPage : Int(body.limit)
        guard limit <= TreeQueries.maximumDescendantsPage else {
            throw TaxonomyError.invalidArgument("limit must be at most \(TreeQueries.maximumDescendantsPage)")
        }
        guard body.rank.utf8.count <= 64 else { throw TaxonomyError.invalidArgument("rank must be at most 64 bytes") }
        return .descendants(try TreeQueries(database: context.database).descendants(of: body.taxonID, rank: body.rank,
                                                                                   offset: Int(body.offset), limit: limit))
    }
}
