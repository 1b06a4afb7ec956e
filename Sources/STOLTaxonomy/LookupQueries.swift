import GRDB
import STOLModel
import STOLProtocol

/// Lookups by id: one taxon, its children a page at a time, the roots, its
/// ancestors (on the main ranks or NCBI's whole tree), its page
/// (``detail(of:language:)``), many taxa at once (``taxa(ids:language:)``), and
/// what became of an id the database no longer holds. Each costs tens to hundreds
/// of microseconds.
public struct LookupQueries {
    let database: TaxonomyDatabase

    public init(database: TaxonomyDatabase) {
        self.database = database
    }

    var layout: TaxonomyLayout { database.layout }
    var reader: TaxonReader { TaxonReader(database: database) }

    /// One taxon, with its place in both trees (``fillTreeFacts(_:of:ranks:)``).
    public func taxon(id: TaxonID, language: String, ranks: Stol_V1_RankView = .main) throws(TaxonomyError) -> Stol_V1_Taxon {
        try database.read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(reader.taxonColumns) FROM taxa t WHERE t.id = :id"),
                                             arguments: ["id": id, "lang": language]) else {
                throw TaxonomyError.taxonNotFound(id)
            }
            var taxon = TaxonReader.taxon(from: row)
            try fillTreeFacts(db, of: &taxon, ranks: ranks)
            return taxon
        }
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
            page.taxa = try database.read { db in try reader.taxa(db, nodes: nodes, of: tree, view: view, language: language) }
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

    /// The roots of the view, with their child counts: from the in-memory tree once
    /// it is loaded (in SQL, finding them and counting their children read every row
    /// of `taxa`: 45 ms on the full reference, for a handful of taxa).
    public func roots(language: String) throws(TaxonomyError) -> Stol_V1_TaxonPage {
        if let tree = database.memoryIndexes?.tree {
            let roots = Array(tree.roots(in: .main).prefix(Int(ProtocolLimits.maximumPageSize)))
            let byID = try database.read { db in try reader.taxa(db, ids: roots.map { tree.id(at: $0) }, language: language) }
            var page = Stol_V1_TaxonPage()
            page.total = UInt32(tree.roots(in: .main).count)
            page.taxa = roots.compactMap { root in
                guard var taxon = byID[tree.id(at: root)] else { return nil }
                taxon.childCount = UInt32(tree.childCount(of: root, in: .main))
                return taxon
            }
            return page
        }
        return try database.read { db in
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
            SELECT \(reader.taxonColumns), (SELECT count(*) FROM taxa c WHERE \(counted)) AS child_count
            FROM taxa t WHERE \(whereClause)
            ORDER BY t.scientific_name, t.id LIMIT :limit OFFSET :offset
            """), arguments: StatementArguments(all))
        page.taxa = rows.map { row in
            var taxon = TaxonReader.taxon(from: row, childCount: row[10])
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
            let ids = tree.ancestors(of: node, in: .main).map { tree.id(at: $0) }
            let rows = try database.read { db in try reader.taxa(db, ids: ids, language: language) }
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
                SELECT \(reader.taxonColumns) FROM lineage JOIN taxa t ON t.id = lineage.id ORDER BY lineage.level DESC
                """), arguments: ["id": id, "lang": language])
        }
        guard let rows else { throw .taxonNotFound(id) }
        return rows.map { TaxonReader.taxon(from: $0) }
    }

    /// NCBI's own ancestors of `id`, root first, the taxon excluded (`ancestors --ranks all`).
    public func ancestorsOnFullTree(of id: TaxonID) throws(TaxonomyError) -> [Stol_V1_Taxon] {
        let tree = try database.wholeTree()
        guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
        return tree.ancestors(of: node).map { TaxonReader.treeTaxon(tree, $0) }
    }

    /// What became of `id`: nil when it was neither merged nor deleted (or the
    /// database is of schema 1).
    public func retired(_ id: TaxonID) throws(TaxonomyError) -> RetiredID? {
        try database.read { db in try RetiredID.lookup(db, id, in: database) }
    }

    /// Random taxon ids of one rank (or any), for benchmarks and tests.
    public func sampleIDs(rank: TaxonRank?, count: Int) throws(TaxonomyError) -> [TaxonID] {
        try database.read { db in
            if let rank {
                return try TaxonID.fetchAll(db, sql: "SELECT id FROM taxa WHERE \(layout.mainRank) = ? ORDER BY random() LIMIT ?",
                                            arguments: [rank.rawValue, count])
            }
            return try TaxonID.fetchAll(db, sql: "SELECT id FROM taxa ORDER BY random() LIMIT ?", arguments: [count])
        }
    }
}
