import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// Most queries one lineage batch may carry (the answer stays far below the frame limit).
    public static let maximumBatchQueries = 1000

    /// Lineages of many taxa in one round trip, for pipelines of thousands of
    /// queries. Each query is a decimal id or an exact name (scientific name,
    /// case-insensitively for the first letter, then a common name or synonym,
    /// case- and accent-insensitively); each gets its own result or error.
    public func lineageBatch(_ queries: [String], language: String) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        let exactNames = database.memoryIndexes?.exactNames
        return try database.read { db in
            var response = Stol_V1_LineageBatchResponse()
            response.results = try queries.map { query in
                var result = Stol_V1_LineageResult()
                result.query = query
                do {
                    let id = try resolve(db, query.trimmingCharacters(in: .whitespaces), exactNames: exactNames)
                    guard let (taxon, lineage) = try lineage(db, of: id, language: language) else {
                        throw TaxonomyError.taxonNotFound(id)
                    }
                    result.taxon = taxon
                    result.lineage = lineage
                } catch let error as TaxonomyError {
                    result.error = error.protocolError.proto
                }
                return result
            }
            return response
        }
    }

    private func resolve(_ db: Database, _ query: String, exactNames: [String: TaxonID]?) throws -> TaxonID {
        if let id = TaxonID(query) {
            guard id > 0 else { throw TaxonomyError.invalidArgument("taxon ids are positive integers, got \(id)") }
            return id
        }
        guard !query.isEmpty else { throw TaxonomyError.invalidArgument("empty query") }
        let capitalised = query.prefix(1).uppercased() + query.dropFirst()
        for name in [query, capitalised] {
            if let id = try TaxonID.fetchOne(db.cachedStatement(sql: """
                SELECT id FROM taxa WHERE scientific_name = ? ORDER BY status <> 'accepted', id LIMIT 1
                """), arguments: [name]) {
                return id
            }
        }
        let folded = SearchQuery.words(in: query).joined(separator: " ")
        if let exactNames {
            if let id = exactNames[folded] { return id }
        } else {
            for row in try Row.fetchAll(db, sql: "SELECT taxon_id, name FROM names ORDER BY is_preferred DESC, id")
            where SearchQuery.words(in: row["name"]).joined(separator: " ") == folded {
                return row["taxon_id"]
            }
        }
        throw TaxonomyError.nameNotFound
    }
}
