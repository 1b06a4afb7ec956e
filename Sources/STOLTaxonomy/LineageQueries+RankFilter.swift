import STOLModel
import STOLProtocol

extension LineageQueries {
    /// taxonkit's `filter` on the source's whole tree (`rank_filter`): each query
    /// resolved as in a lineage batch (``lineageBatch(_:language:ranks:form:)`` on
    /// ``Stol_V1_RankView/all``), its taxon judged by ``RankFilter`` from its own rank
    /// and, for a taxon without an ordered rank, its ancestors' (nearest first).
    ///
    /// Options the rules refuse (an unknown rank, both bounds, predictable no-rank
    /// taxa without `lower_than`) fail the whole request before any query is read; a
    /// request without queries only checks them. A query that names no single taxon
    /// gets its own error, as in a lineage batch.
    public func rankFilter(_ request: Stol_V1_RankFilterRequest) throws(TaxonomyError) -> Stol_V1_RankFilterResponse {
        let filter: RankFilter
        do {
            filter = try RankFilter(lowerThan: request.lowerThan.isEmpty ? nil : request.lowerThan,
                                    higherThan: request.higherThan.isEmpty ? nil : request.higherThan,
                                    equalTo: RankFilter.ranks(in: request.equalTo),
                                    discardNoranks: request.discardNoranks,
                                    savePredictableNoranks: request.savePredictableNoranks)
        } catch {
            var details: [String: String] = [:]
            if case .unknownRank(let rank) = error { details["rank"] = String(rank.prefix(80)) }
            throw .invalidOption(error.requestMessage, details: details)
        }
        _ = try database.wholeTree()
        var response = Stol_V1_RankFilterResponse()
        guard !request.queries.isEmpty else { return response }
        let lineages = try lineageBatch(request.queries, language: "en", ranks: .all, form: .compact)
        response.results = lineages.results.map { lineage in
            var result = Stol_V1_RankFilterResult()
            result.query = lineage.query
            guard !lineage.hasError, lineage.hasTaxon else {
                result.error = lineage.error
                return result
            }
            result.taxonID = lineage.taxon.id
            result.rank = lineage.taxon.sourceRank
            result.name = lineage.taxon.scientificName
            result.mergedFrom = lineage.mergedFrom
            result.kept = filter.keeps(rank: lineage.taxon.sourceRank, ancestorRanks: lineage.lineageRanks.reversed())
            return result
        }
        return response
    }
}
