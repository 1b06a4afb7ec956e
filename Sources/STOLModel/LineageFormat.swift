/// A lineage written in a template of rank placeholders, as taxonkit's
/// `reformat -f "{k};{p};{c};{o};{f};{g};{s}"` writes it, so that pipelines built
/// around taxonkit's columns take `stol-client lineage --format` unchanged.
///
/// Placeholders: `{k}` domain (NCBI's spellings before and after 2025: superkingdom,
/// domain, and `acellular root`, the rank of Viruses since 2025), `{K}` kingdom,
/// `{p}` phylum, `{c}` class, `{o}` order, `{f}` family, `{g}` genus, `{s}` species,
/// `{S}` subspecies, `{t}` strain, `{r}` realm; or the rank's name instead of its
/// letter (`{domain}`, `{superkingdom}` and `{d}` are `{k}`, `{phylum}` is `{p}`, …).
/// Anything else in the template is copied as it is.
///
/// A rank the lineage lacks gives an empty field, or with ``fillMissing`` the fill
/// template's text (taxonkit's `--fill-miss-rank`: `unclassified Felidae genus`).
/// With ``prefixRanks`` every non-empty field starts with its rank's prefix as
/// MetaPhlAn and QIIME write them (`d__`, `k__`, `p__`, …).
public struct LineageFormat: Sendable, Equatable {
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case unknownPlaceholder(String)
        case unclosedBrace
        case unknownFillVariable(String)

