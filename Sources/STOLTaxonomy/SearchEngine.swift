import Foundation
import GRDB
import STOLModel
import STOLProtocol

/// What a search is limited to besides its text.
public struct SearchOptions: Sendable {
    public var rank: TaxonRank?
    /// IUCN codes; empty means any status (including none).
    public var conservation: Set<String>
    public var limit: Int
    public var language: String
    /// Complete fewer than three results with approximate matches (docs/design/queries-and-algorithms.md §7.4).
    public var fuzzy: Bool
    /// An id or exact name: only taxa under it (itself included) answer; empty: all.
    public var within: String
    /// ``within``'s node in the whole tree, once the search has resolved it.
    var withinNode: Int?
    /// What the search may examine (``SearchLimits/standard`` on the wire; tests narrow them).
    public var limits: SearchLimits

    public init(rank: TaxonRank? = nil, conservation: Set<String> = [], limit: Int = 20, language: String = "en",
                fuzzy: Bool = true, within: String = "", limits: SearchLimits = .standard) {
        self.rank = rank
        self.conservation = conservation
        self.limit = limit
        self.language = language
        self.fuzzy = fuzzy
        self.within = within
        self.limits = limits
    }
}

/// Search over scientific, common and synonym names (docs/design/queries-and-algorithms.md §7).
///
/// Every query gathers a bounded set of candidates first, then scores them in
/// Swift by how well one of their names matches (whole name, start of the name,
/// all words, fuzzy), so the cost does not grow with the number of matches:
///
/// - Words and phrases: FTS5 `MATCH` without ranking, at most ``candidateCap``
///   rows. Ranking all matches with `bm25` costs over 100 ms for a frequent word
///   on the full NCBI tree ("bacterium"); unranked it is under 1 ms. When a word
///   is that frequent, names that start with the query (`idx_taxa_name` range)
///   and common names are added as candidates, so the best hits are not lost.
/// - A last word of one or two letters in prefix mode (autocomplete): FTS5 would
///   expand it over the whole vocabulary (about 100 ms for "a"), so scientific
///   names come from an `idx_taxa_name` range scan and common names from the
///   in-memory ``NameWordIndex``, both ordered and limited.
/// - Fewer than three hits (outside prefix mode): fuzzy fallback with Levenshtein ≤ 2 (queries of 5+
///   characters) or ≤ 1. Candidates come from the query's other words (a typo
///   in one word of a binomial) and from corrections of each word found in the
///   ``FuzzyVocabulary``.
public struct SearchEngine {
    let database: TaxonomyDatabase

    public init(database: TaxonomyDatabase) {
        self.database = database
    }

    var reader: TaxonReader { TaxonReader(database: database) }

    /// Candidates gathered per source before scoring.
    static let candidateCap = 200
    /// Names starting with the text, and the most prominent of them, gathered in
    /// prefix mode: the same for every limit up to these, so that the limit applies
    /// to the ranked hits, not to what is ranked ("panth" with --limit 3 and 8 gives
    /// the same first three).
    static let prefixCandidates = 100
    static let prominentCandidates = 50

    /// The hits of ``answer(_:options:)``.
    public func search(_ query: SearchQuery, options: SearchOptions) throws(TaxonomyError) -> [Stol_V1_SearchHit] {
        try answer(query, options: options).hits
    }

