import Foundation
import Glibc
import STOLClientKit
import STOLProtocol

/// Turns what the user typed after `fav add/remove/toggle/is` into one taxon id.
///
/// Digits are an id and are used as they are, without asking the taxonomy
/// server: a favourite may name a taxon of another database (docs/design/favourites.md §11), and
/// the favourites daemon is the one that checks the range. Anything else is a name,
/// resolved with the taxonomy server's ordinary `search` (scientific, common and
/// synonym names), so the client keeps no name data and no business rules of its own.
///
/// A name picks a taxon when exactly one taxon carries it exactly (after folding
/// case and diacritics), or when exactly one taxon has a name with all its words.
/// Several such taxa are ambiguous: on a terminal the user chooses from a numbered
/// list; in a script the command fails with exit 6 and lists the candidates,
/// because guessing would silently save the wrong species. Approximate hits (a
/// misspelling completed by a fuzzy search) are never taken on their own: they are
/// offered on a terminal, and named as suggestions in the "not found" error (exit 3).
struct FavoriteTaxonResolver {
    /// How a name came to one taxon: the id, and the taxon when the server knows it.
    struct Resolved {
        let taxonID: Int64
        let taxon: Stol_V1_Taxon?
    }

    /// Candidates shown or listed for an ambiguous name; more are summarised.
    static let maximumCandidates = 10
    /// Hits asked from the server: enough that an exact name is among them even
    /// when a common word matches many taxa.
    static let searchLimit: UInt32 = 50

    let global: GlobalOptions
    let language: String
    let rank: Stol_V1_Rank?

    /// The id the words stand for (one or more words form one name).
    func resolve(_ words: [String]) throws(ClientError) -> Resolved {
        let text = words.joined(separator: " ").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw .usage("name a taxon by id (e.g. 9689) or by name (e.g. \"Panthera leo\" or lion)") }
        if let id = Int64(text) {
            return Resolved(taxonID: id, taxon: nil)
        }
        if text.allSatisfy({ $0.isNumber || $0 == "-" || $0 == "+" }) {
            // Digits that do not fit an Int64: send them on, typed, as the daemon would refuse them.
            throw .server(ProtocolError(.invalidRequest, "taxon id \(text) is out of range (1...\(1 << 53))"))
        }
        let wanted = Self.words(text)
        // Exact words first; then the last word as a prefix ("panthera le").
        var suggestions: [Stol_V1_SearchHit] = []
        for prefix in [false, true] {
            let hits = try search(text, prefix: prefix)
            let exact = hits.filter { hit in Self.names(of: hit).contains { Self.words($0) == wanted } }
            if exact.count == 1 { return Resolved(taxonID: exact[0].taxon.id, taxon: exact[0].taxon) }
            if exact.count > 1 { return try choose(among: exact.map(\.taxon), for: text) }
            // Hits that really carry every word. Others are approximate (a server may
            // complete few results with fuzzy matches): never picked without asking.
            let genuine = hits.filter { hit in Self.names(of: hit).contains { Self.contains(wanted, in: $0, prefix: prefix) } }
            if genuine.count == 1 { return Resolved(taxonID: genuine[0].taxon.id, taxon: genuine[0].taxon) }
            if genuine.count > 1 { return try choose(among: genuine.map(\.taxon), for: text) }
            suggestions += hits.filter { hit in !suggestions.contains { $0.taxon.id == hit.taxon.id } }
        }
        let notFound = "no taxon is named “\(text)” in the active database"
        guard !suggestions.isEmpty, isatty(STDIN_FILENO) == 1 else {
            let hint = suggestions.isEmpty ? "" : "; did you mean: " +
                suggestions.prefix(5).map { "\($0.taxon.scientificName) (\($0.taxon.id))" }.joined(separator: ", ")
            throw .server(ProtocolError(.notFound, "\(notFound)\(hint.isEmpty ? "." : hint + "?") " +
                                        "Try `stol-client search \(text)` or name it by id.",
                                        details: suggestions.isEmpty ? [:] : ["suggestions": suggestions.prefix(5)
                                            .map { String($0.taxon.id) }.joined(separator: ",")]))
        }
        return try choose(among: suggestions.map(\.taxon), for: text, heading: "\(notFound). Did you mean")
    }

    /// The names a hit can be recognised by.
    private static func names(of hit: Stol_V1_SearchHit) -> [String] {
        [hit.taxon.scientificName, hit.taxon.commonName, hit.matchedName].filter { !$0.isEmpty }
    }

    /// Whether `name` has every wanted word (the last one as a prefix when `prefix`).
    private static func contains(_ wanted: [String], in name: String, prefix: Bool) -> Bool {
        let have = words(name)
        return wanted.enumerated().allSatisfy { index, word in
            prefix && index == wanted.count - 1 ? have.contains { $0.hasPrefix(word) } : have.contains(word)
        }
    }

    private func search(_ text: String, prefix: Bool) throws(ClientError) -> [Stol_V1_SearchHit] {
        var search = Stol_V1_SearchRequest()
        search.query = text
        search.prefix = prefix
        search.limit = Self.searchLimit
        search.language = language
        if let rank { search.rank = rank }
        var request = Stol_V1_TaxonomyRequest()
        request.search = search
        let response = try global.taxonomy().call(request)
        guard case .search(let result) = response.result else { throw .local("unexpected answer from the taxonomy service") }
        // One hit per taxon (a taxon can match through several of its names).
        var seen = Set<Int64>()
        return result.hits.filter { seen.insert($0.taxon.id).inserted }
    }

    /// Asks on a terminal; otherwise fails with the candidates, typed as INVALID_REQUEST (exit 6).
    private func choose(among taxa: [Stol_V1_Taxon], for text: String,
                        heading: String? = nil) throws(ClientError) -> Resolved {
        let shown = Array(taxa.prefix(Self.maximumCandidates))
        let more = taxa.count > shown.count ? "\n  …" : ""
        guard isatty(STDIN_FILENO) == 1 else {
            let list = shown.map { "  \(FavoriteText.describe($0))" }.joined(separator: "\n")
            let howMany = taxa.count > shown.count ? "more than \(shown.count)" : "\(taxa.count)"
            throw .server(ProtocolError(
                .invalidRequest,
                "“\(text)” is ambiguous: it names \(howMany) taxa:\n\(list)\(more)\n" +
                    "Name one by id, or narrow it with --rank or more words; nothing was changed.",
                details: ["candidates": shown.map { String($0.id) }.joined(separator: ",")]))
        }
        var prompt = "\(heading ?? "“\(text)” names several taxa"):\n"
        for (index, taxon) in shown.enumerated() { prompt += "  \(index + 1)) \(FavoriteText.describe(taxon))\n" }
        if !more.isEmpty { prompt += "  … more: cancel and narrow it with --rank or more words\n" }
        prompt += "Which one? [1-\(shown.count), Enter to cancel]: "
        FileHandle.standardError.write(Data(prompt.utf8))
        guard let answer = terminalLine()?.trimmingCharacters(in: .whitespaces), let choice = Int(answer),
              shown.indices.contains(choice - 1) else {
            throw .usage("cancelled; nothing was changed")
        }
        return Resolved(taxonID: shown[choice - 1].id, taxon: shown[choice - 1])
    }

    /// The words of a name as the search server folds them: case, diacritics and
    /// punctuation do not make two names different.
    static func words(_ name: String) -> [String] {
        name.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            .split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }
}
