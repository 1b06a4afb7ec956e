import GRDB
import STOLModel
import STOLProtocol

/// Shapes of the tree for drawing: one taxon's subtree (`subtree`) and the
/// smallest tree joining many taxa (`induced_tree`), from the in-memory tree.
public struct TreeQueries {
    let database: TaxonomyDatabase

    public init(database: TaxonomyDatabase) {
        self.database = database
    }

    var layout: TaxonomyLayout { database.layout }

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
        response.ids = nodes.map { tree.id(at: $0) }
        response.depths = depths.map(UInt32.init)
        response.names = nodes.map { tree.name(of: $0) }
        response.ranks = nodes.map { view == .main ? tree.mainRank(of: $0)?.rawValue ?? tree.rank(of: $0) : tree.rank(of: $0) }
        return response
    }

    /// Taxa one `induced_tree` request may name, ids and names together.
    public static let maximumInducedTreeTaxa = 10_000

    /// The smallest tree connecting the taxa (``TaxonomyTree/inducedTree(of:in:keepSingleChildren:)``),
    /// from the in-memory tree. Ids and names that name no single taxon are listed in
    /// `not_found` and the rest is answered: one unknown id never fails the tree.
    public func inducedTree(_ request: Stol_V1_InducedTreeRequest) throws(TaxonomyError) -> Stol_V1_InducedTreeResponse {
        let count = request.taxonIds.count + request.names.count
        guard count <= Self.maximumInducedTreeTaxa else {
            throw .invalidArgument("at most \(Self.maximumInducedTreeTaxa) taxa per tree, got \(count)")
        }
        guard let indexes = database.memoryIndexes, let tree = indexes.tree else { throw .memoryIndexesLoading }
        guard request.ranks == .main || indexes.holdsWholeTree else { throw .fullTreeAbsent }
        let view: TaxonomyTree.View = request.ranks == .main ? .main : .all
        return try database.read { db in
            var response = Stol_V1_InducedTreeResponse()
            var nodes: [Int] = []
            for query in request.taxonIds.map(String.init) + request.names {
                do {
                    if let node = tree.node(try NameQueries(database: database).node(db, query, tree, indexes), in: view) {
                        nodes.append(node)
                    } else {
                        response.notFound.append(query)
                    }
                } catch let error as TaxonomyError {
                    switch error {
                    case .taxonNotFound, .taxonDeleted, .nameNotFound, .ambiguousName, .invalidArgument: response.notFound.append(query)
                    default: throw error
                    }
                }
            }
            let induced = tree.inducedTree(of: nodes, in: view, keepSingleChildren: request.keepSingleChildren)
            response.ids = induced.nodes.map { node in node.map { tree.id(at: $0) } ?? 0 }
            response.depths = induced.depths.map(UInt32.init)
            response.names = induced.nodes.map { node in node.map { tree.name(of: $0) } ?? "" }
            response.ranks = induced.nodes.map { node in
                guard let node else { return "" }
                return view == .main ? tree.mainRank(of: node)?.rawValue ?? tree.rank(of: node) : tree.rank(of: node)
            }
            response.requested = induced.requested
            return response
        }
    }
}
