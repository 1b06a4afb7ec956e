import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
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
                    if let node = tree.node(try self.node(db, query, tree, indexes), in: view) {
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
            response.ids = induced.nodes.map { $0.map(tree.id(at:)) ?? 0 }
            response.depths = induced.depths.map(UInt32.init)
            response.names = induced.nodes.map { $0.map(tree.name(of:)) ?? "" }
            response.ranks = induced.nodes.map { node in
                guard let node else { return "" }
                return view == .main ? tree.mainRank(of: node)?.rawValue ?? tree.rank(of: node) : tree.rank(of: node)
            }
            response.requested = induced.requested
            return response
        }
    }
}