    /// The ranked hits, and what finding them examined: every source of candidates
    /// works within ``SearchOptions/limits`` (a query of more words is refused), and a
    /// search that reached a cap says so (``SearchWork/partial``).
    public func answer(_ query: SearchQuery, options: SearchOptions) throws(TaxonomyError) -> SearchAnswer {
        guard !query.isEmpty else { return SearchAnswer(hits: [], work: SearchWork()) }
        guard query.matchWordCount <= options.limits.words else {
            throw .limitExceeded("a search matches at most \(options.limits.words) distinct words (a word typed again "
                                 + "counts once, a phrase counts each of its words); this one has \(query.matchWordCount)",
                                 limit: options.limits.words)
        }
        // Ranking reads the in-memory indexes (prominence, the fuzzy vocabulary, the names several
        // taxa share): without them the same search ranked otherwise ("panth" gave Panthalis
        // first for the seconds after a start, Panthera after). It is never answered without them:
        // the service holds it until they are built (a start's or a switch's few seconds), so one
        // request has one answer whenever it comes (issue 34).
        guard let loaded = database.memoryIndexes, loaded.namesLoaded else { throw .memoryIndexesLoading }
        let indexes: MemoryIndexes? = loaded
        let within = options.within.trimmingBlanks
        // The whole tree answers "is it under that taxon?"; it is built in the first
        // seconds after a start or a switch.
        if !within.isEmpty && indexes?.tree == nil { throw .memoryIndexesLoading }
        let run = SearchRun(limits: options.limits)
        return try database.read { db in
            var options = options
            /// Whether a candidate lies under the `within` taxon (always, without one).
            var inside: (TaxonID) -> Bool = { _ in true }
            /// The taxa under a small `within` taxon: searched by their own names.
            var clade: [TaxonID]?
            if !within.isEmpty, let indexes, let tree = indexes.tree {
                let top: Int
                do {
                    top = try NameQueries(database: database).node(db, within, tree, indexes)
                } catch TaxonomyError.nameNotFound, TaxonomyError.taxonNotFound {
                    throw TaxonomyError.withinNotFound(within)
                }
                options.withinNode = top
                inside = { id in tree.index(of: id).map { tree.isDescendant($0, of: top) } ?? false }
                // A small taxon is walked, not looked for among the words' matches in the
                // whole tree ("sp" has 1.3 million, none under Homo sapiens).
                if let nodes = tree.subtree(of: top, in: .all, limit: options.limits.cladeNodes)?.nodes {
                    clade = nodes.map { tree.id(at: $0) }
                    run.work.cladeNodes = nodes.count
                }
            }
            var candidates: [TaxonID], verified: Set<TaxonID>
            if let clade {
                candidates = try exactNameMatches(db, query, language: options.language, indexes: indexes).filter(inside) + clade
                verified = []
            } else {
                (candidates, verified) = try exactCandidates(db, query, options: options, indexes: indexes, run: run)
                if options.withinNode != nil { candidates = candidates.filter(inside) }
            }
            candidates = run.bounded(candidates)
            var preferred = Set<TaxonID>()  // hits matched by their preferred common name
            var hits = try score(db, candidates, query: query, options: options, verified: verified, preferred: &preferred,
                                 acrossNamesInMemory: clade != nil)
            // A last word that is a whole word of no name is a fragment of one: completed (as
            // autocomplete does) before the query is read as a misspelling, so "panth" is
            // Panthera, which begins with it, before the Formicidae "ants" at edit distance 2
            // (issue 34). Whether it is a word does not depend on the filters, so a filter
            // never changes how a query is read.
            if hits.count < 3 && !query.prefix && clade == nil, try !lastWordIsAWord(db, query, run: run) {
                let completing = SearchQuery(text: query.raw, prefix: true, phrase: false)
                let found = Set(hits.map(\.taxon.id))
                var (more, moreVerified) = try exactCandidates(db, completing, options: options, indexes: indexes, run: run)
                if options.withinNode != nil { more = more.filter(inside) }
                more = run.bounded(more.filter { !found.contains($0) })
                hits += try score(db, more, query: completing, options: options, verified: moreVerified, preferred: &preferred)
            }
            // Autocomplete (prefix mode) completes what was typed; comparing a
            // prefix with whole names would suggest unrelated short names.
            if hits.count < 3 && options.fuzzy && !query.prefix {
                let found = Set(hits.map(\.taxon.id))
                let fuzzyIDs = try (clade ?? fuzzyCandidates(db, query, options: options, indexes: indexes, run: run))
                    .filter { !found.contains($0) && inside($0) }
                hits += try scoreFuzzy(db, run.bounded(fuzzyIDs), query: query, options: options)
            }
            // Match quality first; among equal matches the taxon most users mean
            // (``ProminenceIndex``), then name and id for a stable order.
            let prominence = indexes?.prominence ?? .empty
            // The keys once per hit, not per comparison: a filtered search may score
            // thousands of candidates, and two hash lookups per comparison cost ms.
            let keys = hits.map { hit in
                (match: Self.matchClass(hit), prominence: prominence.score(of: hit.taxon.id),
                 quality: hit.fuzzy || !preferred.contains(hit.taxon.id) ? hit.score : hit.score - 0.5)
            }
            let order = hits.indices.sorted { i, j in
                let a = keys[i], b = keys[j], hitA = hits[i], hitB = hits[j]
                if a.match != b.match { return a.match > b.match }
                if a.prominence != b.prominence { return a.prominence > b.prominence }
                if a.quality != b.quality { return a.quality > b.quality }
                if hitA.score != hitB.score { return hitA.score > hitB.score }
                return hitA.taxon.scientificName != hitB.taxon.scientificName
                    ? hitA.taxon.scientificName < hitB.taxon.scientificName : hitA.taxon.id < hitB.taxon.id
            }
            let ranked = try Self.nameOrigins(db, order: Array(order.prefix(Self.originWindow)), hits: hits,
                                              classes: keys.map(\.match), prefix: query.prefix)
                + order.dropFirst(Self.originWindow)
            hits = ranked.prefix(options.limit).map { hits[$0] }
            let full = try reader.taxa(db, ids: hits.map(\.taxon.id), language: options.language)
            for index in hits.indices {
                if let taxon = full[hits[index].taxon.id] { hits[index].taxon = taxon }
            }
            return SearchAnswer(hits: hits, work: run.work)
        }
    }

    // MARK: Where a name comes from

    /// Whether some name holds the query's last word as a whole word (one FTS5 row at
    /// most): true for a query of phrases (`"…"`), which is read as written.
    private func lastWordIsAWord(_ db: Database, _ query: SearchQuery, run: SearchRun) throws -> Bool {
        guard let last = query.matchGroups.last, last.count == 1 else { return true }
        let expression = SearchQuery.expression([last], prefix: false)
        guard !expression.isEmpty else { return true }
        return !(try run.ids(db, "SELECT rowid FROM fts_taxa WHERE fts_taxa MATCH ? LIMIT ?", [expression, 1], limit: 1)).isEmpty
    }

