import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// Most taxa one subtree answer may carry (about 40 bytes each, well inside a 4 MiB frame).
    public static let maximumSubtreeTaxa = 50_000
    public static let defaultSubtreeTaxa = 10_000

    /// The subtree of `id` in preorder with depths, names and ranks, for drawing
    /// (`stol-client tree --format newick`), children in name order. On the main
    /// ranks the ranks are the main ones; on the whole tree (and for a node outside
    /// the view, which has no subtree in it) the source's. More than `maximumTaxa`
    /// taxa is refused, never cut silently, and the walk stops there: the refusal
    /// costs no more than the largest answer.
    public func subtree(of id: TaxonID, ranks: Stol_V1_RankView, maximumTaxa: Int) throws(TaxonomyError) -> Stol_V1_SubtreeResponse {
        guard let indexes = database.memoryIndexes, let tree = indexes.tree else { throw .memoryIndexesLoading }
        guard let node = tree.index(of: id), layout.everyNode || indexes.holdsWholeTree || tree.isInView(node) else {
            throw .taxonNotFound(id)
        }
        let view: TaxonomyTree.View = ranks == .main && tree.isInView(node) ? .main : .all
        if view == .all && !indexes.holdsWholeTree { throw .fullTreeAbsent }
        guard let (nodes, depths) = tree.subtree(of: node, in: view, limit: maximumTaxa) else {
            throw .invalidArgument("the subtree of \(id) has more than \(maximumTaxa) taxa; "
                                   + "raise --max-taxa (at most \(Self.maximumSubtreeTaxa)) or start lower")
        }
        var response = Stol_V1_SubtreeResponse()
        response.ids = nodes.map(tree.id(at:))
        response.depths = depths.map(UInt32.init)
        response.names = nodes.map(tree.name(of:))
        response.ranks = nodes.map { view == .main ? tree.mainRank(of: $0)?.rawValue ?? tree.rank(of: $0) : tree.rank(of: $0) }
        return response
    }
}
