import STOLModel
import STOLProtocol

/// `lineage_batch`'s `columns`: per column, the id of the lineage's node of that rank.
///
/// A client that lays lineages out as a table (the Python package's `lineage_frame`,
/// one column per rank) read every lineage's ranks and names to find each cell: 0.8 of
/// the 1.5 s of a frame of 100,000 lineages on NCBI's whole tree was that walk in
/// Python. Answered here, a cell is one id to look up in the answer's nodes, and the
/// rule of which rank fills a column is written once, beside the rank table it reads.
///
/// On the main view a column names a main rank, by its name or by one of the source's
/// spellings of it (``RankOrder/mainRankSpellings``: `superkingdom` is the domain). On
/// the whole tree a column is filled by its own spelling, else by the other spellings
/// of its level in ``RankOrder/levels``' order (`domain` by NCBI's `superkingdom`
/// before 2025); `no rank` and `clade` name themselves. Of several nodes of the rank
/// that fills a column, the lowest does (the template's placeholders read lineages so too).
struct LineageColumns: Sendable {
    /// More columns than ranks in the table buy nothing; the bound keeps a request's work
    /// (columns × nodes per lineage) small.
    static let limit = 64

    /// One column's rank and its preference there (0 first).
    struct Entry: Sendable {
        let column: Int
        let preference: Int
    }

    /// The number of columns asked for.
    let count: Int
    /// Each rank name (as a lineage of the view names ranks) with the columns it fills.
    private let entriesByRank: [String: [Entry]]

    /// The columns of a request, or `INVALID_REQUEST` naming the first that names no
    /// rank of the view (details `column`) and listing the ones that do.
    init(_ columns: [String], view: Stol_V1_RankView) throws(TaxonomyError) {
        guard columns.count <= Self.limit else {
            throw .invalidOption("at most \(Self.limit) columns per request, got \(columns.count)",
                                 details: ["column": String(columns[Self.limit].prefix(80))])  // the first past the limit
        }
        var entries: [String: [Entry]] = [:]
        for (column, name) in columns.enumerated() {
            let spellings = try Self.spellings(of: name, view: view)
            for (preference, spelling) in spellings.enumerated() {
                entries[spelling, default: []].append(Entry(column: column, preference: preference))
            }
        }
        count = columns.count
        entriesByRank = entries
    }

    /// The rank names that fill a column, the first preferred.
    static func spellings(of column: String, view: Stol_V1_RankView) throws(TaxonomyError) -> [String] {
        let folded = column.trimmingBlanks.lowercased()  // as RankOrder reads a rank: "Genus " is genus
        if view == .all {
            if let level = RankOrder.levels.first(where: { $0.contains(folded) }) {
                return [folded] + level.filter { $0 != folded }
            }
            if RankOrder.unordered.contains(folded) { return [folded] }
            throw .invalidOption(
                "column '\(column.prefix(80))' names no rank of the rank table (rank_order): "
                    + RankOrder.levels.map { $0.joined(separator: "=") }.joined(separator: ", ")
                    + "; " + RankOrder.unordered.joined(separator: ", "),
                details: ["column": String(column.prefix(80))])
        }
        if let main = RankOrder.mainRankSpellings.first(where: { $0.rank.rawValue == folded || $0.spellings.contains(folded) }) {
            return [main.rank.rawValue]  // the main view names each node's rank by its main rank
        }
        let spellings = Set(RankOrder.mainRankSpellings.flatMap(\.spellings)).sorted()
        throw .invalidOption(
            "column '\(column.prefix(80))' is no main rank; the columns of the main ranks are "
                + RankOrder.mainRankSpellings.map(\.rank.rawValue).joined(separator: ", ")
                + " (or their spellings: \(spellings.joined(separator: ", "))); other ranks need the whole tree (RANK_VIEW_ALL)",
            details: ["column": String(column.prefix(80))])
    }

    /// The columns a node of rank `rank` (as the view names it) fills.
    func entries(ofRank rank: String) -> [Entry] { entriesByRank[rank] ?? [] }

    /// The column ids of one lineage of `length` nodes, root first, the taxon last:
    /// `entries(i)` the columns node i's rank fills, `id(i)` its id; 0 where none fills one.
    func ids(length: Int, entries: (Int) -> [Entry], id: (Int) -> Int64) -> [Int64] {
        var preferred = [Int](repeating: .max, count: count)
        var result = [Int64](repeating: 0, count: count)
        for index in 0..<length {
            for entry in entries(index) where entry.preference <= preferred[entry.column] {
                preferred[entry.column] = entry.preference  // a lower node of the same spelling wins too
                result[entry.column] = id(index)
            }
        }
        return result
    }
}
