import GRDB
import STOLModel
import STOLProtocol

/// How every answer reads a taxon: from rows of `taxa` (one statement for many
/// ids, their common names in a second), or from a node of the in-memory tree.
/// Each kind of query (``LookupQueries``, ``LineageQueries``, ``SearchEngine``, …)
/// reads taxa through it, so a taxon looks the same in every answer.
struct TaxonReader {
    let database: TaxonomyDatabase

    /// The layout of this database's schema (the view's columns, the whole tree's table).
    var layout: TaxonomyLayout { database.layout }

    /// The columns ``taxon(from:childCount:)`` reads, in its order, from `taxa t`.
    var taxonColumns: String {
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
        taxon.rank = (row[2] as String?).flatMap(TaxonRank.init(rawValue:)).map { Stol_V1_Rank($0) } ?? .unspecified
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

    /// Nodes of the in-memory tree as taxa, in their order, each with its child count
    /// in `view`: from the rows of `taxa` (with common names in `language`) when every
    /// node has one (schema 3), else named by the tree alone (schema 2's whole tree).
    /// On the whole tree each also carries the source's rank, and its parent there as
    /// `parent_id` and `source_parent_id` (a whole-tree answer, PROTOCOL.md §4.1).
    func taxa(_ db: Database, nodes: [Int], of tree: TaxonomyTree, view: TaxonomyTree.View,
              language: String) throws -> [Stol_V1_Taxon] {
        guard view == .main || layout.everyNode else { return nodes.map { Self.pageTaxon(tree, $0) } }
        let byID = try taxa(db, ids: nodes.map { tree.id(at: $0) }, language: language)
        return nodes.compactMap { node in
            guard var taxon = byID[tree.id(at: node)] else { return nil }
            taxon.childCount = UInt32(tree.childCount(of: node, in: view))
            if view == .all {
                if let parent = tree.parent(of: node) {
                    taxon.parentID = tree.id(at: parent)
                    taxon.sourceParentID = taxon.parentID
                }
                taxon.sourceRank = tree.rank(of: node)
            }
            return taxon
        }
    }

    /// The taxon and its ancestors on the main ranks (root first, the taxon
    /// excluded), by a recursive query; nil when there is no such taxon.
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

    /// A node of the view as a `Taxon`: id, view parent, main rank, scientific name.
    static func viewTaxon(_ tree: TaxonomyTree, _ node: Int) -> Stol_V1_Taxon {
        var taxon = Stol_V1_Taxon()
        taxon.id = tree.id(at: node)
        if let parent = tree.parent(of: node, in: .main) { taxon.parentID = tree.id(at: parent) }
        taxon.rank = tree.mainRank(of: node).map { Stol_V1_Rank($0) } ?? .unspecified
        taxon.scientificName = tree.name(of: node)
        return taxon
    }

    /// A node of the whole tree as a `Taxon`: id, parent, rank (the main rank, if
    /// the node has one), the source's rank and the scientific name.
    static func treeTaxon(_ tree: TaxonomyTree, _ node: Int) -> Stol_V1_Taxon {
        var taxon = Stol_V1_Taxon()
        taxon.id = tree.id(at: node)
        if let parent = tree.parent(of: node) { taxon.parentID = tree.id(at: parent) }
        taxon.rank = tree.mainRank(of: node).map { Stol_V1_Rank($0) } ?? .unspecified
        taxon.sourceRank = tree.rank(of: node)
        taxon.scientificName = tree.name(of: node)
        taxon.status = .accepted
        return taxon
    }

    /// A node of the whole tree as a page lists it (``treeTaxon(_:_:)``), with its parent
    /// also as `source_parent_id` and the number of its own children: schema 2's whole-tree
    /// children, and `descendants`, which is answered from the tree alone.
    static func pageTaxon(_ tree: TaxonomyTree, _ node: Int) -> Stol_V1_Taxon {
        var taxon = treeTaxon(tree, node)
        if taxon.hasParentID { taxon.sourceParentID = taxon.parentID }
        taxon.childCount = UInt32(tree.childCount(of: node))
        return taxon
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
}
