import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// Common ancestors and distances of many pairs in one round trip.
    ///
    /// With the whole tree in the database (schema 2, `--full-tree`), every pair
    /// has a common ancestor (NCBI's root at the latest): with ``Stol_V1_RankView/all``
    /// it is NCBI's lowest common ancestor; with the main ranks it is the nearest
    /// taxon of a main rank at or above it (or NCBI's own ancestor when that is
    /// above every domain, such as "cellular organisms"). Both distances are given:
    /// edges on NCBI's tree, and taxa of the main ranks on both paths below the
    /// ancestor. A database of the main ranks only answers on its own tree, where
    /// taxa under different roots are unrelated.
    public func compareBatch(_ pairs: [Stol_V1_TaxonPair], ranks: Stol_V1_RankView) throws(TaxonomyError) -> Stol_V1_CompareBatchResponse {
        guard let indexes = database.memoryIndexes else { throw .memoryIndexesLoading }
        if let full = indexes.fullTree {
            return try onFullTree(pairs, full, exactNames: indexes.exactNames, ranks: ranks)
        }
        guard ranks == .main else { throw .fullTreeAbsent }
        guard let tree = indexes.tree else { throw .memoryIndexesLoading }
        return try onMainTree(pairs, tree, exactNames: indexes.exactNames)
    }

    private func onFullTree(_ pairs: [Stol_V1_TaxonPair], _ tree: FullTaxonTree, exactNames: [String: TaxonID],
                            ranks: Stol_V1_RankView) throws(TaxonomyError) -> Stol_V1_CompareBatchResponse {
        try database.read { db in
            var response = Stol_V1_CompareBatchResponse()
            response.results = pairs.map { pair in
                var result = Stol_V1_CompareBatchResult()
                result.a = pair.a
                result.b = pair.b
                do {
                    let a = try node(db, pair.a, tree, exactNames), b = try node(db, pair.b, tree, exactNames)
                    result.aID = tree.id(at: a)
                    result.bID = tree.id(at: b)
                    guard let lca = tree.lowestCommonAncestor(a, b) else {
                        result.unrelated = true
                        return result
                    }
                    result.distanceAll = UInt32(tree.depth(of: a) + tree.depth(of: b) - 2 * tree.depth(of: lca))
                    result.distanceMain = UInt32(Self.mainRankSteps(tree, from: a, to: lca) + Self.mainRankSteps(tree, from: b, to: lca))
                    var shown = lca
                    if ranks == .main {
                        while tree.mainRank(of: shown) == nil, let parent = tree.parent(of: shown) { shown = parent }
                        if tree.mainRank(of: shown) == nil { shown = lca }  // above every domain
                    }
                    result.lcaID = tree.id(at: shown)
                    result.lcaName = tree.name(of: shown)
                    result.lcaRank = ranks == .main ? tree.mainRank(of: shown)?.rawValue ?? tree.rank(of: shown) : tree.rank(of: shown)
                } catch let error as TaxonomyError {
                    result.error = error.protocolError.proto
                } catch {
                    result.error = TaxonomyError.query("\(error)").protocolError.proto
                }
                return result
            }
            return response
        }
    }

    /// Taxa of a main rank on the path from `node` up to `ancestor`, the ancestor excluded.
    static func mainRankSteps(_ tree: FullTaxonTree, from node: Int, to ancestor: Int) -> Int {
        var steps = 0
        var current = node
        while current != ancestor {
            if tree.mainRank(of: current) != nil { steps += 1 }
            guard let parent = tree.parent(of: current) else { break }
            current = parent
        }
        return steps
    }

    private func node(_ db: Database, _ query: String, _ tree: FullTaxonTree, _ exactNames: [String: TaxonID]) throws -> Int {
        let id = try resolve(db, query.trimmingBlanks, exactNames: exactNames, wholeTree: tree)
        if let node = tree.index(of: id) { return node }
        switch try retired(db, id) {
        case .merged(let new)?:
            if let node = tree.index(of: new) { return node }  // a_id/b_id then name the taxon it went to
        case .deleted?:
            throw TaxonomyError.taxonDeleted(id)
        case nil:
            break
        }
        throw TaxonomyError.taxonNotFound(id)
    }

    private func onMainTree(_ pairs: [Stol_V1_TaxonPair], _ tree: CompactTaxonTree,
                            exactNames: [String: TaxonID]) throws(TaxonomyError) -> Stol_V1_CompareBatchResponse {
        try database.read { db in
            var response = Stol_V1_CompareBatchResponse()
            for pair in pairs {
                var result = Stol_V1_CompareBatchResult()
                result.a = pair.a
                result.b = pair.b
                do {
                    let idA = try resolve(db, pair.a.trimmingBlanks, exactNames: exactNames)
                    let idB = try resolve(db, pair.b.trimmingBlanks, exactNames: exactNames)
                    guard let a = tree.index(of: idA) else { throw TaxonomyError.taxonNotFound(idA) }
                    guard let b = tree.index(of: idB) else { throw TaxonomyError.taxonNotFound(idB) }
                    result.aID = idA
                    result.bID = idB
                    if let lca = tree.lowestCommonAncestor(a, b) {
                        let lcaID = tree.id(at: lca)
                        result.lcaID = lcaID
                        result.distanceMain = UInt32(Int(tree.depth[a]) + Int(tree.depth[b]) - 2 * Int(tree.depth[lca]))
                        if let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT rank, scientific_name FROM taxa WHERE id = ?"),
                                                      arguments: [lcaID]) {
                            result.lcaRank = row[0]
                            result.lcaName = row[1]
                        }
                    } else {
                        result.unrelated = true
                    }
                } catch let error as TaxonomyError {
                    result.error = error.protocolError.proto
                } catch {
                    result.error = TaxonomyError.query("\(error)").protocolError.proto
                }
                response.results.append(result)
            }
            return response
        }
    }
}
