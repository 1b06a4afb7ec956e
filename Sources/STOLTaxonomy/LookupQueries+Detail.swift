import GRDB
import STOLModel
import STOLProtocol

extension LookupQueries {
    /// Everything the species page shows (docs/design/queries-and-algorithms.md §10): the taxon, its
    /// lineage, common names grouped by language (the requested language first,
    /// preferred names first), synonyms, traits and references.
    /// With `ranks` `.all` the lineage is the source's every ancestor (NCBI's subgenus,
    /// tribe, clade …) where the view's is its main-rank ancestors.
    public func detail(of id: TaxonID, language: String, ranks: Stol_V1_RankView = .main) throws(TaxonomyError) -> Stol_V1_TaxonDetail {
        let fullLineage = ranks == .all ? try ancestorsOnFullTree(of: id) : nil
        return try database.read { db in
            guard let (taxon, lineage) = try reader.lineage(db, of: id, language: language) else {
                throw TaxonomyError.taxonNotFound(id)
            }
            var detail = Stol_V1_TaxonDetail()
            detail.taxon = taxon
            try fillTreeFacts(db, of: &detail.taxon, ranks: ranks)
            detail.lineage = fullLineage ?? lineage
            var groups: [String: [Stol_V1_LocalName]] = [:]
            let names = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT name, lang, name_type, is_preferred FROM names INDEXED BY idx_names_taxon WHERE taxon_id = ?
                ORDER BY is_preferred DESC, id
                """), arguments: [id])
            for row in names {
                let type: String = row["name_type"]
                if type == "synonym" {
                    detail.synonyms.append(row["name"])
                    continue
                }
                // Names by language are what people call the taxon (`LocalName`: common,
                // vernacular, trade). Acronyms, included groups, authorities and
                // misspellings are for search and name lookups; the detail has no
                // field for them yet.
                guard ["common", "vernacular", "trade"].contains(type) else { continue }
                var name = Stol_V1_LocalName()
                name.name = row["name"]
                name.preferred = (row["is_preferred"] as Int) != 0
                name.nameType = type
                groups[row["lang"], default: []].append(name)
            }
            detail.names = groups.keys.sorted { ($0 == language ? 0 : 1, $0) < ($1 == language ? 0 : 1, $1) }.map { lang in
                var group = Stol_V1_NameGroup()
                group.language = lang
                group.names = groups[lang]!
                return group
            }
            detail.traits = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT trait_key, trait_value, unit FROM traits WHERE taxon_id = ? ORDER BY trait_key, id
                """), arguments: [id]).map { row in
                var trait = Stol_V1_Trait()
                trait.key = row["trait_key"]
                trait.value = row["trait_value"]
                trait.unit = row["unit"] ?? ""
                return trait
            }
            detail.references = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT citation, url, ref_type FROM refs WHERE taxon_id = ? ORDER BY id
                """), arguments: [id]).map { row in
                var reference = Stol_V1_Reference()
                reference.citation = row["citation"]
                reference.url = row["url"] ?? ""
                reference.refType = row["ref_type"]
                return reference
            }
            return detail
        }
    }
}
