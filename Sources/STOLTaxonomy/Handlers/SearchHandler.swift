import STOLModel
import STOLProtocol
import STOLTransport

/// Search: the query at most 512 bytes with a letter or digit (and at most
/// ``SearchLimits/words`` distinct words: ``SearchEngine/answer(_:options:)`` refuses
/// more), the limit at most 200 (default 20), a known rank, IUCN codes only; on the
/// task pool. Its work is capped (``SearchLimits``); an answer that reached a cap is
/// marked `partial`.
struct SearchHandler: TaxonomyRequestHandler {
    static let operation = "search"
    static func cost(_ body: Stol_V1_SearchRequest) -> WorkClass { .interactive }

    static func answer(_ body: Stol_V1_SearchRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        guard body.query.utf8.count <= ProtocolLimits.maximumQueryBytes else {
            throw TaxonomyError.invalidArgument("query longer than \(ProtocolLimits.maximumQueryBytes) bytes")
        }
        let query = SearchQuery(text: body.query, prefix: body.prefix, phrase: body.phrase)
        guard !query.isEmpty else { throw TaxonomyError.invalidArgument("the query has no letters or digits to search for") }
        let limit = body.limit == 0 ? ProtocolLimits.defaultSearchLimit : body.limit
        guard limit <= ProtocolLimits.maximumSearchLimit else {
            throw TaxonomyError.invalidArgument("limit must be at most \(ProtocolLimits.maximumSearchLimit)")
        }
        let rank: TaxonRank?
        if body.rank == .unspecified {
            rank = nil
        } else if let modelRank = TaxonRank(body.rank) {
            rank = modelRank
        } else {
            throw TaxonomyError.invalidArgument("unknown rank \(body.rank.rawValue)")
        }
        let statuses = Set(body.conservation.map { $0.uppercased() })
        guard statuses.isSubset(of: RequestChecks.conservationCodes) else {
            throw TaxonomyError.invalidArgument("conservation codes are \(RequestChecks.conservationCodes.sorted().joined(separator: ", "))")
        }
        guard body.within.utf8.count <= ProtocolLimits.maximumQueryBytes else {
            throw TaxonomyError.invalidArgument("within longer than \(ProtocolLimits.maximumQueryBytes) bytes")
        }
        context.logger.debug("search", metadata: ["query": "\(body.query)"])
        var result = Stol_V1_SearchResponse()
        let options = SearchOptions(rank: rank, conservation: statuses, limit: Int(limit),
                                    language: try RequestChecks.language(body.language, in: context.database), fuzzy: !body.noFuzzy,
                                    within: body.within)
        let answer = try SearchEngine(database: context.database).answer(query, options: options)
        result.hits = answer.hits
        result.partial = answer.work.partial
        return .search(result)
    }
}
