import Foundation
import Glibc
import STOLClientKit
import STOLModel
import STOLProtocol

/// Turns what the user typed after `fav add/remove/toggle/is` into one taxon id.
///
/// The taxonomy server decides what a name stands for (`resolve_name`, PROTOCOL.md
/// §4.2: ``NameResolver`` there), so that every client (this one, the Python package,
/// a web app) picks the same taxon; this type only words its answer. One taxon is the
/// answer; several are ambiguous: on a terminal the user chooses from a numbered list,
/// in a script the command fails with exit 6 and lists the candidates, because
/// guessing would silently save the wrong species. A name not found names the
/// server's suggestions (approximate matches): offered on a terminal, listed in the
/// "not found" error (exit 3) otherwise.
///
/// Digits that fit an id are the id as typed, without asking the taxonomy server (the
/// server answers them so too): a favourite may name a taxon of another database
/// (docs/design/favourites.md §11), the favourites daemon checks the range, and a
/// stopped taxonomy service must not stop a favourite named by id from being saved.
struct FavoriteTaxonResolver {
    /// How a name came to one taxon: the id, and the taxon when the server knows it.
    struct Resolved {
        let taxonID: Int64
        let taxon: Stol_V1_Taxon?
    }

    let global: GlobalOptions
    let language: String
    let rank: Stol_V1_Rank?

    /// The id the words stand for (one or more words form one name).
    func resolve(_ words: [String]) throws(ClientError) -> Resolved {
        let text = words.joined(separator: " ").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw .usage("name a taxon by id (e.g. 9689) or by name (e.g. \"Panthera leo\" or lion)") }
        if let id = TaxonIDText.id(text) {
            return Resolved(taxonID: id, taxon: nil)
        }
        let answer = try global.taxonomy().ask(.with {
            $0.resolveName = .with {
                $0.text = text
                $0.language = language
                if let rank { $0.rank = rank }
            }
        }, as: Stol_V1_ResolveNameResponse.self)
        switch answer.resolution {
        case .one:
            return Resolved(taxonID: answer.taxonID, taxon: answer.hasTaxon ? answer.taxon : nil)
        case .ambiguous:
            return try choose(among: answer.candidates, total: Int(answer.totalCandidates), for: text)
        case .notFound:
            let suggestions = answer.candidates
            let notFound = "no taxon is named “\(text)” in the active database"
            guard !suggestions.isEmpty, isatty(STDIN_FILENO) == 1 else {
                let hint = suggestions.isEmpty ? "" : "; did you mean: " +
                    suggestions.prefix(5).map { "\($0.scientificName) (\($0.id))" }.joined(separator: ", ")
                throw .server(ProtocolError(.notFound, "\(notFound)\(hint.isEmpty ? "." : hint + "?") " +
                                            "Try `stol-client search \(text)` or name it by id.",
                                            details: suggestions.isEmpty ? [:] : ["suggestions": suggestions.prefix(5)
                                                .map { String($0.id) }.joined(separator: ",")]))
            }
            return try choose(among: suggestions, total: Int(answer.totalCandidates), for: text,
                              heading: "\(notFound). Did you mean")
        default:
            throw .local("the taxonomy service answered resolve_name with resolution \(answer.resolution.rawValue), "
                         + "which this client does not know")
        }
    }

    /// Asks on a terminal; otherwise fails with the candidates, typed as INVALID_REQUEST (exit 6).
    private func choose(among taxa: [Stol_V1_Taxon], total: Int, for text: String,
                        heading: String? = nil) throws(ClientError) -> Resolved {
        let shown = taxa
        let more = total > shown.count ? "\n  …" : ""
        guard isatty(STDIN_FILENO) == 1 else {
            let list = shown.map { "  \(FavoriteText.describe($0))" }.joined(separator: "\n")
            let howMany = total > shown.count ? "more than \(shown.count)" : "\(shown.count)"
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
}
