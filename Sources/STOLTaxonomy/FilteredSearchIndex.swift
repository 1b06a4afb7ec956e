import STOLModel

/// What makes a search with a rank or IUCN filter as fast as one without.
///
/// Asked to SQLite, "these words, rank genus" was planned from `idx_taxa_rank`:
/// the FTS5 match ran once per genus (110,165 on NCBI: 5.3 s). Driven by FTS5
/// instead (`CROSS JOIN`), it walks every match of the words until enough pass
/// the filter: fine when most matches pass (species: 95 % of NCBI), 105 ms when
/// none does ("sp" has 1.3 M matches, no genus among them). So:
///
/// - Ranks above species (123,000 taxa on NCBI): every word of every name of
///   those taxa (scientific, common, vernacular, synonym and the other names —
///   the columns of `fts_taxa`) in a sorted in-memory index; a query intersects the taxa of its
///   words, which is what FTS5's implicit AND computes, in microseconds.
/// - IUCN status (174 taxa on NCBI with the curated overlay): the taxa with a
///   status and the words of their searchable names are kept in memory and
///   matched there. FTS5 told to check only those (`rowid IN (…)`) still merges
///   the doclists of every word first: 25 ms for "bacterium enrichment culture
///   DGGE band 2" (each word has hundreds of thousands of rows).
/// - Species: FTS5 drives; nearly every match passes, so `LIMIT` stops it early.
public struct FilteredSearchIndex: Sendable {
    /// Words of the names of taxa above species, with their taxon: one index per
    /// rank (by ``TaxonRank/level``), so "a…" of rank class scans classes only
    /// (one index for all ranks took 5 ms to skip the 60,000 genus words of "a").
    let higherTaxa: [NameWordIndex]
    /// Taxa with an IUCN category, and the category.
    let conservation: [TaxonID: String]
    /// The common names and synonyms of those taxa, folded once: an approximate
    /// search with a status filter compares the query with all of them (folding
    /// the multilingual names at every query cost 5 ms).
    let conservedNames: [TaxonID: [IndexedName]]
    /// The words of the names `fts_taxa` holds for each of those taxa (scientific
    /// name, common and vernacular names, synonyms, acronyms and the other names
    /// of every type but trade), as FTS5 tokenises them.
    let conservedWords: [TaxonID: Set<String>]

    /// A name of a taxon with its folded words (what the scorer compares).
    struct IndexedName: Sendable {
        /// The row id in `names` (the order SQL reads them in).
        let order: Int64
        let text: String
        let words: [String]
        let isSynonym: Bool
        let language: String
        let preferred: Bool
    }

    /// Taxa whose names hold every word of `groups` (the last word a prefix when
    /// `prefix`), of `rank`; nil when the index cannot answer (species, or no rank).
    /// Phrases are checked word by word here (adjacency is the scorer's job).
    func higherRankMatches(_ groups: [[String]], prefix: Bool, rank: TaxonRank?, limit: Int) -> [TaxonID]? {
        guard let rank, rank != .species else { return nil }
        let words = groups.flatMap { $0 }
        guard !words.isEmpty else { return [] }
        guard rank.level < higherTaxa.count else { return [] }
        let ofRank = higherTaxa[rank.level]
        var result: [TaxonID]?
        // The rarest words first would be ideal; words in query order are fine: each
        // lookup is a binary search and a run of equal words.
        for (index, word) in words.enumerated() {
            let isPrefix = prefix && index == words.count - 1
            let ids = ofRank.taxa(withWordPrefix: word, limit: words.count == 1 ? limit : .max, exact: !isPrefix)
            if let previous = result {
                let wanted = Set(ids)
                result = previous.filter { wanted.contains($0) }
            } else {
                result = ids
            }
            if result?.isEmpty == true { return [] }
        }
        return Array((result ?? []).prefix(limit))
    }

    /// The taxa of `conserved` (from ``conserved(_:rank:tree:)``) whose searchable
    /// names hold every word of `groups` (the last a prefix when `prefix`): what
    /// FTS5's implicit AND over the row finds (phrases word by word, as above).
    func conservedMatches(_ groups: [[String]], prefix: Bool, among conserved: [TaxonID], limit: Int) -> [TaxonID] {
        let words = groups.flatMap { $0 }
        guard !words.isEmpty else { return [] }
        var matches: [TaxonID] = []
        for id in conserved where matches.count < limit {
            guard let known = conservedWords[id] else { continue }
            let all = words.enumerated().allSatisfy { index, word in
                prefix && index == words.count - 1 ? known.contains { $0.hasPrefix(word) } : known.contains(word)
            }
            if all { matches.append(id) }
        }
        return matches
    }

    /// Taxa with one of `statuses` (and of `rank`, when given).
    func conserved(_ statuses: Set<String>, rank: TaxonRank?, tree: TaxonomyTree) -> [TaxonID] {
        conservation.compactMap { id, status in
            guard statuses.contains(status) else { return nil }
            if let rank, tree.index(of: id).flatMap(tree.mainRank(of:)) != rank { return nil }
            return id
        }.sorted()
    }

    static let empty = FilteredSearchIndex(higherTaxa: [], conservation: [:], conservedNames: [:],
                                           conservedWords: [:])
}
