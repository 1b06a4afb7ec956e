import GRDB
import STOLModel
import STOLProtocol

/// The closest species of a species (`relatives`): from the precomputed table, or
/// computed on the in-memory tree (the main ranks or NCBI's whole tree).
public struct RelativesQueries {
    let database: TaxonomyDatabase

    public init(database: TaxonomyDatabase) {
        self.database = database
    }

    var layout: TaxonomyLayout { database.layout }
    var reader: TaxonReader { TaxonReader(database: database) }

    /// Default of `RelativesRequest.max_candidates`: nodes examined before the
    /// computed mode gives up being exact (scanning that many takes about 2 ms).
    public static let defaultMaximumCandidates = 1_000_000

    /// The `n` closest species (docs/design/queries-and-algorithms.md §5). From `top_n_relatives` when it
    /// holds at least `n` rows for the species and `computed` is false; otherwise
    /// computed on the in-memory ``TaxonomyTree``, which gives the same exact
    /// answer (distance, then scientific name, then id) as the pipeline's
    /// ``TaxonomyTree/RelativesIndex`` that filled the table: the same rule and
    /// order on the same tree type. The tests check that the two agree for every
    /// species of a built database.
    ///
    /// Never waits for the in-memory tree: when the answer needs it and it is
    /// still being built, this throws ``TaxonomyError/memoryIndexesLoading`` and
    /// ``TaxonomyService`` awaits it, holding no thread, and asks again.
    ///
    /// A node below a species outside the eight ranks (a strain, a subspecies, an
    /// isolate) is answered for its species: the response's `taxon` is that species,
    /// whose closest relatives are the strain's closest species too.
    public func relatives(of id: TaxonID, n: Int, computed: Bool, maximumCandidates: Int,
                          language: String) throws(TaxonomyError) -> Stol_V1_RelativesResponse {
        let precomputed = try database.read { db -> Stol_V1_RelativesResponse? in
            guard let taxon = try reader.taxa(db, ids: [id], language: language)[id] else { throw TaxonomyError.taxonNotFound(id) }
            if taxon.rank == .unspecified, layout.everyNode,
               let species = try TaxonID.fetchOne(db.cachedStatement(sql: """
                   SELECT p.id FROM taxa t JOIN taxa p ON p.id = t.main_parent_id WHERE t.id = ? AND p.main_rank = 'species'
                   """), arguments: [id]) {
                return Stol_V1_RelativesResponse.with { $0.taxon.id = species }  // answered for the species, below
            }
            guard taxon.rank == .species else {
                throw TaxonomyError.notASpecies(
                    id, rank: TaxonRank(taxon.rank)?.rawValue ?? (taxon.sourceRank.isEmpty ? "taxon" : taxon.sourceRank))
            }
            var response = Stol_V1_RelativesResponse()
            response.taxon = taxon
            guard !computed else { return response }
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT relative_id, rank_order, lca_id, lca_depth, distance FROM top_n_relatives
                WHERE taxon_id = ? ORDER BY rank_order LIMIT ?
                """), arguments: [id, n])
            guard rows.count >= n else { return response }
            let byID = try reader.taxa(db, ids: rows.flatMap { [$0["relative_id"], $0["lca_id"]] as [TaxonID] }, language: language)
            response.source = .precomputed
            response.relatives = rows.compactMap { row in
                guard let relativeTaxon = byID[row["relative_id"]], let lca = byID[row["lca_id"]] else { return nil }
                var relative = Stol_V1_Relative()
                relative.rankOrder = row["rank_order"]
                relative.taxon = relativeTaxon
                relative.lca = lca
                relative.lcaDepth = row["lca_depth"]
                relative.distance = row["distance"]
                return relative
            }
            return response
        }
        guard var response = precomputed else { throw .taxonNotFound(id) }
        if response.taxon.id != id {
            return try relatives(of: response.taxon.id, n: n, computed: computed, maximumCandidates: maximumCandidates,
                                 language: language)
        }
        if response.source == .precomputed { return response }

        guard let indexes = database.memoryIndexes else { throw .memoryIndexesLoading }
        guard let tree = indexes.tree, let target = tree.index(of: id) else {
            throw .noDatabase("closest relatives cannot be computed: the in-memory tree is unavailable (\(indexes.treeProblem ?? "unknown"))")
        }
        let answer = tree.closestSpecies(of: target, n: n, maximumCandidates: maximumCandidates, in: .main)
        let ids = answer.relatives.flatMap { [tree.id(at: $0.node), tree.id(at: $0.lca)] }
        let byID = try database.read { db in try reader.taxa(db, ids: ids, language: language) }
        let taxon = response.taxon
        response = Self.relativesResponse(answer) { byID[tree.id(at: $0)] }
        response.taxon = taxon
        return response
    }

    /// The closest species of `id` on NCBI's own tree (`relatives --ranks all`), by
    /// NCBI's edges, then name, then id; always computed (the precomputed table is
    /// of the main ranks).
    public func relativesOnFullTree(of id: TaxonID, n: Int, maximumCandidates: Int) throws(TaxonomyError) -> Stol_V1_RelativesResponse {
        let tree = try database.wholeTree()
        guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
        guard tree.isSpecies(node, in: .all) else { throw .notASpecies(id, rank: tree.rank(of: node)) }
        let answer = tree.closestSpecies(of: node, n: n, maximumCandidates: maximumCandidates, in: .all)
        var response = Self.relativesResponse(answer) { TaxonReader.treeTaxon(tree, $0) }
        response.taxon = TaxonReader.treeTaxon(tree, node)
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
