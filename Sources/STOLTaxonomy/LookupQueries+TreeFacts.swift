import GRDB
import STOLModel
import STOLProtocol

extension LookupQueries {
    /// Fills what `taxon` and `detail` show of a taxon's place in both trees: the
    /// view's child count (as `children` lists them: the view's for a taxon of the
    /// view, the source's own for a node outside it), and the source's own parent and
    /// child count (NCBI's: Mus musculus's parent is subgenus Mus, 862507, where the
    /// view's is genus Mus, 10088). Read from the in-memory tree once it is loaded,
    /// else by two indexed statements (counting Bacteria's children in SQL takes
    /// about 13 ms, once, before the tree is loaded). A database without the whole
    /// tree (schema 1, or schema 2's before its tree is loaded) has no source facts.
    func fillTreeFacts(_ db: Database, of taxon: inout Stol_V1_Taxon, ranks: Stol_V1_RankView) throws {
        let id = taxon.id
        let inView = taxon.rank != .unspecified
        if let indexes = database.memoryIndexes, let tree = indexes.tree, let node = tree.index(of: id) {
            let whole = layout.everyNode || indexes.holdsWholeTree
            taxon.childCount = UInt32(tree.childCount(of: node, in: inView ? .main : .all))
            guard whole else { return }
            if let parent = tree.parent(of: node) { taxon.sourceParentID = tree.id(at: parent) }
            taxon.sourceChildCount = UInt32(tree.childCount(of: node))
            if ranks == .all { taxon.sourceRank = tree.rank(of: node) }
            return
        }
        let countInView = "SELECT count(*) FROM taxa WHERE \(layout.mainParent) = ? AND \(layout.inView)"
        let countAll = "SELECT count(*) FROM taxa WHERE parent_id = ?"
        taxon.childCount = UInt32(try Int.fetchOne(db.cachedStatement(sql: inView ? countInView : countAll), arguments: [id]) ?? 0)
        guard layout.everyNode else { return }
        if let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT parent_id, rank FROM taxa WHERE id = ?"), arguments: [id]) {
            if let parent: Int64 = row[0], parent != id { taxon.sourceParentID = parent }
            if ranks == .all { taxon.sourceRank = row[1] }
        }
        taxon.sourceChildCount = UInt32(try Int.fetchOne(db.cachedStatement(sql: countAll), arguments: [id]) ?? 0)
    }
}
