import STOLModel
import STOLProtocol

extension ComparisonQueries {
    /// Most nodes of one `annotate_tree` request (the 64 KiB request holds about
    /// 30,000 at two bytes a node; a larger tree is sent in parts, PROTOCOL.md §4.2).
    public static let maximumAnnotatedNodes = 65_536

    /// What lies under a node of the user's tree: no annotated leaf, the common ancestor
    /// of its annotated leaves, or leaves under different roots (a database whose whole
    /// tree has several roots), which no node above can join again.
    enum LeavesBelow {
        case none
        case ancestor(Int)
        case disjoint

        /// `leaves_ancestor` (and a stand-in leaf's taxon id) for ``disjoint``.
        static let disjointID: Int64 = -1
    }

    /// The taxon each node of a user's tree gets, as ete4's `annotate_tree` gives it
    /// with `ignore_unclassified=True` (`annotate_tree`, `stol-client annotate`): its
    /// own taxon when its label named one, else for an inner node the common ancestor
    /// (``TaxonomyTree/commonAncestor(of:in:)`` on the source's whole tree) of the
    /// annotated leaves below it. Leaves without a taxon do not pull it up; an inner
    /// node with no annotated leaf below it and no taxon of its own gets none, and so
    /// does one whose leaves lie under different roots (only where the source's tree
    /// has several roots, as the curated development database's has), and every node
    /// above it.
    ///
    /// The tree comes in preorder with depths; the common ancestor of leaves is
    /// associative, so a subtree answered before may stand in a larger tree as one
    /// leaf carrying its `leaves_ancestor`, and the answer is the same.
    ///
    /// An inner node whose own taxon is not an ancestor of (or the same as) the common
    /// ancestor of its annotated leaves is listed in `not_ancestors`: its label cannot
    /// name that clade (`((9606,9598)100,…)` read with the support value 100 as a taxon
    /// id). It is an ancestor of every leaf exactly when it is one of their common
    /// ancestor, so the check holds across parts too.
    public func annotateTree(_ request: Stol_V1_AnnotateTreeRequest) throws(TaxonomyError) -> Stol_V1_AnnotateTreeResponse {
        let depths = request.depths, ids = request.taxonIds
        let count = depths.count
        guard count > 0 else { throw .invalidArgument("a tree has at least one node") }
        guard ids.count == count else {
            throw .invalidArgument("\(count) depths and \(ids.count) taxon ids: one of each per node")
        }
        guard count <= Self.maximumAnnotatedNodes else {
            throw .invalidArgument("at most \(Self.maximumAnnotatedNodes) nodes per request, got \(count); send subtrees first")
        }
        guard depths[0] == 0 else { throw .invalidArgument("the first node is the root, at depth 0; got \(depths[0])") }
        // Each node's parent: the last node before it one level up.
        var parents = [Int](repeating: -1, count: count)
        var lastAtDepth: [Int] = [0]
        for index in 1..<count {
            let depth = Int(depths[index])
            guard depth >= 1, depth <= lastAtDepth.count else {
                throw .invalidArgument("node \(index) is at depth \(depth) after a node at depth \(depths[index - 1]); "
                                       + "depths below the root go down one level at a time")
            }
            parents[index] = lastAtDepth[depth - 1]
            lastAtDepth.removeSubrange(depth...)
            lastAtDepth.append(index)
        }
        let tree = try database.wholeTree()
        var own = [Int?](repeating: nil, count: count)
        var below = [LeavesBelow](repeating: .none, count: count)
        for (index, id) in ids.enumerated() where id != 0 {
            let isLeaf = index + 1 == count || depths[index + 1] <= depths[index]
            if id == LeavesBelow.disjointID && isLeaf {
                below[index] = .disjoint
                continue
            }
            guard id > 0 else {
                throw .invalidArgument("taxon ids are positive integers (0: none; -1 only on a leaf standing for leaves "
                                       + "under different roots), got \(id) at node \(index)")
            }
            guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
            own[index] = node
            if isLeaf { below[index] = .ancestor(node) }
        }
        // Children before parents: each inner node's annotated leaves, from its children's.
        var gathered = [[Int]](repeating: [], count: count)
        var disjoint = [Bool](repeating: false, count: count)
        var isLeaf = [Bool](repeating: true, count: count)
        var response = Stol_V1_AnnotateTreeResponse()
        response.taxonIds = [Int64](repeating: 0, count: count)
        for index in stride(from: count - 1, through: 0, by: -1) {
            if index % 1024 == 0 { try TaxonomyError.checkCancellation() }
            if !isLeaf[index] {
                if disjoint[index] {
                    below[index] = .disjoint
                } else if !gathered[index].isEmpty {
                    below[index] = tree.commonAncestor(of: gathered[index], in: .all).map(LeavesBelow.ancestor) ?? .disjoint
                }
                gathered[index] = []
            }
            if let node = own[index] {
                response.taxonIds[index] = tree.id(at: node)
                if !isLeaf[index] {
                    switch below[index] {
                    case .none: break
                    case .ancestor(let leaves): if !tree.isDescendant(leaves, of: node) { response.notAncestors.append(UInt32(index)) }
                    case .disjoint: response.notAncestors.append(UInt32(index))
                    }
                }
            } else if case .ancestor(let node) = below[index] {
                response.taxonIds[index] = tree.id(at: node)
            }
            let parent = parents[index]
            guard parent >= 0 else { continue }
            isLeaf[parent] = false
            switch below[index] {
            case .none: break
            case .ancestor(let node): gathered[parent].append(node)
            case .disjoint: disjoint[parent] = true
            }
        }
        switch below[0] {
        case .none: break
        case .ancestor(let node): response.leavesAncestor = tree.id(at: node)
        case .disjoint: response.leavesAncestor = LeavesBelow.disjointID
        }
        return response
    }
}
