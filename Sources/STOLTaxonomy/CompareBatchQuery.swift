import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// Common ancestors and distances of many pairs in one round trip, from the
    /// in-memory tree (``TaxonomyTree/compare(_:_:)``).
    ///
    /// With the whole tree in the database (schemas 2 and 3) every pair has a
    /// common ancestor (NCBI's root at the latest): with ``Stol_V1_RankView/all`` it
    /// is NCBI's lowest common ancestor; with the main ranks it is the nearest
    /// taxon of a main rank at or above it (or NCBI's own ancestor when that is
    /// above every domain, such as "cellular organisms"). Both distances are given:
    /// edges on NCBI's tree, and taxa of the main ranks on both paths below the
    /// ancestor. A database of the main ranks only (schema 1) answers on its own
    /// tree, where taxa under different roots are unrelated.
    public func compareBatch(_ pairs: [Stol_V1_TaxonPair], ranks: Stol_V1_RankView) throws(TaxonomyError) -> Stol_V1_CompareBatchResponse {
        guard let indexes = database.memoryIndexes, let tree = indexes.tree else { throw .memoryIndexesLoading }
        guard ranks == .main || indexes.holdsWholeTree else { throw .fullTreeAbsent }
        return try database.read { db in
            var response = Stol_V1_CompareBatchResponse()
            response.results = pairs.map { pair in
                var result = Stol_V1_CompareBatchResult()
                result.a = pair.a
                result.b = pair.b
                do {
                    let a = try node(db, pair.a, tree, indexes), b = try node(db, pair.b, tree, indexes)
                    result.aID = tree.id(at: a)
                    result.bID = tree.id(at: b)
                    guard let comparison = tree.compare(a, b) else {
                        result.unrelated = true
                        return result
                    }
                    if indexes.holdsWholeTree { result.distanceAll = UInt32(comparison.distanceAll) }
                    result.distanceMain = UInt32(comparison.distanceMain)
                    let shown = ranks == .main ? comparison.mainLCA : comparison.lca
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

    /// The node a query names; a merged id gives the node it went to (`a_id`/`b_id`
    /// then name that taxon).
    func node(_ db: Database, _ query: String, _ tree: TaxonomyTree, _ indexes: MemoryIndexes) throws -> Int {
        let id = try resolve(db, query.trimmingBlanks, exactNames: indexes.exactNames, wholeTree: indexes.wholeTree)
        if let node = tree.index(of: id) { return node }
        switch try retired(db, id) {
        case .merged(let new)?:
            if let node = tree.index(of: new) { return node }
        case .deleted?:
            throw TaxonomyError.taxonDeleted(id)
        case nil:
            break
        }
        throw TaxonomyError.taxonNotFound(id)
    }
}
