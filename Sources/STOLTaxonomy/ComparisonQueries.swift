import GRDB
import STOLModel
import STOLProtocol

/// Common ancestors and distances: `compare` (one pair), `compare_batch`, and
/// `lca_batch` (the common ancestor or majority taxon of many sets, in
/// ComparisonQueries+Lca.swift), all on the in-memory tree (``PairComparison``).
public struct ComparisonQueries {
    let database: TaxonomyDatabase

    public init(database: TaxonomyDatabase) {
        self.database = database
    }

    var reader: TaxonReader { TaxonReader(database: database) }
    var names: NameQueries { NameQueries(database: database) }

    /// Compares two taxa (docs/design/queries-and-algorithms.md §4) on the in-memory
    /// tree (``PairComparison``): the common ancestor, both paths up to it, both
    /// distances and a sentence naming the shared clade; SQL adds the taxa's common
    /// names in `language` (main ranks) and the Jaccard similarity of their traits.
    /// On the whole tree (`ranks` `.all`) the taxa are whole-tree taxa (§4.1).
    public func compare(_ a: TaxonID, _ b: TaxonID, language: String,
                        ranks: Stol_V1_RankView = .main) throws(TaxonomyError) -> Stol_V1_CompareResponse {
        let (tree, wholeTree) = try comparisonTree(ranks)
        guard let nodeA = tree.index(of: a) else { throw .taxonNotFound(a) }
        guard let nodeB = tree.index(of: b) else { throw .taxonNotFound(b) }
        let pair = PairComparison(nodeA, nodeB, on: tree, view: ranks == .all ? .all : .main)
        return try database.read { db in
            var byID: [TaxonID: Stol_V1_Taxon] = [:]
            if ranks != .all {
                let nodes = Set(pair.path(from: nodeA) + pair.path(from: nodeB))
                byID = try reader.taxa(db, ids: nodes.map { tree.id(at: $0) }, language: language)
            }
            // A node `taxa` lacks (schema 2 keeps the whole tree beside the view) is named by the tree.
            var result = pair.response(wholeTree: wholeTree) { node in byID[tree.id(at: node)] ?? TaxonReader.treeTaxon(tree, node) }
            if let similarity = try traitSimilarity(db, a, b) { result.traitSimilarity = similarity }
            return result
        }
    }

    /// Common ancestors and distances of many pairs in one round trip, each pair as
    /// ``compare(_:_:language:ranks:)`` answers it (``PairComparison``); a query that
    /// names nothing fails its pair alone.
    public func compareBatch(_ pairs: [Stol_V1_TaxonPair], ranks: Stol_V1_RankView) throws(TaxonomyError) -> Stol_V1_CompareBatchResponse {
        let (tree, wholeTree) = try comparisonTree(ranks)
        let indexes = database.memoryIndexes!
        let view: TaxonomyTree.View = ranks == .all ? .all : .main
        return try database.read { db in
            var response = Stol_V1_CompareBatchResponse()
            response.results = try pairs.map { pair in
                try TaxonomyError.checkCancellation()
                var result = Stol_V1_CompareBatchResult()
                result.a = pair.a
                result.b = pair.b
                do {
                    let a = try names.node(db, pair.a, tree, indexes), b = try names.node(db, pair.b, tree, indexes)
                    PairComparison(a, b, on: tree, view: view).fill(&result, wholeTree: wholeTree)
                } catch TaxonomyError.memoryIndexesLoading {
                    throw TaxonomyError.memoryIndexesLoading  // a common name before the names' indexes: the batch waits
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

    /// The tree every comparison is made on, and whether it is the source's whole
    /// tree (schemas 2 and 3; `distance_all` is given then). A comparison waits for
    /// it rather than answer from SQL meanwhile: the same request gets the same
    /// answer whenever it is asked.
    private func comparisonTree(_ ranks: Stol_V1_RankView) throws(TaxonomyError) -> (TaxonomyTree, wholeTree: Bool) {
        if ranks == .all && database.fullTreeCount == 0 { throw .fullTreeAbsent }
        guard let indexes = database.memoryIndexes, let tree = indexes.tree else { throw .memoryIndexesLoading }
        guard ranks != .all || indexes.holdsWholeTree else { throw .fullTreeAbsent }
        return (tree, indexes.holdsWholeTree)
    }

    /// Jaccard similarity of the two taxa's `key=value` trait sets; nil unless both have traits.
    func traitSimilarity(_ db: Database, _ a: TaxonID, _ b: TaxonID) throws -> Double? {
        var sets: [TaxonID: Set<String>] = [:]
        sets[a] = []
        sets[b] = []
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT taxon_id, trait_key, trait_value FROM traits WHERE taxon_id IN (?, ?)
            """), arguments: [a, b])
        for row in rows { sets[row["taxon_id"], default: []].insert("\(row["trait_key"] as String)=\(row["trait_value"] as String)") }
        let traitsA = sets[a]!, traitsB = sets[b]!
        guard !traitsA.isEmpty, !traitsB.isEmpty else { return nil }
        return Double(traitsA.intersection(traitsB).count) / Double(traitsA.union(traitsB).count)
    }
}