    /// The order of ``search(_:options:)`` with three corrections where prominence
    /// compares two taxa one of which owes its name, and most of its prominence, to
    /// the other (docs/design/queries-and-algorithms.md §7.3). Prominence counts
    /// what lies under a taxon, so a group always outweighs its own members; yet
    /// when both match equally the member is usually what was typed:
    ///
    /// - **a species before the groups above it that carry its name** (any
    ///   class): NCBI names the genus *Bos* "cattle" and the family of the
    ///   aardvark "aardvark" after their best-known member; "cattle" is the cow;
    /// - in autocomplete, **a name before the names under it that extend it**:
    ///   "escher" completes to *Escherichia* before *Escherichia coli*, which goes
    ///   on with a word not yet typed;
    /// - in autocomplete, **a genus before the higher taxa named after it**:
    ///   family-group names are the type genus's stem with a rank ending, so
    ///   "drosoph" gives *Drosophila* before *Drosophilidae*, *Drosophilinae* and
    ///   *Drosophilini*, which contain it and are named from it.
    ///
    /// Each moves a hit just before the first hit of the same match class that it
    /// owes the name to; nothing else changes place. Only among the first
    /// ``originWindow`` ranked hits, and only for relatives at most
    /// ``originDepth`` levels apart: a filtered search may rank thousands of hits,
    /// and comparing each with every other cost 35 ms (p99 of the rank-filtered
    /// workload, against 2 ms). The window is the same for every limit, so the
    /// limit still cuts one order. `order` is the ranked order (indices into
    /// `hits`), `classes` the match class per hit.
    static func nameOrigins(_ db: Database, order: [Int], hits: [Stol_V1_SearchHit], classes: [Int],
                            prefix: Bool) throws -> [Int] {
        var result: [Int] = []
        result.reserveCapacity(order.count)
        var ancestorsCache: [TaxonID: Set<TaxonID>] = [:]
        func ancestors(_ id: TaxonID) throws -> Set<TaxonID> {
            if let known = ancestorsCache[id] { return known }
            // One statement for the whole walk (a statement per level cost twice as much).
            let found = Set(try TaxonID.fetchAll(db.cachedStatement(sql: """
                WITH RECURSIVE up(id, depth) AS (
                    SELECT parent_id, 1 FROM taxa WHERE id = ?
                    UNION ALL SELECT t.parent_id, up.depth + 1 FROM taxa t JOIN up ON t.id = up.id
                    WHERE up.depth < ? AND t.parent_id IS NOT NULL AND t.parent_id <> t.id)
                SELECT id FROM up WHERE id IS NOT NULL
                """), arguments: [id, originDepth]))
            ancestorsCache[id] = found
            return found
        }
        var folded: [Int: [String]] = [:]
        func words(_ index: Int) -> [String] {
            if let known = folded[index] { return known }
            let value = SearchQuery.words(in: hits[index].matchedName)
            folded[index] = value
            return value
        }
        // Autocomplete: what the hits placed so far offer to be moved before, found
        // by lookup rather than by comparing each hit with every other (that cost a
        // third of a millisecond per search of one or two letters).
        var extendedNames: [Int: Set<String>] = [:]  // per class: proper word prefixes of the names placed
        var higherByStart: [UInt32: [Int]] = [:]     // one-word names above species, by their first three letters
        for index in order {
            let hit = hits[index], matchClass = classes[index]
            var before: Int?
            if matchClass == 4, hit.taxon.rank == .species, !Self.isPlaceholder(hit.taxon.scientificName) {
                // A species before a higher taxon of the same exact name above it.
                let name = words(index)
                let lineage: Set<TaxonID>? = try result.contains {
                    classes[$0] == 4 && Self.isAboveSpecies(hits[$0].taxon) && words($0) == name
                } ? ancestors(hit.taxon.id) : nil
                if let lineage {
                    before = result.firstIndex {
                        classes[$0] == 4 && Self.isAboveSpecies(hits[$0].taxon) && words($0) == name
                            && lineage.contains(hits[$0].taxon.id)
                    }
                }
            }
            if prefix {
                let scientificName = hit.taxon.scientificName
                if before == nil, let extended = extendedNames[matchClass], extended.contains(words(index).joined(separator: " ")) {
                    // Only above its own descendants ("Escherichia coli" is in Escherichia),
                    // not above those of a homonym or of a subgenus elsewhere.
                    let name = words(index)
                    for other in result where classes[other] == matchClass && words(other).count > name.count
                        && words(other).starts(with: name) {
                        if try ancestors(hits[other].taxon.id).contains(hit.taxon.id) {
                            before = result.firstIndex(of: other)
                            break
                        }
                    }
                }
                if before == nil, hit.taxon.rank == .genus, let start = Self.start(of: scientificName),
                   let higher = higherByStart[start]?.filter({
                       classes[$0] == matchClass && Self.isNamed(hits[$0].taxon.scientificName, after: scientificName)
                   }), !higher.isEmpty {
                    let lineage = try ancestors(hit.taxon.id)
                    before = result.firstIndex { higher.contains($0) && lineage.contains(hits[$0].taxon.id) }
                }
                if hit.matchedName.utf8.contains(UInt8(ascii: " ")) {
                    let name = words(index)
                    for count in 1..<max(name.count, 1) {
                        extendedNames[matchClass, default: []].insert(name.prefix(count).joined(separator: " "))
                    }
                }
                if Self.isAboveSpecies(hit.taxon), !scientificName.utf8.contains(UInt8(ascii: " ")),
                   let start = Self.start(of: scientificName) {
                    higherByStart[start, default: []].append(index)
                }
            }
            if let before { result.insert(index, at: before) } else { result.append(index) }
        }
        return result
    }

    /// The first three bytes of a name, ASCII case folded, as one number (nil for a
    /// shorter name): ``isNamed(_:after:)`` holds only for names that share them.
    private static func start(of name: String) -> UInt32? {
        var key: UInt32 = 0, count = 0
        for byte in name.utf8.prefix(3) {
            key = key << 8 | UInt32(byte >= 65 && byte <= 90 ? byte + 32 : byte)
            count += 1
        }
        return count == 3 ? key : nil
    }

    /// The ranked hits ``nameOrigins(_:order:hits:classes:prefix:)`` reorders.
    static let originWindow = 32
    /// How far up a hit's ancestors are followed to find the taxon it is named
    /// after or named by (a family above a genus through a subfamily and a tribe,
    /// a strain below its species through a serotype).
    static let originDepth = 16

    /// A taxon of a main rank above species, or a node outside the eight ranks
    /// whose scientific name is one word (a subfamily, a tribe, a clade).
    private static func isAboveSpecies(_ taxon: Stol_V1_Taxon) -> Bool {
        switch taxon.rank {
        case .species: false
        case .unspecified: !taxon.scientificName.contains(" ")
        default: true
        }
    }

    /// An unnamed species of NCBI's kind "Mus sp." (the genus and "sp."): a bucket
    /// for specimens not identified further, not a species anyone names.
    static func isPlaceholder(_ scientificName: String) -> Bool {
        let words = scientificName.split(separator: " ")
        return words.count >= 2 && (words[1] == "sp." || words[1] == "sp")
    }

    /// The endings of names formed from a type genus's stem: zoological
    /// family-group names (-oidea, -idae, -inae, -ini, -ina), botanical names
    /// above genus (-ales, -ineae, -aceae, -oideae, -eae) and orders of fishes and
    /// birds (-iformes).
    static let typeNameEndings = ["oidea", "idae", "inae", "ini", "ina", "ales", "ineae", "aceae", "oideae", "eae", "iformes"]

