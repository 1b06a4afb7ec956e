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
    /// The folded scientific names of the taxa with a prominence, each with its taxa by id.
    private let names: SortedNameTable

    public static let empty = ProminenceIndex(scores: [:], names: SortedNameTable.Builder())

    /// For every prefix of one or two characters, its most prominent taxa: such a
    /// prefix spans tens of thousands of names ("p"), too many to rank per keystroke
    /// (the 1–2 character autocomplete p99 went from 3.5 to 6.4 ms).
    private let shortPrefixes: [String: [TaxonID]]
    static let shortPrefixKept = 50

    /// - Parameter names: (folded scientific name, taxon), in any order.
    init(scores: [TaxonID: Float], names unsorted: [(name: String, id: TaxonID)]) {
        var names = SortedNameTable.Builder()
        for (name, id) in unsorted { names.append(name, id) }
        self.init(scores: scores, names: names)
    }

    /// - Parameter names: (folded scientific name, taxon), in any order: sorted here
    ///   by the names' bytes (then id), so that every prefix is one range of them.
    init(scores: [TaxonID: Float], names builder: consuming SortedNameTable.Builder) {
        self.scores = scores
        let names = builder.build(by: <)
        self.names = names
        // The prefixes of one or two characters, range by range of the sorted names.
        var shortPrefixes: [String: [TaxonID]] = [:]
        func keep(_ prefix: String, _ range: Range<Int>) {
            guard !range.isEmpty else { return }
            var ranked: [(id: TaxonID, score: Float)] = names.ids(ofKeys: range).map { (id: $0, score: scores[$0] ?? 0) }
            ranked.sort { $0.score != $1.score ? $0.score > $1.score : $0.id < $1.id }
            shortPrefixes[prefix] = ranked.prefix(Self.shortPrefixKept).map { $0.id }
        }
        var start = [Int](repeating: 0, count: 3)  // where the current 1- and 2-character prefixes began
        var current = ["", "", ""]
        for index in 0..<names.count {
            let name = names.key(at: index)
            for length in 1...2 {
                var prefix = String(name.prefix(length))
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
        let matches = names.ids(ofKeys: names.keys(withPrefix: prefix)).map { ($0, scores[$0] ?? 0) }
        return matches.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }.prefix(limit).map(\.0)
    }

    /// Taxa kept per abbreviation key (a key is rarely shared by more).
    static let abbreviationsKept = 8

    /// The prominent taxa whose scientific name has two words or more, by
    /// abbreviation key ("c elegans" for *Caenorhabditis elegans*), most prominent
    /// first: "C. elegans" names the nematode a biologist means, not *Cestrum
    /// elegans*. Only taxa with a prominence are kept (a name, a trait, an IUCN
    /// status, or something below them), which bounds the table.
    func abbreviations() -> SortedNameTable {
        var table = SortedNameTable.Builder()
        for index in 0..<names.count {
            guard let key = SearchQuery.abbreviationKey(ofFoldedName: names.key(at: index)) else { continue }
            let bytes = key.utf8
            // A binomial written as one word ("ecoli"): the same taxa, by the key without its space.
            let binomial = bytes.lazy.filter({ $0 == UInt8(ascii: " ") }).count == 1
            for id in names.ids(ofKeys: index..<index + 1) {
                table.append(bytes, id)
                if binomial { table.append(bytes.lazy.filter { $0 != UInt8(ascii: " ") }, id) }
            }
        }
        let scores = self.scores
        return table.build(kept: Self.abbreviationsKept) { a, b in
            let scoreA = scores[a] ?? 0, scoreB = scores[b] ?? 0
            return scoreA != scoreB ? scoreA > scoreB : a < b
        }
    }

    /// The rows of `prominence` with each taxon's folded scientific name; none for
    /// a database of schema 1. (``init(scores:names:)`` sorts them: the caller may
    /// do that on another thread.)
    static func rows(_ db: Database) throws -> (scores: [TaxonID: Float], names: SortedNameTable.Builder) {
        var scores: [TaxonID: Float] = [:]
        var names = SortedNameTable.Builder()
        guard try db.tableExists("prominence") else { return (scores, names) }
        let rows = try Row.fetchCursor(db, sql: """
            -- CROSS JOIN keeps this order: without statistics the planner scanned all of
            -- taxa's names (2.6 M) and probed prominence for each.
            SELECT p.taxon_id, p.score, t.scientific_name FROM prominence p CROSS JOIN taxa t ON t.id = p.taxon_id
            """)
        while let row = try rows.next() {
            let id: TaxonID = row[0]
            scores[id] = Float(row[1] as Double)
            names.append(SearchQuery.words(in: row[2]).joined(separator: " "), id)
        }
        return (scores, names)
    }
}
