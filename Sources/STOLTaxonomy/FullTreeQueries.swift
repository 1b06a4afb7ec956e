import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// The whole tree, or why it cannot answer: absent from the database, still
    /// loading, or not built (the diagnostics report says why).
    func fullTree() throws(TaxonomyError) -> FullTaxonTree {
        guard database.fullTreeCount > 0 else { throw .fullTreeAbsent }
        guard let indexes = database.memoryIndexes else { throw .memoryIndexesLoading }
        guard let tree = indexes.fullTree else { throw .fullTreeAbsent }
        return tree
    }

    /// NCBI's own ancestors of `id`, root first, the taxon excluded (`ancestors --ranks all`).
    public func ancestorsOnFullTree(of id: TaxonID) throws(TaxonomyError) -> [Stol_V1_Taxon] {
        let tree = try fullTree()
        guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
        return tree.ancestors(of: node).map { Self.treeTaxon(tree, $0) }
    }

    /// `compare` on NCBI's own tree (`compare A B --ranks all`): the lowest common
    /// ancestor, both paths up to it and the distance in NCBI's edges; every pair
    /// has one (the root 1 at the latest). Trait similarity as on the main ranks.
    public func compareOnFullTree(_ a: TaxonID, _ b: TaxonID) throws(TaxonomyError) -> Stol_V1_CompareResponse {
        let tree = try fullTree()
        guard let nodeA = tree.index(of: a) else { throw .taxonNotFound(a) }
        guard let nodeB = tree.index(of: b) else { throw .taxonNotFound(b) }
        var result = Stol_V1_CompareResponse()
        result.taxonA = Self.treeTaxon(tree, nodeA)
        result.taxonB = Self.treeTaxon(tree, nodeB)
        guard let lca = tree.lowestCommonAncestor(nodeA, nodeB) else {
            result.relation = .unrelated
            result.pathA = [result.taxonA]
            result.pathB = [result.taxonB]
            result.sharedClade = "They share no ancestor in this database"
            return result
        }
        func path(_ node: Int) -> [Stol_V1_Taxon] {
            var nodes = [node]
            while nodes.last! != lca, let parent = tree.parent(of: nodes.last!) { nodes.append(parent) }
            return nodes.map { Self.treeTaxon(tree, $0) }
        }
        let ancestor = Self.treeTaxon(tree, lca)
        result.lca = ancestor
        result.lcaDepth = UInt32(tree.depth(of: lca))
        result.pathA = path(nodeA)
        result.pathB = path(nodeB)
        result.distance = UInt32(tree.depth(of: nodeA) + tree.depth(of: nodeB) - 2 * tree.depth(of: lca))
        result.distanceAll = result.distance
        result.distanceMain = UInt32(Self.mainRankSteps(tree, from: nodeA, to: lca) + Self.mainRankSteps(tree, from: nodeB, to: lca))
        if a == b {
            result.relation = .same
            result.sharedClade = "Both are the same taxon: \(ancestor.sourceRank) \(ancestor.scientificName)"
        } else {
            result.relation = lca == nodeA ? .aAncestorOfB : (lca == nodeB ? .bAncestorOfA : .related)
            result.sharedClade = "Both are in \(ancestor.sourceRank) \(ancestor.scientificName)"
        }
        if let similarity = try database.read({ db in try traitSimilarity(db, a, b) }) { result.traitSimilarity = similarity }
        return result
    }

    /// The closest species of `id` on NCBI's own tree (`relatives --ranks all`), by
    /// NCBI's edges, then name, then id; always computed (the precomputed table is
    /// of the main ranks).
    public func relativesOnFullTree(of id: TaxonID, n: Int, maximumCandidates: Int) throws(TaxonomyError) -> Stol_V1_RelativesResponse {
        let tree = try fullTree()
        guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
        guard tree.rank(of: node) == "species" else { throw .notASpecies(id, rank: tree.rank(of: node)) }
        let (relatives, examined, truncated) = tree.closestSpecies(of: node, n: n, maximumCandidates: maximumCandidates)
        var response = Stol_V1_RelativesResponse()
        response.taxon = Self.treeTaxon(tree, node)
        response.source = .computed
        response.truncated = truncated
        response.candidatesExamined = UInt32(clamping: examined)
        response.relatives = relatives.enumerated().map { order, relative in
            var result = Stol_V1_Relative()
            result.rankOrder = UInt32(order + 1)
            result.taxon = Self.treeTaxon(tree, relative.node)
            result.lca = Self.treeTaxon(tree, relative.ancestor)
            result.lcaDepth = UInt32(tree.depth(of: relative.ancestor))
            result.distance = UInt32(relative.distance)
            return result
        }
        return response
    }

    /// Both distances of a pair on the whole tree, when the database has it loaded
    /// (for `compare` on the main ranks, which reports them beside its own).
    func distancesOnFullTree(_ a: TaxonID, _ b: TaxonID) -> (main: UInt32, all: UInt32)? {
        guard let tree = database.memoryIndexes?.fullTree, let nodeA = tree.index(of: a), let nodeB = tree.index(of: b),
              let lca = tree.lowestCommonAncestor(nodeA, nodeB) else { return nil }
        return (UInt32(Self.mainRankSteps(tree, from: nodeA, to: lca) + Self.mainRankSteps(tree, from: nodeB, to: lca)),
                UInt32(tree.depth(of: nodeA) + tree.depth(of: nodeB) - 2 * tree.depth(of: lca)))
    }
}