        public var description: String {
            switch self {
            case .unknownPlaceholder(let name):
                "unknown placeholder {\(name)}; use {k} {K} {p} {c} {o} {f} {g} {s} {S} {t} {r} (or the rank's name: {domain}, {genus}, …)"
            case .unclosedBrace: "a '{' without its '}'"
            case .unknownFillVariable(let name): "unknown variable {\(name)} in the fill template; use {higher} {higher_rank} {rank}"
            }
        }
    }

    /// A placeholder of the template: one of the ranks a lineage is written in.
    public struct Placeholder: Sendable, Equatable {
        /// The letter taxonkit gives it (`k`, `K`, `p`, …).
        public let letter: Character
        /// The rank's name, as the fill's `{rank}` writes it.
        public let name: String
        /// The ranks, as the sources spell them, that fill it (old and new spellings alike).
        public let ranks: [String]
        /// The prefix of `--prefix-ranks`.
        public let prefix: String
        /// How deep the rank is: a missing rank's `{higher}` is the nearest filled placeholder of a smaller level.
        public let level: Int
        /// Other names that stand for it in a template.
        public let aliases: [String]
    }

    /// Every placeholder, from the top of the tree down. The domain is `k` (taxonkit's
    /// superkingdom) and prefixed `d__` as GTDB and QIIME write it; the kingdom is `K`
    /// and `k__`. Realm is the top of virus taxonomy, at the domain's level. The main
    /// ranks' placeholders take every spelling of their rank (``RankOrder/mainRankSpellings``).
    public static let all: [Placeholder] = [
        .init(letter: "k", name: "domain", ranks: RankOrder.spellings(of: .domain), prefix: "d__", level: 0,
              aliases: ["d", "domain", "superkingdom"]),
        .init(letter: "r", name: "realm", ranks: ["realm"], prefix: "r__", level: 0, aliases: ["realm"]),
        .init(letter: "K", name: "kingdom", ranks: RankOrder.spellings(of: .kingdom), prefix: "k__", level: 1, aliases: ["kingdom"]),
        .init(letter: "p", name: "phylum", ranks: RankOrder.spellings(of: .phylum), prefix: "p__", level: 2, aliases: ["phylum", "division"]),
        .init(letter: "c", name: "class", ranks: RankOrder.spellings(of: .class), prefix: "c__", level: 3, aliases: ["class"]),
        .init(letter: "o", name: "order", ranks: RankOrder.spellings(of: .order), prefix: "o__", level: 4, aliases: ["order"]),
        .init(letter: "f", name: "family", ranks: RankOrder.spellings(of: .family), prefix: "f__", level: 5, aliases: ["family"]),
        .init(letter: "g", name: "genus", ranks: RankOrder.spellings(of: .genus), prefix: "g__", level: 6, aliases: ["genus"]),
        .init(letter: "s", name: "species", ranks: RankOrder.spellings(of: .species), prefix: "s__", level: 7, aliases: ["species"]),
        .init(letter: "S", name: "subspecies", ranks: ["subspecies"], prefix: "t__", level: 8, aliases: ["subspecies"]),
        .init(letter: "t", name: "strain", ranks: ["strain"], prefix: "T__", level: 9, aliases: ["strain"]),
    ]

    /// The ranks each placeholder stands for (the source's spellings, and the main ranks' names).
    public static let placeholders: [Character: [String]] = Dictionary(uniqueKeysWithValues: all.map { ($0.letter, $0.ranks) })

    /// Every rank spelling a placeholder takes, each with its placeholder's position in ``all``.
    public static let rankSlots: [(rank: String, slot: Int)] = all.enumerated().flatMap { slot, placeholder in
        placeholder.ranks.map { ($0, slot) }
    }
    private static let slotOfRank: [String: Int] = Dictionary(rankSlots.map { ($0.rank, $0.slot) }, uniquingKeysWith: { a, _ in a })
    private static let slotOfName: [String: Int] = {
        var names: [String: Int] = [:]
        for (slot, placeholder) in all.enumerated() {
            names[String(placeholder.letter)] = slot
            for alias in placeholder.aliases { names[alias] = slot }
        }
        return names
    }()

    /// The placeholder a source's rank fills, as its position in ``all`` (nil for any other rank).
    public static func slot(ofRank rank: String) -> Int? { slotOfRank[rank] }

    /// The default text of a missing rank with `--fill-missing`, as taxonkit's `-F` writes it.
    public static let defaultFill = "unclassified {higher} {rank}"

    enum Piece: Equatable, Sendable {
        case text(String)
        case rank(Int)
    }

    enum FillPiece: Equatable, Sendable {
        case text(String)
        case higher, higherRank, rank
    }

    let pieces: [Piece]
    /// The fill template of a missing rank, nil to leave it empty.
    let fill: [FillPiece]?
    public let prefixRanks: Bool

    /// - Parameters:
    ///   - fillMissing: the text of a rank the lineage lacks (e.g. ``defaultFill``): `{higher}` the
    ///     name of the nearest rank above it that the lineage has, `{higher_rank}` that rank's name,
    ///     `{rank}` the missing rank's name. A fill naming `{higher}` or `{higher_rank}` leaves the
    ///     field empty when no rank above is there (the top of a lineage, an unclassified line).
    ///   - prefixRanks: every non-empty field starts with its placeholder's prefix (`d__`, `k__`, `p__`, …).
    public init(_ template: String, fillMissing: String? = nil, prefixRanks: Bool = false) throws(ParseError) {
        let pieces = try Self.split(template).map { (part) throws(ParseError) -> Piece in
            switch part {
            case .text(let text): return .text(text)
            case .name(let name):
                guard let slot = Self.slotOfName[name] else { throw .unknownPlaceholder(name) }
                return .rank(slot)
            }
        }
        self.pieces = pieces
        self.fill = try fillMissing.map(Self.parseFill)
        self.prefixRanks = prefixRanks
    }

    private static func parseFill(_ template: String) throws(ParseError) -> [FillPiece] {
        try split(template).map { (part) throws(ParseError) -> FillPiece in
            switch part {
            case .text(let text): return .text(text)
            case .name("higher"): return .higher
            case .name("higher_rank"): return .higherRank
            case .name("rank"): return .rank
            case .name(let name): throw .unknownFillVariable(name)
            }
        }
    }

    /// A template's literal text and `{name}`s, in order (the one scanner of both templates).
    private enum Part {
        case text(String)
        case name(String)
    }

    private static func split(_ template: String) throws(ParseError) -> [Part] {
        var parts: [Part] = []
        var text = ""
        var iterator = Array(template)[...]
        while let character = iterator.popFirst() {
            guard character == "{" else { text.append(character); continue }
            guard let close = iterator.firstIndex(of: "}") else { throw .unclosedBrace }
            if !text.isEmpty { parts.append(.text(text)); text = "" }
            parts.append(.name(String(iterator[iterator.startIndex..<close])))
            iterator = iterator[(close + 1)...]
        }
        if !text.isEmpty { parts.append(.text(text)) }
        return parts
    }

    /// Whether a missing rank is filled (``init(_:fillMissing:prefixRanks:)``).
    public var fillsMissing: Bool { fill != nil }

    /// The template filled from a lineage given as (rank, name) pairs, root first;
    /// for a rank that occurs twice the lowest one counts.
    public func format(_ lineage: [(rank: String, name: String)]) -> String {
        var names = [String?](repeating: nil, count: Self.all.count)
        for (rank, name) in lineage {
            if let slot = Self.slotOfRank[rank] { names[slot] = name }
        }
        return format(names: names)
    }

    /// The template filled from the name of each placeholder (indexed as ``all``; nil
    /// where the lineage has none): what ``format(_:)`` gives once the lineage is sorted
    /// into placeholders (``slot(ofRank:)``).
    public func format(names: [String?]) -> String {
        var out = ""
        for piece in pieces {
            switch piece {
            case .text(let text): out += text
            case .rank(let slot):
                guard let value = names[slot] ?? filled(slot, names), !value.isEmpty else { continue }
                if prefixRanks { out += Self.all[slot].prefix }
                out += value
            }
        }
        return out
    }

    /// The fill of the missing placeholder `slot`, or nil (no fill, or none above it when the fill names it).
    private func filled(_ slot: Int, _ names: [String?]) -> String? {
        guard let fill else { return nil }
        let level = Self.all[slot].level
        var higher: (name: String, rank: String, level: Int)?
        for (other, placeholder) in Self.all.enumerated() where placeholder.level < level {
            guard let name = names[other], !name.isEmpty else { continue }
            if placeholder.level > higher?.level ?? -1 { higher = (name, placeholder.name, placeholder.level) }
        }
        var out = ""
        for piece in fill {
            switch piece {
            case .text(let text): out += text
            case .rank: out += Self.all[slot].name
            case .higher, .higherRank:
                guard let higher else { return nil }
                out += piece == .higher ? higher.name : higher.rank
            }
        }
        return out
    }
}