    /// Whether the one-word `name` is formed from the genus `genus`: a rank ending
    /// after a stem that shares at least the genus less its last two letters (and
    /// three letters) and is at most two letters longer than the genus (the Latin
    /// stem: Drosophil-idae, Fel-idae from Felis, Homin-idae from Homo).
    static func isNamed(_ name: String, after genus: String) -> Bool {
        // Most pairs differ in the first three letters: compared byte by byte
        // (ASCII case folded) before any string is made, since autocomplete asks
        // for every genus against every hit before it.
        func folded(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
        guard name.utf8.count > 3, genus.utf8.count >= 3,
              zip(name.utf8.prefix(3), genus.utf8.prefix(3)).allSatisfy({ folded($0) == folded($1) }),
              name != genus, !name.contains(" ") else { return false }
        let name = name.lowercased(), genus = Array(genus.lowercased())
        for ending in typeNameEndings where name.hasSuffix(ending) {
            let stem = Array(name.dropLast(ending.count))
            var shared = 0
            while shared < stem.count, shared < genus.count, stem[shared] == genus[shared] { shared += 1 }
            if shared >= 3, shared >= genus.count - 2, stem.count <= genus.count + 2 { return true }
        }
        return false
    }

    /// Whether the plural forms of ``SearchQuery/pluralForms`` (English) apply to
    /// names of `language` (a BCP-47 tag: "en", "en-GB").
    static func pluralsApply(to language: String) -> Bool {
        language.lowercased() == "en" || language.lowercased().hasPrefix("en-")
    }

    /// How well a hit matches, in the order search ranks by before anything else:
    /// 4 a whole name of any class is exactly what was typed (letters and digits,
    /// case and accents folded; "honeybee" for "honey bee" too), 3 an abbreviated
    /// binomial ("C. elegans"), 2 a common name that ends with what was typed (a
    /// kind of it: "house mouse" for "mouse"), 1 every word typed is a word of one
    /// name (the last one as a prefix in autocomplete), 0 approximate (fuzzy). Within a class the
    /// taxon most people mean comes first (prominence), then the finer score (the
    /// kind of name, where the words are, how long the name is).
    static func matchClass(_ hit: Stol_V1_SearchHit) -> Int {
        if hit.fuzzy { return 0 }
        if hit.score >= Quality.exact { return 4 }
        if hit.score >= Quality.abbreviation { return 3 }
        if hit.score >= Quality.kind { return 2 }
        return 1
    }

    /// The base scores of ``score(_:_:query:options:verified:preferred:)``; a name's kind and
    /// length add at most 8 (``typeBonus(_:)``, `5 / words`), so the classes never overlap.
    enum Quality {
        static let exact: Double = 100
        static let abbreviation: Double = 90
        static let kind: Double = 80
        static let startsWith: Double = 60
        static let allWords: Double = 40
        static let acrossNames: Double = 20
    }

    // MARK: Candidates

    /// Candidate ids, and those FTS5 verified (the others must match by one of their
    /// names): first every taxon named exactly what was typed (``exactNameMatches``),
    /// then the word, prefix and prominence sources.
    private func exactCandidates(_ db: Database, _ query: SearchQuery, options: SearchOptions,
                                 indexes: MemoryIndexes?, run: SearchRun) throws -> ([TaxonID], Set<TaxonID>) {
        let exact = try exactNameMatches(db, query, language: options.language, indexes: indexes)
        let (ids, verified) = try gatheredCandidates(db, query, options: options, indexes: indexes, run: run)
        return (exact + ids, verified)
    }

    /// Every taxon with a name that is exactly the query: its scientific name as
    /// typed, with a capital first letter, or as a binomial is written ("homo
    /// sapiens" → "Homo sapiens"), by `idx_taxa_name`; any other name, folded, from
    /// the in-memory name index; and for an abbreviated binomial ("C. elegans") the
    /// most prominent taxa it abbreviates. A frequent word ("dog", "coli") matches
    /// thousands of names, more than FTS5 is asked for: the exact ones are gathered
    /// here so that match quality, not luck, puts them first.
    private func exactNameMatches(_ db: Database, _ query: SearchQuery, language: String,
                                  indexes: MemoryIndexes?) throws -> [TaxonID] {
        var ids: [TaxonID] = []
        let raw = query.raw
        if !raw.isEmpty, !raw.contains("\""), raw.utf8.count <= 256 {
            let capitalised = raw.prefix(1).uppercased() + raw.dropFirst()
            let binomial = raw.prefix(1).uppercased() + raw.dropFirst().lowercased()
            var forms = [raw]
            for form in [capitalised, binomial] where !forms.contains(form) { forms.append(form) }
            ids += try TaxonID.fetchAll(db.cachedStatement(sql: """
                SELECT id FROM taxa INDEXED BY idx_taxa_name WHERE scientific_name IN (\(TaxonReader.placeholders(forms)))
                LIMIT 64
                """), arguments: StatementArguments(forms))
        }
        if let indexes {
            let text = query.text
            if let id = indexes.exactNames[text] { ids.append(id) }
            ids += indexes.sharedNames[text] ?? []
            if let key = query.abbreviationKey { ids += indexes.abbreviations.ids(for: key) }
            if !query.prefix, query.words.count == 1 {
                ids += indexes.compactNames[text] ?? []
                ids += indexes.abbreviations.ids(for: text)  // "ecoli"
            }
            if !query.prefix, Self.pluralsApply(to: language) {
                // "oaks" for "oak": the group of the things typed (scored as a kind).
                for form in query.pluralForms {
                    if let id = indexes.exactNames[form] { ids.append(id) }
                    ids += indexes.sharedNames[form] ?? []
                }
            }
        }
        return ids
    }

    private func gatheredCandidates(_ db: Database, _ query: SearchQuery, options: SearchOptions,
                                    indexes: MemoryIndexes?, run: SearchRun) throws -> ([TaxonID], Set<TaxonID>) {
        let cap = Self.candidateCap
        if !options.conservation.isEmpty || options.rank != nil, options.withinNode == nil, let indexes, indexes.tree != nil {
            // Filters answered in memory (``FilteredSearchIndex``): taxa above species come
            // from the word index of their names.
            let filtered = indexes.filteredSearch
            if !options.conservation.isEmpty {
                // The few taxa with a status are matched in memory (``match``), below.
            } else if let ids = filtered.higherRankMatches(query.matchGroups, prefix: query.prefix, rank: options.rank,
                                                          limit: Self.directlyScoredLimit) {
                let phrase = query.matchGroups.contains { $0.count > 1 }
                return (ids, phrase || query.prefix ? [] : Set(ids))
            }
        }
        if query.prefix, indexes == nil {
            // The word index is still being built (the first seconds after a
            // start or a switch): answer correctly, if more slowly, with FTS5.
            return (try match(db, query.matchGroups, prefix: query.prefix, options: options, limit: cap, indexes: indexes,
                              run: run), [])
        }
        if query.prefix, let last = query.words.last {
            // Never an FTS5 prefix (`term*`): FTS5 merges the doclists of every
            // expansion before the first row (5.6 ms for "bacteri" on the full
            // NCBI build, 90 ms for "a"). Instead: names starting with the text
            // (`idx_taxa_name` range), words of common names and synonyms starting
            // with the last word (``NameWordIndex``), and the full words through
            // FTS5; every candidate must then match by one of its names.
            let few = max(Self.prefixCandidates, options.limit)
            var ids = try scientificPrefix(db, query.text, options: options, limit: few, indexes: indexes)
            // The most prominent names with that start, which name order may leave out.
            if options.rank == nil && options.conservation.isEmpty, let indexes {
                ids += indexes.prominence.prominent(withNamePrefix: query.text,
                                                    limit: max(Self.prominentCandidates, options.limit))
            }
            if query.raw != query.text && !query.raw.isEmpty {
                ids += try scientificPrefix(db, query.raw, options: options, limit: few, indexes: indexes)
            }
            if query.words.count == 1 {
                if let indexes { ids += indexes.nameWords.taxa(withWordPrefix: last, limit: few) }
            } else if ids.count < few {
                // Not enough names start with the text typed: the full words find more.
                var groups = query.matchGroups
                groups[groups.count - 1].removeLast()
                if groups[groups.count - 1].isEmpty { groups.removeLast() }
                ids += try match(db, groups, prefix: false, options: options, limit: cap, indexes: indexes, run: run)
            }
            return (ids, [])
        }
        var ids = try match(db, query.matchGroups, prefix: query.prefix, options: options, limit: cap + 1, indexes: indexes,
                            run: run)
        // A phrase may match across two names of one column (they are concatenated
        // in the index), so phrase hits must match within one name.
        let verified = query.matchGroups.contains { $0.count > 1 } ? [] : Set(ids)
        if query.abbreviationKey != nil && query.words.count > 2 {
            // "E. coli MG1655": the initial is no word of the name; the other words find
            // the strain, and the scorer checks the initial against the genus.
            ids += try match(db, Array(query.matchGroups.dropFirst()), prefix: query.prefix, options: options, limit: cap,
                             indexes: indexes, run: run)
        }
        if ids.count > cap {
            // A frequent word: add the names most likely meant (names starting with
            // the query, common names with its words).
            ids.removeLast()
            ids += try scientificPrefix(db, query.text, options: options, limit: 50, indexes: indexes)
            if options.rank == nil && options.conservation.isEmpty, let indexes {
                ids += indexes.prominence.prominent(withNamePrefix: query.text,
                                                    limit: max(Self.prominentCandidates, options.limit))
            }
            if let indexes, let first = query.words.first {
                ids += indexes.nameWords.taxa(withWordPrefix: first, limit: 50, exact: !(query.prefix && query.words.count == 1))
            }
        }
        return (ids, verified)
    }

    /// FTS5 rowids (taxon ids) matching the word groups (the last word a prefix
    /// when `prefix`), unranked, filtered by rank and status. With a filter,
    /// ``FilteredSearchIndex`` decides what drives the match (see there): the
    /// in-memory words of the taxa above species, the few taxa with an IUCN
    /// category, or, for species, FTS5 itself (`CROSS JOIN` keeps SQLite from
    /// starting at `idx_taxa_rank`).
    private func match(_ db: Database, _ groups: [[String]], prefix: Bool, options: SearchOptions, limit: Int,
                       indexes: MemoryIndexes?, run: SearchRun) throws -> [TaxonID] {
        let expression = SearchQuery.expression(groups, prefix: prefix)
        guard !expression.isEmpty else { return [] }
        // A phrase given to FTS5 as its words: a full page of matches may hold none of
        // the phrase's names, and the rest were not examined.
        let loosened = SearchQuery.loosensPhrases(groups)
        func page(_ ids: [TaxonID]) -> [TaxonID] {
            if loosened && ids.count >= limit { run.capped() }
            return ids
        }
        let everyMatch = "SELECT rowid FROM fts_taxa WHERE fts_taxa MATCH ?"
        if let top = options.withinNode, let indexes, let tree = indexes.tree {
            // Under a taxon: FTS5's matches in its order, each checked in the tree (its
            // place, its rank, its status) until `limit` pass; the same walk as a rank
            // filter below, so a small clade is not starved by the words' other matches.
            // The walk reads at most ``SearchLimits/rowsPerWalk`` matches (a small taxon
            // is searched by its own names instead, ``answer(_:options:)``).
            return try page(run.ids(db, everyMatch, [expression], limit: limit, filters: true) { id in
                guard let node = tree.index(of: id), tree.isDescendant(node, of: top) else { return false }
                if let rank = options.rank, tree.mainRank(of: node) != rank { return false }
                return options.conservation.isEmpty || options.conservation.contains(indexes.filteredSearch.conservation[id] ?? "")
            })
        }
        let (filter, arguments) = searchFilter(options)
        if filter.isEmpty {
            return try page(run.ids(db, everyMatch + " LIMIT ?", [expression, limit], limit: limit))
        }
        if let indexes, let tree = indexes.tree {
            if options.conservation.isEmpty,
               let ids = indexes.filteredSearch.higherRankMatches(groups, prefix: prefix, rank: options.rank, limit: limit) {
                return ids
            }
            if !options.conservation.isEmpty {
                let conserved = indexes.filteredSearch.conserved(options.conservation, rank: options.rank, tree: tree)
                guard !conserved.isEmpty else { return [] }
                if conserved.count <= Self.conservedCheckLimit {
                    return indexes.filteredSearch.conservedMatches(groups, prefix: prefix, among: conserved, limit: limit)
                }
            }
            if options.conservation.isEmpty, let rank = options.rank {
                // The rank from the in-memory view, not from a join per row: since schema 3
                // a word may match thousands of nodes outside the view ("unclassified":
                // no rank) before one species, and the join cost 8 ms for none.
                return try page(run.ids(db, everyMatch, [expression], limit: limit, filters: true) { id in
                    tree.index(of: id).map { tree.mainRank(of: $0) == rank } ?? false
                })
            }
        }
        return try page(run.ids(db, """
            SELECT f.rowid FROM fts_taxa f CROSS JOIN taxa t ON t.id = f.rowid WHERE fts_taxa MATCH ? \(filter) LIMIT ?
            """, StatementArguments([expression] + arguments + [limit]), limit: limit))
    }

    /// Up to this many taxa with a status are matched in memory (beyond, FTS5 drives).
    static let conservedCheckLimit = 5000
    /// Up to this many filtered candidates go to the scorer directly (it reads
    /// their names: about 10 µs each).
    static let directlyScoredLimit = 400

    /// Taxa whose scientific name starts with `prefix` (case of the first letter
    /// either way), by the `idx_taxa_name` index. With a status or a rank above
    /// species, the range could hold thousands of other taxa ("Bacillus s…": every
    /// Bacillus species) before one that passes: the candidates then come from
    /// ``FilteredSearchIndex`` and only their names are compared.
    private func scientificPrefix(_ db: Database, _ prefix: String, options: SearchOptions, limit: Int,
                                  indexes: MemoryIndexes? = nil) throws -> [TaxonID] {
        let (filter, arguments) = searchFilter(options)
        let capitalised = prefix.prefix(1).uppercased() + prefix.dropFirst()
        var candidates: [TaxonID]?
        if !filter.isEmpty, let indexes, let tree = indexes.tree {
            if !options.conservation.isEmpty {
                let conserved = indexes.filteredSearch.conserved(options.conservation, rank: options.rank, tree: tree)
                if conserved.count <= Self.directlyScoredLimit { candidates = conserved }
            } else {
                let words = SearchQuery.words(in: prefix)
                candidates = indexes.filteredSearch.higherRankMatches([words], prefix: true, rank: options.rank,
                                                                       limit: Self.directlyScoredLimit)
            }
        }
        var ids: [TaxonID] = []
        for start in capitalised == prefix ? [prefix] : [capitalised, prefix] {
            if let candidates {
                guard !candidates.isEmpty else { return [] }
                let padded = TaxonReader.padded(candidates)
                ids += try TaxonID.fetchAll(db.cachedStatement(sql: """
                    SELECT t.id FROM taxa t WHERE t.id IN (\(TaxonReader.placeholders(padded)))
                    AND t.scientific_name >= ? AND t.scientific_name < ? ORDER BY t.scientific_name LIMIT ?
                    """), arguments: StatementArguments(padded + [start, start + "\u{10FFFF}", limit]))
                continue
            }
            ids += try TaxonID.fetchAll(db.cachedStatement(sql: """
                SELECT t.id FROM taxa t INDEXED BY idx_taxa_name
                WHERE t.scientific_name >= ? AND t.scientific_name < ? \(filter)
                ORDER BY t.scientific_name LIMIT ?
                """), arguments: StatementArguments([start, start + "\u{10FFFF}"] + arguments + [limit]))
        }
        return ids
    }

    func searchFilter(_ options: SearchOptions) -> (String, [any DatabaseValueConvertible]) {
        var clause = ""
        var arguments: [any DatabaseValueConvertible] = []
        if let rank = options.rank {
            clause += " AND t.\(database.layout.mainRank) = ?"
            arguments.append(rank.rawValue)
        }
        if !options.conservation.isEmpty {
            clause += " AND t.conservation IN (\(TaxonReader.placeholders(options.conservation)))"
            arguments += options.conservation.sorted().map { $0 as any DatabaseValueConvertible }
        }
        return (clause, arguments)
    }

    private func fuzzyCandidates(_ db: Database, _ query: SearchQuery, options: SearchOptions,
                                 indexes: MemoryIndexes?, run: SearchRun) throws -> [TaxonID] {
        if !options.conservation.isEmpty, let indexes, let tree = indexes.tree {
            // A few hundred taxa have a status at all: compare the query with all their
            // names (folded in memory), rather than look for corrections word by word.
            let conserved = indexes.filteredSearch.conserved(options.conservation, rank: options.rank, tree: tree)
            if conserved.count <= Self.directlyScoredLimit { return conserved }
        }
        let distinct = query.distinctWords
        let words = Array(distinct.prefix(4))
        var ids: [TaxonID] = []
        if words.count >= 2 && distinct.count <= 3 {
            // One misspelt word of a binomial or trinomial: the others still match exactly.
            for skipped in words.indices {
                let others = words.enumerated().filter { $0.offset != skipped }.map { [$0.element] }
                ids += try match(db, others, prefix: false, options: options, limit: 40, indexes: indexes, run: run)
            }
        }
        if words.count >= 2 {
            // A typo in the epithet after its first letter: the binomial's start is right.
            ids += try scientificPrefix(db, words[0] + " " + words[1].prefix(1), options: options, limit: 40, indexes: indexes)
        }
        if let vocabulary = indexes?.vocabulary {
            // Correct only the words the index does not know (a known word is not the typo).
            var corrections = 0
            for (index, word) in words.enumerated() where word.count >= 3 && corrections < 8 {
                guard try match(db, [[word]], prefix: false, options: SearchOptions(), limit: 1, indexes: indexes,
                                run: run).isEmpty
                else { continue }
                for correction in vocabulary.corrections(of: word, maximumDistance: Self.maximumDistance(word), limit: 4)
                where correction.word != word && corrections < 8 {
                    corrections += 1
                    var replaced = words.map { [$0] }
                    replaced[index] = [correction.word]
                    ids += try match(db, replaced, prefix: false, options: options, limit: 30, indexes: indexes, run: run)
                }
            }
        }
        var seen = Set<TaxonID>()
        return Array(ids.filter { seen.insert($0).inserted }.prefix(Self.candidateCap))
    }

    /// Levenshtein bound of docs/design/queries-and-algorithms.md §7.4: 2 for 5+ characters, else 1.
    static func maximumDistance(_ text: String) -> Int { text.count >= 5 ? 2 : 1 }

    // MARK: Scoring

    private struct Name {
        let text: String
        let words: [String]
        let type: Stol_V1_MatchType
        let inLanguage: Bool
        let preferred: Bool
        /// `fts_taxa` holds it (every name but a trade name).
        var searchable = true
    }

    private func names(_ db: Database, for taxa: [TaxonID: Stol_V1_Taxon], language: String,
                       indexes: MemoryIndexes? = nil) throws -> [TaxonID: [Name]] {
        var result: [TaxonID: [Name]] = [:]
        for (id, taxon) in taxa {
            result[id] = [Name(text: taxon.scientificName, words: SearchQuery.words(in: taxon.scientificName),
                               type: .scientific, inLanguage: true, preferred: true)]
        }
        if let cached = indexes?.filteredSearch.conservedNames, !taxa.isEmpty, taxa.keys.allSatisfy({ cached[$0] != nil }) {
            // Taxa with a status: their names were folded when the indexes were built.
            for id in taxa.keys {
                for name in cached[id] ?? [] {
                    result[id, default: []].append(Name(text: name.text, words: name.words,
                                                        type: name.isSynonym ? .synonym : .common,
                                                        inLanguage: name.language == language, preferred: name.preferred))
                }
            }
            return result
        }
        let ids = Array(taxa.keys)
        for chunk in stride(from: 0, to: ids.count, by: 512) {
            let part = TaxonReader.padded(Array(ids[chunk..<min(chunk + 512, ids.count)]))
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT taxon_id, name, lang, name_type, is_preferred FROM names INDEXED BY idx_names_taxon
                WHERE taxon_id IN (\(TaxonReader.placeholders(part))) ORDER BY id
                """), arguments: StatementArguments(part))
            for row in rows {
                let text: String = row[1]
                let type: String = row[3]
                result[row[0], default: []].append(Name(
                    text: text, words: SearchQuery.words(in: text), type: Self.matchType(nameType: type),
                    inLanguage: (row[2] as String) == language, preferred: (row[4] as Int) != 0,
                    searchable: type != NameType.trade.rawValue))
            }
        }
        return result
    }

    /// The name types that match as a synonym: the other names of a taxon (another
    /// scientific name, an acronym, a group it includes, its name with the
    /// author, a misspelling the source records), not what people call it, so
    /// they get none of a common name's bonus (and never its preference). The
    /// in-memory names of ``FilteredSearchIndex`` are typed with the same list.
    static let synonymNameTypes: [NameType] = [.synonym, .acronym, .includes, .authority, .misspelling]

    /// `synonymNameTypes` as an SQL list: `'synonym','acronym',…`.
    static let synonymNameTypesSQL = synonymNameTypes.map { "'\($0.rawValue)'" }.joined(separator: ",")

    /// How a name of `names.name_type` matches: as a synonym (``synonymNameTypes``)
    /// or as a common name (common, vernacular, trade).
    static func matchType(nameType: String) -> Stol_V1_MatchType {
        NameType(rawValue: nameType).map { synonymNameTypes.contains($0) } == true ? .synonym : .common
    }

    /// The part of ``typeBonus(_:)`` that only says the name is its taxon's preferred
    /// one: not a better match (both names match the query equally), so it orders
    /// after prominence, not before it.
    private static func preferenceBonus(_ name: Name) -> Double {
        name.type == .common && name.preferred ? 0.5 : 0
    }

    private static func typeBonus(_ name: Name) -> Double {
        switch name.type {
        case .scientific: 3
        case .common: name.inLanguage ? (name.preferred ? 2.5 : 2) : (name.preferred ? 1.5 : 1)
        default: 0
        }
    }

    /// The candidates that pass the filters, with only what scoring needs (id,
    /// name, rank, status); full rows are read for the final page only.
    private func fetch(_ db: Database, _ ids: [TaxonID], options: SearchOptions) throws -> ([TaxonID], [TaxonID: Stol_V1_Taxon]) {
        var seen = Set<TaxonID>()
        let unique = ids.filter { seen.insert($0).inserted }
        var taxa: [TaxonID: Stol_V1_Taxon] = [:]
        for chunk in stride(from: 0, to: unique.count, by: 512) {
            let part = TaxonReader.padded(Array(unique[chunk..<min(chunk + 512, unique.count)]))
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT id, scientific_name, \(database.layout.mainRank), conservation FROM taxa
                WHERE id IN (\(TaxonReader.placeholders(part)))
                """), arguments: StatementArguments(part))
            for row in rows {
                var taxon = Stol_V1_Taxon()
                taxon.id = row[0]
                taxon.scientificName = row[1]
                taxon.rank = (row[2] as String?).flatMap(TaxonRank.init(rawValue:)).map { Stol_V1_Rank($0) } ?? .unspecified
                taxon.conservation = row[3] ?? ""
                taxa[taxon.id] = taxon
            }
        }
        taxa = taxa.filter { _, taxon in
            (options.rank == nil || Stol_V1_Rank(options.rank!) == taxon.rank)
                && (options.conservation.isEmpty || options.conservation.contains(taxon.conservation))
        }
        return (unique.filter { taxa[$0] != nil }, taxa)
    }

    /// - Parameter acrossNamesInMemory: the candidates did not come from FTS5 (the
    ///   nodes of a small `within` taxon): one that no single name matches is a hit
    ///   across its names when its names' words hold every word, as FTS5's row does.
    private func score(_ db: Database, _ ids: [TaxonID], query: SearchQuery, options: SearchOptions,
                       verified: Set<TaxonID>, preferred: inout Set<TaxonID>,
                       acrossNamesInMemory: Bool = false) throws -> [Stol_V1_SearchHit] {
        let (order, taxa) = try fetch(db, ids, options: options)
        let names = try names(db, for: taxa, language: options.language)
        let text = query.text, compact = query.words.joined()
        let plurals = !query.prefix && Self.pluralsApply(to: options.language)
        var hits: [Stol_V1_SearchHit] = []
        for id in order {
            var best: (Double, Name)?
            for name in names[id] ?? [] {
                let joined = name.words.joined(separator: " ")
                let quality: Double
                if query.matches(words: name.words) {
                    if joined == text {
                        quality = Quality.exact
                    } else if name.type == .common && name.inLanguage && !query.prefix && name.words.count > query.words.count
                                && name.words.suffix(query.words.count).elementsEqual(query.words) {
                        // "house mouse" for "mouse": in an English common name the last word
                        // is what the thing is (a mouse), the others say which; "mouse
                        // lemurs" and "guinea pig lice" are other things.
                        quality = Quality.kind
                    } else {
                        quality = joined.hasPrefix(text) ? Quality.startsWith : Quality.allWords
                    }
                } else if plurals && name.type == .common && name.inLanguage && query.isPlural(of: name.words) {
                    // "oaks" for "oak": an English common name in the plural names the
                    // group of the things typed; it ranks with the kinds of them, where
                    // the group, which holds them, is usually the more prominent.
                    quality = Quality.kind
                } else if !query.prefix && name.words.count > 1 && name.words.joined() == compact {
                    // "honeybee" for "honey bee": the same letters, spaced otherwise.
                    quality = Quality.exact
                } else if name.type == .scientific && query.isAbbreviation(of: name.words) {
                    // "C. elegans" for Caenorhabditis elegans: below the exact name, above a partial one.
                    quality = Quality.abbreviation
                } else if name.type == .scientific && query.abbreviates(partOf: name.words) {
                    // "E. coli MG1655" for Escherichia coli str. K-12 substr. MG1655: a partial match.
                    quality = Quality.allWords
                } else {
                    continue
                }
                let score = quality + Self.typeBonus(name) + 5 / Double(max(name.words.count, 1))
                if best == nil || score > best!.0 { best = (score, name) }
            }
            var hit = Stol_V1_SearchHit()
            hit.taxon = taxa[id]!
            if let (score, name) = best {
                hit.score = score
                hit.matchedName = name.text
                hit.matchType = name.type
                if Self.preferenceBonus(name) > 0 { preferred.insert(id) }
            } else {
                // Words matched across different names (e.g. genus and a common name).
                guard verified.contains(id) || acrossNamesInMemory && Self.matchesAcross(names[id] ?? [], query) else { continue }
                hit.score = Quality.acrossNames
                hit.matchedName = hit.taxon.scientificName
                hit.matchType = .scientific
            }
            hits.append(hit)
        }
        return hits
    }

    /// Whether the words of a taxon's searchable names hold every word of the query,
    /// as its row of `fts_taxa` would match them: plain words only (a phrase lies within
    /// one name), never in autocomplete (``Quality/acrossNames``).
    private static func matchesAcross(_ names: [Name], _ query: SearchQuery) -> Bool {
        guard !query.prefix, query.matchGroups.allSatisfy({ $0.count == 1 }) else { return false }
        let words = Set(names.filter(\.searchable).flatMap(\.words))
        return query.matchGroups.allSatisfy { words.contains($0[0]) }
    }

    private func scoreFuzzy(_ db: Database, _ ids: [TaxonID], query: SearchQuery,
                            options: SearchOptions) throws -> [Stol_V1_SearchHit] {
        let (order, taxa) = try fetch(db, ids, options: options)
        let names = try names(db, for: taxa, language: options.language, indexes: database.memoryIndexes)
        let text = query.text
        let maximum = Self.maximumDistance(text)
        var hits: [Stol_V1_SearchHit] = []
        for id in order {
            var best: (Double, Int, Name)?
            for name in names[id] ?? [] {
                // Lengths further apart than the bound cannot be within it: most names
                // are skipped without computing a distance.
                func within(_ other: String) -> Int {
                    abs(other.utf8.count - text.utf8.count) > maximum ? maximum + 1 : Levenshtein.distance(text, other)
                }
                var distance = within(name.words.joined(separator: " "))
                if query.words.count == 1 {
                    // One word may be one word of a longer name ("tigr" → "Bengal tiger").
                    for word in name.words { distance = min(distance, within(word)) }
                }
                guard distance <= maximum else { continue }
                let score = 20 - 5 * Double(distance) + Self.typeBonus(name) + 5 / Double(max(name.words.count, 1))
                if best == nil || score > best!.0 { best = (score, distance, name) }
            }
            guard let (score, distance, name) = best else { continue }
            var hit = Stol_V1_SearchHit()
            hit.taxon = taxa[id]!
            hit.score = score
            hit.matchedName = name.text
            hit.matchType = name.type
            hit.fuzzy = true
            hit.editDistance = UInt32(distance)
            hits.append(hit)
        }
        return hits
    }
}
