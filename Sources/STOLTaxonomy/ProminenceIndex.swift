import GRDB
import STOLModel

/// Each taxon's prominence (schema 2 `prominence`, computed by the pipeline: how
/// much of the tree and how many named taxa lie under it, and whether it is
/// curated), which search uses after match quality; and the prominent taxa's
/// scientific names in folded order, so that a prefix reaches the taxa most users
/// mean although hundreds of names start with it ("panth": Panthalis, Panthauma,
/// Panthea … before Panthera in name order).
public struct ProminenceIndex: Sendable {
    private let scores: [TaxonID: Float]
    /// (folded scientific name, taxon) of the taxa with a prominence, sorted by name.
    private let names: [(name: String, id: TaxonID)]

    public static let empty = ProminenceIndex(scores: [:], names: [])

    /// For every prefix of one or two characters, its most prominent taxa: such a
    /// prefix spans tens of thousands of names ("p"), too many to rank per keystroke
    /// (the 1–2 character autocomplete p99 went from 3.5 to 6.4 ms).
    private let shortPrefixes: [String: [TaxonID]]
    static let shortPrefixKept = 50

    /// - Parameter names: (folded scientific name, taxon), in any order: sorted here
    ///   by the names' bytes (then id), so that every prefix is one range of them.
    init(scores: [TaxonID: Float], names unsorted: [(name: String, id: TaxonID)]) {
        self.scores = scores
        let names = unsorted.sorted { a, b in
            a.name == b.name ? a.id < b.id : a.name.utf8.lexicographicallyPrecedes(b.name.utf8)
        }
        self.names = names
        // The prefixes of one or two characters, range by range of the sorted names.
        var shortPrefixes: [String: [TaxonID]] = [:]
        func keep(_ prefix: String, _ range: Range<Int>) {
            guard !range.isEmpty else { return }
            var ranked: [(id: TaxonID, score: Float)] = names[range].map { (id: $0.id, score: scores[$0.id] ?? 0) }
            ranked.sort { $0.score != $1.score ? $0.score > $1.score : $0.id < $1.id }
            shortPrefixes[prefix] = ranked.prefix(Self.shortPrefixKept).map { $0.id }
        }
        var start = [Int](repeating: 0, count: 3)  // where the current 1- and 2-character prefixes began
        var current = ["", "", ""]
        for (index, entry) in names.enumerated() {
            for length in 1...2 {
                var prefix = String(entry.name.prefix(length))
                if prefix.count < length { prefix = "" }
                if prefix != current[length] {
                    if !current[length].isEmpty { keep(current[length], start[length]..<index) }
                    current[length] = prefix
                    start[length] = index
                }
            }
        }
        for length in 1...2 where !current[length].isEmpty { keep(current[length], start[length]..<names.count) }
        self.shortPrefixes = shortPrefixes
    }

    /// 0 for a taxon without one (most species).
    public func score(of id: TaxonID) -> Float { scores[id] ?? 0 }

    public var count: Int { scores.count }

    /// The `limit` most prominent taxa whose folded scientific name starts with
    /// `prefix` (folded words joined by spaces, as ``SearchQuery/text``).
    public func prominent(withNamePrefix prefix: String, limit: Int) -> [TaxonID] {
        guard !prefix.isEmpty, limit > 0 else { return [] }
        if prefix.count <= 2 { return Array((shortPrefixes[prefix] ?? []).prefix(limit)) }
        var low = 0, high = names.count
        while low < high {
            let middle = (low + high) / 2
            if names[middle].name.utf8.lexicographicallyPrecedes(prefix.utf8) { low = middle + 1 } else { high = middle }
        }
        var matches: [(TaxonID, Float)] = []
        var index = low
        while index < names.count, names[index].name.hasPrefix(prefix) {
            matches.append((names[index].id, scores[names[index].id] ?? 0))
            index += 1
        }
        return matches.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }.prefix(limit).map(\.0)
    }

    /// Taxa kept per abbreviation key (a key is rarely shared by more).
    static let abbreviationsKept = 8

    /// The prominent taxa whose scientific name has two words or more, by
    /// abbreviation key ("c elegans" for *Caenorhabditis elegans*), most prominent
    /// first: "C. elegans" names the nematode a biologist means, not *Cestrum
    /// elegans*. Only taxa with a prominence are kept (a name, a trait, an IUCN
    /// status, or something below them), which bounds the table.
    func abbreviations() -> [String: [TaxonID]] {
        var groups: [String: [(TaxonID, Float)]] = [:]
        for (name, id) in names {
            guard let key = SearchQuery.abbreviationKey(ofFoldedName: name) else { continue }
            let score = scores[id] ?? 0
            groups[key, default: []].append((id, score))
            // A binomial written as one word ("ecoli"): the same taxa, by the key without its space.
            let bytes = Array(key.utf8)
            if bytes.lazy.filter({ $0 == UInt8(ascii: " ") }).count == 1 {
                groups[String(decoding: bytes.lazy.filter { $0 != UInt8(ascii: " ") }, as: UTF8.self), default: []].append((id, score))
            }
        }
        return groups.mapValues { members in
            members.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }.prefix(Self.abbreviationsKept).map(\.0)
        }
    }

    /// The rows of `prominence` with each taxon's folded scientific name; none for
    /// a database of schema 1. (``init(scores:names:)`` sorts them: the caller may
    /// do that on another thread.)
    static func rows(_ db: Database) throws -> (scores: [TaxonID: Float], names: [(name: String, id: TaxonID)]) {
        guard try db.tableExists("prominence") else { return ([:], []) }
        var scores: [TaxonID: Float] = [:]
        var names: [(name: String, id: TaxonID)] = []
        let rows = try Row.fetchCursor(db, sql: """
            -- CROSS JOIN keeps this order: without statistics the planner scanned all of
            -- taxa's names (2.6 M) and probed prominence for each.
            SELECT p.taxon_id, p.score, t.scientific_name FROM prominence p CROSS JOIN taxa t ON t.id = p.taxon_id
            """)
        while let row = try rows.next() {
            let id: TaxonID = row[0]
            scores[id] = Float(row[1] as Double)
            names.append((SearchQuery.words(in: row[2]).joined(separator: " "), id))
        }
        return (scores, names)
    }
}
