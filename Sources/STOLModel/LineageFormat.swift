/// A lineage written in a template of rank placeholders, as taxonkit's
/// `reformat -f "{k};{p};{c};{o};{f};{g};{s}"` writes it, so that pipelines built
/// around taxonkit's columns take `stol-client lineage --format` unchanged.
///
/// Placeholders: `{k}` superkingdom (or domain), `{K}` kingdom, `{p}` phylum,
/// `{c}` class, `{o}` order, `{f}` family, `{g}` genus, `{s}` species, `{S}`
/// subspecies, `{t}` strain, `{r}` realm; a rank the lineage lacks gives an empty
/// field. Anything else in the template is copied as it is.
public struct LineageFormat: Sendable, Equatable {
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case unknownPlaceholder(String)
        case unclosedBrace

        public var description: String {
            switch self {
            case .unknownPlaceholder(let name):
                "unknown placeholder {\(name)}; use {k} {K} {p} {c} {o} {f} {g} {s} {S} {t} {r}"
            case .unclosedBrace: "a '{' without its '}'"
            }
        }
    }

    /// The ranks each placeholder stands for (the source's spellings, and the main ranks' names).
    public static let placeholders: [Character: Set<String>] = [
        "k": ["superkingdom", "domain"], "K": ["kingdom"], "p": ["phylum", "division"], "c": ["class"],
        "o": ["order"], "f": ["family"], "g": ["genus"], "s": ["species"], "S": ["subspecies"],
        "t": ["strain"], "r": ["realm"],
    ]

    enum Piece: Equatable, Sendable {
        case text(String)
        case rank(Character)
    }

    let pieces: [Piece]

    public init(_ template: String) throws(ParseError) {
        var pieces: [Piece] = []
        var text = ""
        var iterator = Array(template)[...]
        while let character = iterator.popFirst() {
            guard character == "{" else { text.append(character); continue }
            guard let close = iterator.firstIndex(of: "}") else { throw .unclosedBrace }
            let name = String(iterator[iterator.startIndex..<close])
            guard name.count == 1, let key = name.first, Self.placeholders[key] != nil else { throw .unknownPlaceholder(name) }
            if !text.isEmpty { pieces.append(.text(text)); text = "" }
            pieces.append(.rank(key))
            iterator = iterator[(close + 1)...]
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        self.pieces = pieces
    }

    /// The template filled from a lineage given as (rank, name) pairs, root first;
    /// for a rank that occurs twice the lowest one counts.
    public func format(_ lineage: [(rank: String, name: String)]) -> String {
        var byRank: [String: String] = [:]
        for (rank, name) in lineage { byRank[rank] = name }
        return pieces.map { piece in
            switch piece {
            case .text(let text): text
            case .rank(let key): Self.placeholders[key]!.lazy.compactMap { byRank[$0] }.first ?? ""
            }
        }.joined()
    }
}
