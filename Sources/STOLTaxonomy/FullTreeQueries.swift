import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// The in-memory tree when it holds the source's whole tree, or why it cannot
    /// answer: absent from the database (schema 1), still loading, or not built (the
    /// diagnostics report says why).
    func wholeTree() throws(TaxonomyError) -> TaxonomyTree {
        guard database.fullTreeCount > 0 else { throw .fullTreeAbsent }
        guard let indexes = database.memoryIndexes else { throw .memoryIndexesLoading }
        guard let tree = indexes.wholeTree else { throw .fullTreeAbsent }
        return tree
    }

    /// NCBI's own ancestors of `id`, root first, the taxon excluded (`ancestors --ranks all`).
    public func ancestorsOnFullTree(of id: TaxonID) throws(TaxonomyError) -> [Stol_V1_Taxon] {
        let tree = try wholeTree()
        guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
        return tree.ancestors(of: node).map { Self.treeTaxon(tree, $0) }
    }

    /// `compare` on NCBI's own tree (`compare A B --ranks all`): the lowest common
    /// ancestor, both paths up to it and the distance in NCBI's edges; every pair
    /// has one (the root 1 at the latest). Trait similarity as on the main ranks.
    public func compareOnFullTree(_ a: TaxonID, _ b: TaxonID) throws(TaxonomyError) -> Stol_V1_CompareResponse {
        let tree = try wholeTree()
        guard let nodeA = tree.index(of: a) else { throw .taxonNotFound(a) }
        guard let nodeB = tree.index(of: b) else { throw .taxonNotFound(b) }
        var result = Stol_V1_CompareResponse()
        result.taxonA = Self.treeTaxon(tree, nodeA)
        result.taxonB = Self.treeTaxon(tree, nodeB)
        guard let comparison = tree.compare(nodeA, nodeB) else {
            result.relation = .unrelated
            result.pathA = [result.taxonA]
            result.pathB = [result.taxonB]
            result.sharedClade = "They share no ancestor in this database"
            return result
        }
        let lca = comparison.lca
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
        result.distance = UInt32(comparison.distanceAll)
        result.distanceAll = result.distance
        result.distanceMain = UInt32(comparison.distanceMain)
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
        let tree = try wholeTree()
        guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
        guard tree.isSpecies(node, in: .all) else { throw .notASpecies(id, rank: tree.rank(of: node)) }
        let answer = tree.closestSpecies(of: node, n: n, maximumCandidates: maximumCandidates, in: .all)
        var response = Self.relativesResponse(answer) { Self.treeTaxon(tree, $0) }
        response.taxon = Self.treeTaxon(tree, node)
        return response
    }

    /// A computed answer as the protocol carries it, each taxon made by `taxon`.
    static func relativesResponse(_ answer: TaxonomyTree.RelativesAnswer,
                                  taxon: (Int) -> Stol_V1_Taxon?) -> Stol_V1_RelativesResponse {
        var response = Stol_V1_RelativesResponse()
        response.source = .computed
        response.truncated = answer.truncated
        response.candidatesExamined = UInt32(clamping: answer.examined)
        response.relatives = answer.relatives.enumerated().compactMap { order, relative in
            guard let found = taxon(relative.node), let lca = taxon(relative.lca) else { return nil }
            var result = Stol_V1_Relative()
            result.rankOrder = UInt32(order + 1)
            result.taxon = found
            result.lca = lca
            result.lcaDepth = UInt32(relative.lcaDepth)
            result.distance = UInt32(relative.distance)
            return result
        }
        return response
    }

    /// Both distances of a pair on the whole tree, when the database has it loaded
    /// (for `compare` on the main ranks, which reports them beside its own).
    func distancesOnFullTree(_ a: TaxonID, _ b: TaxonID) -> (main: UInt32, all: UInt32)? {
        guard let tree = database.memoryIndexes?.wholeTree, let nodeA = tree.index(of: a), let nodeB = tree.index(of: b),
              let comparison = tree.compare(nodeA, nodeB) else { return nil }
        return (UInt32(comparison.distanceMain), UInt32(comparison.distanceAll))
    }
}
