import Foundation
import GRDB
import STOLModel
import STOLProtocol

/// The read queries, each against one ``TaxonomyDatabase``.
public struct TaxonomyQueries {
    let database: TaxonomyDatabase

    public init(database: TaxonomyDatabase) {
        self.database = database
    }

    static let taxonColumns = """
        t.id, t.parent_id, t.rank, t.scientific_name, t.author, t.year, t.status, t.conservation,
        (SELECT n.name FROM names n WHERE n.taxon_id = t.id AND n.name_type IN ('common','vernacular')
            AND n.lang = :lang ORDER BY n.is_preferred DESC, n.id LIMIT 1) AS common_name
        """

    static func taxon(from row: Row, childCount: Int? = nil) -> Stol_V1_Taxon {
        var taxon = Stol_V1_Taxon()
        taxon.id = row["id"]
        if let parent: Int64 = row["parent_id"] { taxon.parentID = parent }
        taxon.rank = TaxonRank(rawValue: row["rank"]).map(Self.wireRank) ?? .unspecified
        taxon.scientificName = row["scientific_name"]
        taxon.author = row["author"] ?? ""
        if let year: Int32 = row["year"] { taxon.year = year }
        switch row["status"] as String? {
        case "synonym": taxon.status = .synonym
        case "doubtful": taxon.status = .doubtful
        default: taxon.status = .accepted
        }
        taxon.conservation = row["conservation"] ?? ""
        taxon.commonName = row["common_name"] ?? ""
        if let childCount { taxon.childCount = UInt32(childCount) }
        return taxon
    }

    public static func wireRank(_ rank: TaxonRank) -> Stol_V1_Rank {
        Stol_V1_Rank(rawValue: rank.level + 1) ?? .unspecified
    }

    public static func modelRank(_ rank: Stol_V1_Rank) -> TaxonRank? {
        guard rank.rawValue >= 1, rank.rawValue <= TaxonRank.allCases.count else { return nil }
        return TaxonRank.allCases[rank.rawValue - 1]
    }

    public func taxon(id: TaxonID, language: String) throws(TaxonomyError) -> Stol_V1_Taxon {
        let row = try database.read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.taxonColumns) FROM taxa t WHERE t.id = :id",
                             arguments: ["id": id, "lang": language])
        }
        guard let row else { throw .taxonNotFound(id) }
        return Self.taxon(from: row)
    }

    public func children(of id: TaxonID, offset: Int, limit: Int, language: String) throws(TaxonomyError) -> Stol_V1_TaxonPage {
        try database.read { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM taxa WHERE id = ?", arguments: [id]) != nil else {
                throw TaxonomyError.taxonNotFound(id)
            }
            return try page(db, whereClause: "t.parent_id = :parent", arguments: ["parent": id],
                            offset: offset, limit: limit, language: language)
        }
    }

    public func roots(language: String) throws(TaxonomyError) -> Stol_V1_TaxonPage {
        try database.read { db in
            try page(db, whereClause: "t.parent_id IS NULL", arguments: [:], offset: 0,
                     limit: Int(ProtocolLimits.maximumPageSize), language: language)
        }
    }

    private func page(_ db: Database, whereClause: String, arguments: [String: (any DatabaseValueConvertible)?],
                      offset: Int, limit: Int, language: String) throws -> Stol_V1_TaxonPage {
        var all = arguments
        all["lang"] = language
        all["limit"] = limit
        all["offset"] = offset
        var page = Stol_V1_TaxonPage()
        page.total = UInt32(try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa t WHERE \(whereClause)",
                                              arguments: StatementArguments(arguments)) ?? 0)
        page.offset = UInt32(offset)
        let rows = try Row.fetchAll(db, sql: """
            SELECT \(Self.taxonColumns), (SELECT count(*) FROM taxa c WHERE c.parent_id = t.id) AS child_count
            FROM taxa t WHERE \(whereClause)
            ORDER BY t.scientific_name, t.id LIMIT :limit OFFSET :offset
            """, arguments: StatementArguments(all))
        page.taxa = rows.map { Self.taxon(from: $0, childCount: $0["child_count"]) }
        return page
    }

    /// Root first, the taxon itself excluded.
    public func ancestors(of id: TaxonID, language: String) throws(TaxonomyError) -> [Stol_V1_Taxon] {
        let rows = try database.read { db -> [Row]? in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM taxa WHERE id = ?", arguments: [id]) != nil else { return nil }
            return try Row.fetchAll(db, sql: """
                WITH RECURSIVE lineage(id, level) AS (
                    SELECT parent_id, 1 FROM taxa WHERE id = :id AND parent_id IS NOT NULL
                    UNION ALL
                    SELECT t.parent_id, lineage.level + 1 FROM taxa t JOIN lineage ON t.id = lineage.id
                    WHERE t.parent_id IS NOT NULL AND lineage.level < 64
                )
                SELECT \(Self.taxonColumns) FROM lineage JOIN taxa t ON t.id = lineage.id ORDER BY lineage.level DESC
                """, arguments: ["id": id, "lang": language])
        }
        guard let rows else { throw .taxonNotFound(id) }
        return rows.map { Self.taxon(from: $0) }
    }

    /// FTS5 search over scientific, common and synonym names (exact words, or
    /// with the last word as a prefix), optionally limited to one rank.
    public func search(_ query: SearchQuery, rank: TaxonRank?, limit: Int, language: String) throws(TaxonomyError) -> [Stol_V1_SearchHit] {
        guard !query.isEmpty else { return [] }
        return try database.read { db in
            var arguments: [String: (any DatabaseValueConvertible)?] = [
                "match": query.matchExpression, "lang": language, "limit": limit]
            var rankClause = ""
            if let rank {
                rankClause = "AND t.rank = :rank"
                arguments["rank"] = rank.rawValue
            }
            let rows = try Row.fetchAll(db, sql: """
                SELECT \(Self.taxonColumns), -bm25(fts_taxa, 0.0, 10.0, 5.0, 2.0) AS score
                FROM fts_taxa JOIN taxa t ON t.id = fts_taxa.rowid
                WHERE fts_taxa MATCH :match \(rankClause)
                ORDER BY bm25(fts_taxa, 0.0, 10.0, 5.0, 2.0), t.scientific_name
                LIMIT :limit
                """, arguments: StatementArguments(arguments))
            return try rows.map { row in
                var hit = Stol_V1_SearchHit()
                hit.taxon = Self.taxon(from: row)
                hit.score = row["score"]
                (hit.matchedName, hit.matchType) = try matchedName(db, taxon: hit.taxon, query: query, language: language)
                return hit
            }
        }
    }

    /// Which of the taxon's names the query matched, and how: the scientific name
    /// first, then common names (the requested language first), then synonyms.
    private func matchedName(_ db: Database, taxon: Stol_V1_Taxon, query: SearchQuery,
                             language: String) throws -> (String, Stol_V1_MatchType) {
        if query.matches(taxon.scientificName) { return (taxon.scientificName, .scientific) }
        let names = try Row.fetchAll(db, sql: """
            SELECT name, name_type FROM names WHERE taxon_id = ?
            ORDER BY name_type = 'synonym', lang = ? DESC, is_preferred DESC, id
            """, arguments: [taxon.id, language])
        for row in names {
            let name: String = row["name_type"] == "synonym" ? "" : row["name"]
            if !name.isEmpty, query.matches(name) { return (name, .common) }
        }
        for row in names where (row["name_type"] as String) == "synonym" {
            let name: String = row["name"]
            if query.matches(name) { return (name, .synonym) }
        }
        return (taxon.scientificName, .scientific)
    }
}
