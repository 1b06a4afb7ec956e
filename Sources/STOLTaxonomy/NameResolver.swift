import Foundation
import STOLModel
import STOLProtocol

/// What a person typed to name one taxon (`resolve_name`: `stol-client fav add lion`,
/// a web app's search box) turned into one taxon, the candidates to choose from, or
/// suggestions (docs/design/favourites.md §11).
///
/// - Digits are an id, used as they are without looking them up: a favourite may name
///   a taxon of another database, and the favourites daemon checks the range. The
///   taxon comes along when this database has it.
/// - A name picks a taxon when exactly one search hit carries it exactly (its
///   scientific name, its common name or the name it matched by, words folded as
///   search folds them: case, diacritics, punctuation), or else when exactly one hit
///   has a name with all its words. Several such hits are ambiguous: the candidates,
///   never a silent pick, since guessing would save the wrong species. A hit named
///   by the name in the English plural is such a hit too ("oaks", the genus, for
///   "oak"), never an exact one. Words first,
///   then the last word as a prefix ("panthera le").
/// - Approximate hits (a misspelling completed by the fuzzy search) are never taken on
///   their own: they are the suggestions of a name not found.
struct NameResolver {
    /// Candidates (or suggestions) listed; `total_candidates` says how many there were.
    static let maximumCandidates = 10
    /// Hits asked from search: enough that an exact name is among them even when a
    /// common word matches many taxa.
    static let searchLimit = 50

    let database: TaxonomyDatabase

    func resolve(_ request: Stol_V1_ResolveNameRequest, language: String) throws(TaxonomyError) -> Stol_V1_ResolveNameResponse {
        guard request.text.utf8.count <= ProtocolLimits.maximumQueryBytes else {
            throw .invalidArgument("text longer than \(ProtocolLimits.maximumQueryBytes) bytes")
        }
        let text = request.text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else {
            throw .invalidArgument("name a taxon by id (e.g. 9689) or by name (e.g. \"Panthera leo\" or lion)")
        }
        if let id = TaxonIDText.id(text) { return idAsTyped(id, language: language) }
        if text.allSatisfy({ $0.isNumber || $0 == "-" || $0 == "+" }) {
            throw .invalidArgument("taxon id \(text.prefix(40)) is out of range (1...\(Int64(1) << 53))")
        }
        var rank: TaxonRank?
        if request.rank != .unspecified {
            guard let known = TaxonRank(request.rank) else {
                throw .invalidArgument("unknown rank \(request.rank.rawValue)")
            }
            rank = known
        }
        let wanted = SearchQuery.words(in: text)
        var suggestions: [Stol_V1_SearchHit] = []
        for prefix in [false, true] {
            let query = SearchQuery(text: text, prefix: prefix)
            guard !query.isEmpty else { throw .invalidArgument("the text has no letters or digits to search for") }
            let options = SearchOptions(rank: rank, limit: Self.searchLimit, language: language)
            // One hit per taxon (a taxon can match through several of its names).
            var seen = Set<TaxonID>()
            let hits = try SearchEngine(database: database).search(query, options: options).filter { seen.insert($0.taxon.id).inserted }
            let exact = hits.filter { hit in Self.names(of: hit).contains { SearchQuery.words(in: $0) == wanted } }
            if !exact.isEmpty { return Self.answer(exact) }
            // Hits that really carry every word, or (in English) the name in the plural, as a group
            // is named after its members ("oaks" for "oak": Quercus among the kinds of oak, in
            // search's order, issue 34); the others are approximate.
            let plurals = !prefix && SearchEngine.pluralsApply(to: language)
            let genuine = hits.filter { hit in
                Self.names(of: hit).contains { name in
                    Self.contains(wanted, in: name, prefix: prefix) || (plurals && query.isPlural(of: SearchQuery.words(in: name)))
                }
            }
            if !genuine.isEmpty { return Self.answer(genuine) }
            suggestions += hits.filter { hit in !suggestions.contains { $0.taxon.id == hit.taxon.id } }
        }
        var response = Stol_V1_ResolveNameResponse()
        response.resolution = .notFound
        response.candidates = Array(suggestions.prefix(Self.maximumCandidates).map(\.taxon))
        response.totalCandidates = UInt32(suggestions.count)
        return response
    }

    /// Digits: the id as typed, with its taxon when this database holds it.
    private func idAsTyped(_ id: TaxonID, language: String) -> Stol_V1_ResolveNameResponse {
        var response = Stol_V1_ResolveNameResponse()
        response.resolution = .one
        response.taxonID = id
        if id > 0, let taxon = try? LookupQueries(database: database).taxon(id: id, language: language) { response.taxon = taxon }
        return response
    }

    /// One hit is the taxon; several are the candidates.
    private static func answer(_ hits: [Stol_V1_SearchHit]) -> Stol_V1_ResolveNameResponse {
        var response = Stol_V1_ResolveNameResponse()
        if hits.count == 1 {
            response.resolution = .one
            response.taxonID = hits[0].taxon.id
            response.taxon = hits[0].taxon
        } else {
            response.resolution = .ambiguous
            response.candidates = Array(hits.prefix(maximumCandidates).map(\.taxon))
            response.totalCandidates = UInt32(hits.count)
        }
        return response
    }

    /// The names a hit can be recognised by.
    private static func names(of hit: Stol_V1_SearchHit) -> [String] {
        [hit.taxon.scientificName, hit.taxon.commonName, hit.matchedName].filter { !$0.isEmpty }
    }

    /// Whether `name` has every wanted word (the last one as a prefix when `prefix`).
    private static func contains(_ wanted: [String], in name: String, prefix: Bool) -> Bool {
        let have = SearchQuery.words(in: name)
        return wanted.enumerated().allSatisfy { index, word in
            prefix && index == wanted.count - 1 ? have.contains { $0.hasPrefix(word) } : have.contains(word)
        }
    }
}
