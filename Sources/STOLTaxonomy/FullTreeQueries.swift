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
}
