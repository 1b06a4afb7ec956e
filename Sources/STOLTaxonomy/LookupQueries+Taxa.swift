import GRDB
import STOLModel
import STOLProtocol

extension LookupQueries {
    /// Many taxa by id (`get_taxa`), for a client resolving a list of ids (a
    /// favourites list) in one round trip instead of one `get_taxon` each.
    ///
    /// Each id is answered once, in the order of its first mention. An id the
    /// source merged into another is answered as that taxon and reported in
    /// `merged` (as every operation does); an id with no taxon here (never
    /// existed, or deleted from the source) is listed in `missingIDs`, never an
    /// error: a saved favourite outlives a database that does not have it.
    public func taxa(ids: [TaxonID], language: String) throws(TaxonomyError)
        -> (response: Stol_V1_TaxaResponse, merged: [Stol_V1_MergedTaxon]) {
        var seen = Set<TaxonID>()
        let unique = ids.filter { seen.insert($0).inserted }
        return try database.read { db in
            var found = try reader.taxa(db, ids: unique, language: language)
            var merged: [Stol_V1_MergedTaxon] = []
            var answeredAs: [TaxonID: TaxonID] = [:]
            for id in unique where found[id] == nil {
                try TaxonomyError.checkCancellation()
                if case .merged(let new)? = try RetiredID.lookup(db, id, in: database) {
                    merged.append(.with { $0.oldID = id; $0.newID = new })
                    answeredAs[id] = new
                }
            }
            let newIDs = Array(Set(answeredAs.values).filter { found[$0] == nil })
            found.merge(try reader.taxa(db, ids: newIDs, language: language)) { old, _ in old }
            var response = Stol_V1_TaxaResponse()
            var answered = Set<TaxonID>()
            for id in unique {
                let target = answeredAs[id] ?? id
                guard let taxon = found[target] else {
                    response.missingIds.append(id)
                    continue
                }
                if answered.insert(target).inserted { response.taxa.append(taxon) }
            }
            return (response, merged.filter { found[$0.newID] != nil })
        }
    }
}
