import STOLModel
import STOLProtocol

// Questions about places in the tree: ancestors, common ancestors, closest
// relatives, subtrees. On the whole tree they are answered from memory once it is
// loaded; until then they wait off the event loop.

struct AncestorsHandler: TaxonomyRequestHandler {
    static func runsInline(_ body: Stol_V1_AncestorsRequest, database: TaxonomyDatabase) -> Bool {
        body.ranks != .all || database.memoryIndexes?.wholeTree != nil
    }

    static func answer(_ body: Stol_V1_AncestorsRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        var list = Stol_V1_TaxonList()
        list.taxa = body.ranks == .all ? try context.queries.ancestorsOnFullTree(of: body.taxonID)
            : try context.queries.ancestors(of: body.taxonID, language: try RequestChecks.language(body.language, in: context.database))
        return .ancestors(list)
    }
}

struct CompareHandler: TaxonomyRequestHandler {
    /// Both views compare on the in-memory tree; before it is loaded, on the pool (which waits for it).
    static func runsInline(_ body: Stol_V1_CompareRequest, database: TaxonomyDatabase) -> Bool {
        database.memoryIndexes?.tree != nil
    }

    static func answer(_ body: Stol_V1_CompareRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonA)
        try RequestChecks.id(body.taxonB)
        let language = body.ranks == .all ? "en" : try RequestChecks.language(body.language, in: context.database)
        return .compare(try context.queries.compare(body.taxonA, body.taxonB, language: language, ranks: body.ranks))
    }
}

/// Closest relatives: n in 1…100 (default 10), computed within a candidate guard.
struct RelativesHandler: TaxonomyRequestHandler {
    static let defaultCount = 10
    static let maximumCount = 100

    /// Computed relatives wait for the in-memory tree (seconds after a start), on the pool.
    static func runsInline(_ body: Stol_V1_RelativesRequest, database: TaxonomyDatabase) -> Bool {
        body.ranks == .all ? false : database.memoryIndexes?.tree != nil
    }

    /// On NCBI's whole tree the search may examine a million nodes.
    static func isBulk(_ body: Stol_V1_RelativesRequest) -> Bool { body.ranks == .all }

    static func answer(_ body: Stol_V1_RelativesRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let n = body.n == 0 ? defaultCount : Int(body.n)
        guard n <= maximumCount else { throw TaxonomyError.invalidArgument("n must be 1…\(maximumCount)") }
        let guardLimit = body.maxCandidates == 0 ? TaxonomyQueries.defaultMaximumCandidates : Int(body.maxCandidates)
        if body.ranks == .all {
            return .relatives(try context.queries.relativesOnFullTree(of: body.taxonID, n: n, maximumCandidates: guardLimit))
        }
        return .relatives(try context.queries.relatives(of: body.taxonID, n: n, computed: body.computed,
                                                        maximumCandidates: guardLimit,
                                                        language: try RequestChecks.language(body.language, in: context.database)))
    }
}

/// A whole subtree: at most `max_taxa` (default 10,000, at most 50,000), refused with its size beyond.
struct SubtreeHandler: TaxonomyRequestHandler {
    static func runsInline(_ body: Stol_V1_SubtreeRequest, database: TaxonomyDatabase) -> Bool { false }
    static func isBulk(_ body: Stol_V1_SubtreeRequest) -> Bool { true }

    static func answer(_ body: Stol_V1_SubtreeRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try RequestChecks.id(body.taxonID)
        let maximum = body.maxTaxa == 0 ? TaxonomyQueries.defaultSubtreeTaxa : Int(body.maxTaxa)
        guard maximum <= TaxonomyQueries.maximumSubtreeTaxa else {
            throw TaxonomyError.invalidArgument("max_taxa must be at most \(TaxonomyQueries.maximumSubtreeTaxa)")
        }
        return .subtree(try context.queries.subtree(of: body.taxonID, ranks: body.ranks, maximumTaxa: maximum))
    }
}

/// The smallest tree connecting up to 10,000 taxa: a walk of their lineages, on the task pool.
struct InducedTreeHandler: TaxonomyRequestHandler {
    static func runsInline(_ body: Stol_V1_InducedTreeRequest, database: TaxonomyDatabase) -> Bool { false }
    static func isBulk(_ body: Stol_V1_InducedTreeRequest) -> Bool { true }

    static func answer(_ body: Stol_V1_InducedTreeRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        .inducedTree(try context.queries.inducedTree(body))
    }
}
