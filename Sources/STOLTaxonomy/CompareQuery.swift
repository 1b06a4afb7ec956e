import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// Compares two taxa (docs/design/queries-and-algorithms.md §4): lowest common ancestor, both
    /// paths up to it, distance `depth(a) + depth(b) − 2·depth(lca)`, a sentence
    /// naming the shared clade, and the Jaccard similarity of their traits.
    ///
    /// The LCA is found by the path-to-root method on the two lineages (§3 there)
    /// (at most eight taxa each), which the answer needs anyway for the paths;
    /// taxa in different root trees have no LCA and are answered as unrelated.
    public func compare(_ a: TaxonID, _ b: TaxonID, language: String) throws(TaxonomyError) -> Stol_V1_CompareResponse {
        try database.read { db in
            guard let (taxonA, ancestorsA) = try lineage(db, of: a, language: language) else { throw TaxonomyError.taxonNotFound(a) }
            guard let (taxonB, ancestorsB) = try lineage(db, of: b, language: language) else { throw TaxonomyError.taxonNotFound(b) }
            var result = Stol_V1_CompareResponse()
            result.taxonA = taxonA
            result.taxonB = taxonB
            let fullA = ancestorsA + [taxonA], fullB = ancestorsB + [taxonB]
            var shared = 0
            while shared < min(fullA.count, fullB.count) && fullA[shared].id == fullB[shared].id { shared += 1 }
            if shared == 0 {
                result.relation = .unrelated
                result.pathA = [taxonA]
                result.pathB = [taxonB]
                result.sharedClade = "They share no ancestor in this database: \(Self.describe(fullA[0])) and "
                    + "\(Self.describe(fullB[0])) are separate roots"
            } else {
                let lca = fullA[shared - 1]
                result.lca = lca
                result.lcaDepth = UInt32(shared - 1)
                result.pathA = Array(fullA[(shared - 1)...].reversed())
                result.pathB = Array(fullB[(shared - 1)...].reversed())
                result.distance = UInt32(fullA.count - shared + fullB.count - shared)
                if a == b {
                    result.relation = .same
                    result.sharedClade = "Both are the same taxon: \(Self.describe(lca))"
                } else {
                    result.relation = lca.id == a ? .aAncestorOfB : (lca.id == b ? .bAncestorOfA : .related)
                    result.sharedClade = "Both are in \(Self.describe(lca))"
                }
            }
            if let similarity = try traitSimilarity(db, a, b) { result.traitSimilarity = similarity }
            return result
        }
    }

    /// "order Carnivora"
    static func describe(_ taxon: Stol_V1_Taxon) -> String {
        let rank = TaxonomyQueries.modelRank(taxon.rank)?.rawValue ?? "taxon"
        return "\(rank) \(taxon.scientificName)"
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
