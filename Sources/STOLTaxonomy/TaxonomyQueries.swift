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

    /// The layout of this database's schema (the view's columns, the whole tree's table).
    var layout: TaxonomyLayout { database.layout }

    /// The columns ``taxon(from:childCount:)`` reads, in its order, from `taxa t`.
    var taxonColumns: String { Self.taxonColumns(layout) }

    static func taxonColumns(_ layout: TaxonomyLayout) -> String {
        """
        t.id, \(layout.shownParent("t")), t.\(layout.mainRank), t.scientific_name, t.author, t.year, t.status, t.conservation,
        (SELECT n.name FROM names n INDEXED BY idx_names_taxon WHERE n.taxon_id = t.id AND n.name_type IN ('common','vernacular')
            AND n.lang = :lang ORDER BY n.is_preferred DESC, n.id LIMIT 1) AS common_name, \(layout.everyNode ? "t.rank" : "NULL")
        """
    }

    /// Reads the columns of ``taxonColumns`` by position (GRDB's lookup by name
    /// lower-cases the name on every access, a measurable share of a 20 µs query).
    /// A node outside the eight ranks has no wire rank and says its own in `source_rank`.
    static func taxon(from row: Row, childCount: Int? = nil) -> Stol_V1_Taxon {
        var taxon = Stol_V1_Taxon()
        taxon.id = row[0]
        if let parent: Int64 = row[1] { taxon.parentID = parent }
        taxon.rank = (row[2] as String?).flatMap(TaxonRank.init(rawValue:)).map(Self.wireRank) ?? .unspecified
        // The source's rank where the view gives none (answers on the whole tree fill it for every node).
        if taxon.rank == .unspecified, let sourceRank: String = row[9] { taxon.sourceRank = sourceRank }
        taxon.scientificName = row[3]
        taxon.author = row[4] ?? ""
        if let year: Int32 = row[5] { taxon.year = year }
        switch row[6] as String? {
        case "synonym": taxon.status = .synonym
        case "doubtful": taxon.status = .doubtful
        default: taxon.status = .accepted
        }
        taxon.conservation = row[7] ?? ""
        taxon.commonName = row[8] ?? ""
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
            try Row.fetchOne(db.cachedStatement(sql: "SELECT \(taxonColumns) FROM taxa t WHERE t.id = :id"),
                             arguments: ["id": id, "lang": language])
        }
        guard let row else { throw .taxonNotFound(id) }
        return Self.taxon(from: row)
    }

    /// One page of the children of `id`, in name order. The eight-rank view's
    /// children by default (what browsing from the root shows); the source's own
    /// children with `ranks` `.all`, and for a node outside the view (a strain, a
    /// clade), which has no children in the view.
    public func children(of id: TaxonID, offset: Int, limit: Int, language: String,
                         ranks: Stol_V1_RankView = .main) throws(TaxonomyError) -> Stol_V1_TaxonPage {
        if let indexes = database.memoryIndexes, let tree = indexes.tree {
            guard let node = tree.index(of: id), layout.everyNode || indexes.holdsWholeTree || tree.isInView(node) else {
                throw .taxonNotFound(id)
            }
            let view: TaxonomyTree.View = ranks == .main && tree.isInView(node) ? .main : .all
            if view == .all && !indexes.holdsWholeTree { throw .fullTreeAbsent }
            // The tree keeps children in name order: no sort of a large genus per page.
            let (nodes, total) = tree.children(of: node, in: view, offset: offset, limit: limit)
            var page = Stol_V1_TaxonPage()
            page.total = UInt32(total)
            page.offset = UInt32(offset)
            if view == .main || layout.everyNode {
                let byID = try database.read { db in try taxa(db, ids: nodes.map(tree.id(at:)), language: language) }
                page.taxa = nodes.compactMap { child in
                    guard var taxon = byID[tree.id(at: child)] else { return nil }
                    taxon.childCount = UInt32(tree.childCount(of: child, in: view))
                    if view == .all {
                        taxon.parentID = id
                        taxon.sourceRank = tree.rank(of: child)
                    }
                    return taxon
                }
            } else {
                // Schema 2's nodes outside `taxa` are named by the tree alone.
                page.taxa = nodes.map { child in
                    var taxon = Self.treeTaxon(tree, child)
                    taxon.childCount = UInt32(tree.childCount(of: child))
                    return taxon
                }
            }
            return page
        }
        if ranks == .all && !layout.everyNode {
            // Schema 1, or schema 2 while its whole tree loads (or without one).
            throw database.fullTreeCount > 0 ? .memoryIndexesLoading : .fullTreeAbsent
        }
        // Before the in-memory trees are loaded: the view's children for a taxon of
        // the view, the source's own otherwise.
        return try database.read { db in
            guard let inView = try Bool.fetchOne(db.cachedStatement(sql: "SELECT \(layout.inView) FROM taxa WHERE id = ?"),
                                                 arguments: [id]) else {
                throw TaxonomyError.taxonNotFound(id)
            }
            if inView && ranks == .main {
                return try page(db, whereClause: "t.\(layout.mainParent) = :parent AND t.\(layout.inView)",
                                arguments: ["parent": id], offset: offset, limit: limit, language: language)
            }
            return try page(db, whereClause: "t.parent_id = :parent", arguments: ["parent": id], offset: offset,
                            limit: limit, language: language, childrenOf: "parent_id")
        }
    }

    public func roots(language: String) throws(TaxonomyError) -> Stol_V1_TaxonPage {
        try database.read { db in
            try page(db, whereClause: "t.\(layout.mainParent) IS NULL AND t.\(layout.inView)", arguments: [:], offset: 0,
                     limit: Int(ProtocolLimits.maximumPageSize), language: language)
        }
    }

    /// - Parameter childrenOf: the column whose children `child_count` counts (the
    ///   view's parent column by default).
    private func page(_ db: Database, whereClause: String, arguments: [String: (any DatabaseValueConvertible)?],
                      offset: Int, limit: Int, language: String, childrenOf: String? = nil) throws -> Stol_V1_TaxonPage {
        let counted = childrenOf.map { "c.\($0) = t.id" } ?? "c.\(layout.mainParent) = t.id AND c.\(layout.inView)"
        var all = arguments
        all["lang"] = language
        all["limit"] = limit
        all["offset"] = offset
        var page = Stol_V1_TaxonPage()
        page.total = UInt32(try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM taxa t WHERE \(whereClause)"),
                                              arguments: StatementArguments(arguments)) ?? 0)
        page.offset = UInt32(offset)
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT \(taxonColumns), (SELECT count(*) FROM taxa c WHERE \(counted)) AS child_count
            FROM taxa t WHERE \(whereClause)
            ORDER BY t.scientific_name, t.id LIMIT :limit OFFSET :offset
            """), arguments: StatementArguments(all))
        page.taxa = rows.map { row in
            var taxon = Self.taxon(from: row, childCount: row[10])
            // The source's own children: each with the source's rank, as on the whole tree.
            if childrenOf == "parent_id", let rank: String = row[9] { taxon.sourceRank = rank }
            return taxon
        }
        return page
    }

    /// Root first, the taxon itself excluded: the ids from the in-memory tree once it
    /// is loaded (one `IN (…)` query for the rows), else a recursive query.
    public func ancestors(of id: TaxonID, language: String) throws(TaxonomyError) -> [Stol_V1_Taxon] {
        if let tree = database.memoryIndexes?.tree {
            // A node outside the view gets its nearest main-rank ancestor's lineage,
            // that ancestor included (as taxonkit's reformat).
            guard let node = tree.index(of: id), layout.everyNode || tree.isInView(node) else { throw .taxonNotFound(id) }
            let ids = tree.ancestors(of: node, in: .main).map(tree.id(at:))
            let rows = try database.read { db in try taxa(db, ids: ids, language: language) }
            return ids.compactMap { rows[$0] }
        }
        let rows = try database.read { db -> [Row]? in
            guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM taxa WHERE id = ?"), arguments: [id]) != nil else { return nil }
            return try Row.fetchAll(db.cachedStatement(sql: """
                WITH RECURSIVE lineage(id, level) AS (
                    SELECT \(layout.mainParent), 1 FROM taxa WHERE id = :id AND \(layout.mainParent) IS NOT NULL
                    UNION ALL
                    SELECT t.\(layout.mainParent), lineage.level + 1 FROM taxa t JOIN lineage ON t.id = lineage.id
                    WHERE t.\(layout.mainParent) IS NOT NULL AND lineage.level < 64
                )
                SELECT \(taxonColumns) FROM lineage JOIN taxa t ON t.id = lineage.id ORDER BY lineage.level DESC
                """), arguments: ["id": id, "lang": language])
        }
        guard let rows else { throw .taxonNotFound(id) }
        return rows.map { Self.taxon(from: $0) }
    }

    /// Taxa by id (those that exist): one statement for the rows and one for
    /// their common names in `language` (a correlated subquery per row sorts a
    /// temporary b-tree each time).
    func taxa(_ db: Database, ids: [TaxonID], language: String) throws -> [TaxonID: Stol_V1_Taxon] {
        guard !ids.isEmpty else { return [:] }
        var result: [TaxonID: Stol_V1_Taxon] = [:]
        let unique = Array(Set(ids))
        let commonlyNamed = database.memoryIndexes?.commonlyNamed ?? nil
        for chunk in stride(from: 0, to: unique.count, by: 512) {
            let chunkIDs = Array(unique[chunk..<min(chunk + 512, unique.count)])
            let part = Self.padded(chunkIDs)
            // Cursors, not fetchAll: no row is copied before it is read.
            let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT t.id, \(layout.shownParent("t")), t.\(layout.mainRank), t.scientific_name, t.author, t.year, t.status,
                       t.conservation, NULL, \(layout.everyNode ? "t.rank" : "NULL")
                FROM taxa t WHERE t.id IN (\(Self.placeholders(part)))
                """), arguments: StatementArguments(part))
            while let row = try rows.next() {
                let taxon = Self.taxon(from: row)
                result[taxon.id] = taxon
            }
            // Names only for the taxa that have one, once the in-memory indexes say which.
            let withNames = commonlyNamed.map { set in chunkIDs.filter(set.contains) } ?? chunkIDs
            guard !withNames.isEmpty else { continue }
            let namedPart = Self.padded(withNames)
            let names = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT taxon_id, name FROM names INDEXED BY idx_names_taxon
                WHERE taxon_id IN (\(Self.placeholders(namedPart))) AND lang = ? AND name_type IN ('common','vernacular')
                ORDER BY taxon_id, is_preferred DESC, id
                """), arguments: StatementArguments(namedPart) + [language])
            var named = Set<TaxonID>()
            while let row = try names.next() {
                let id: TaxonID = row[0]
                if named.insert(id).inserted { result[id]?.commonName = row[1] }
            }
        }
        return result
    }

    /// `?, ?, …`: one SQL parameter per value, for `IN (…)`.
    static func placeholders(_ values: some Collection) -> String {
        Array(repeating: "?", count: values.count).joined(separator: ",")
    }

    /// `ids` repeated up to the next power of two, so that `IN (…)` statements
    /// come in a few sizes and stay in each connection's statement cache
    /// (preparing one costs more than the lookup it serves).
    static func padded(_ ids: [TaxonID]) -> [TaxonID] {
        guard let last = ids.last else { return ids }
        var size = 1
        while size < ids.count { size *= 2 }
        return ids + Array(repeating: last, count: size - ids.count)
    }

    /// The taxon and its ancestors (root first, the taxon excluded), or nil.
    func lineage(_ db: Database, of id: TaxonID, language: String) throws -> (Stol_V1_Taxon, [Stol_V1_Taxon])? {
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            WITH RECURSIVE lineage(id, level) AS (
                SELECT :id, 0
                UNION ALL
                SELECT t.\(layout.mainParent), lineage.level + 1 FROM taxa t JOIN lineage ON t.id = lineage.id
                WHERE t.\(layout.mainParent) IS NOT NULL AND lineage.level < 64
            )
            SELECT \(taxonColumns) FROM lineage JOIN taxa t ON t.id = lineage.id ORDER BY lineage.level DESC
            """), arguments: ["id": id, "lang": language])
        guard let last = rows.last, (last[0] as TaxonID) == id else { return nil }
        let taxa = rows.map { Self.taxon(from: $0) }
        return (taxa[taxa.count - 1], Array(taxa.dropLast()))
    }
}
