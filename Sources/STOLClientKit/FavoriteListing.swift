import Foundation
import STOLProtocol

/// The orders of `fav list --sort` (docs/design/favourites.md §5).
public enum FavoriteSort: String, CaseIterable, Sendable {
    /// Most recently added first (the daemon's order; ties by ascending id).
    case recent
    /// A–Z by scientific name.
    case scientific
    /// A–Z by common name in `--lang`; taxa without one follow, by scientific name.
    case common

    public var phrase: String {
        switch self {
        case .recent: "most recently added first"
        case .scientific: "A–Z by scientific name"
        case .common: "A–Z by common name"
        }
    }
}

/// A user's favourites with the names the active database gives them, ready to
/// be sorted and printed as a list or exported.
///
/// Favourites the active database does not know stay in the listing with the
/// placeholder of docs/design/favourites.md §11: they may exist in the other database, and switching
/// back brings their names back, so nothing here ever drops one.
public struct FavoriteListing {
    public struct Row {
        public let taxonID: Int64
        public let createdAt: String
        /// Nil when the active database lacks the id (or names were not looked up).
        public let taxon: Stol_V1_Taxon?
    }

    /// Newest first, as the daemon answered.
    public let rows: [Row]
    /// False when the taxonomy service was not running: ids and times only.
    public let namesKnown: Bool

    public init(entries: [Stol_V1_FavoriteEntry], taxa: [Int64: Stol_V1_Taxon]?) {
        rows = entries.map { Row(taxonID: $0.taxonID, createdAt: $0.createdAt, taxon: taxa?[$0.taxonID]) }
        namesKnown = taxa != nil
    }

    /// The rows in `order`. Sorting by a name compares folded text (case and
    /// diacritics ignored, as search does); rows not in the active database come
    /// last, in the daemon's order, whatever the sort.
    public func sorted(_ order: FavoriteSort) -> [Row] {
        guard order != .recent else { return rows }
        let known = rows.filter { $0.taxon != nil }
        let unknown = rows.filter { $0.taxon == nil }
        func key(_ text: String) -> String {
            text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
        }
        let ordered = known.enumerated().sorted { left, right in
            let (a, b) = (left.element.taxon!, right.element.taxon!)
            if order == .common {
                switch (a.commonName.isEmpty, b.commonName.isEmpty) {
                case (false, true): return true
                case (true, false): return false
                case (false, false) where key(a.commonName) != key(b.commonName): return key(a.commonName) < key(b.commonName)
                default: break
                }
            }
            if key(a.scientificName) != key(b.scientificName) { return key(a.scientificName) < key(b.scientificName) }
            return left.offset < right.offset
        }.map(\.element)
        return ordered + unknown
    }

    // MARK: - List

    /// `fav list`: a count line, then one line per favourite, the id next to its names.
    public func listText(_ order: FavoriteSort) -> String {
        guard !rows.isEmpty else { return "No favourites yet. Add one with `stol-client fav add ID-or-NAME`." }
        var lines = ["Favourites: \(rows.count) (\(order.phrase))"]
        let width = rows.map { String($0.taxonID).count }.max() ?? 1
        for row in sorted(order) {
            let id = String(repeating: " ", count: width - String(row.taxonID).count) + String(row.taxonID)
            let added = "added \(FavoriteText.added(row.createdAt))"
            if let taxon = row.taxon {
                lines.append("\(id)  \(FavoriteText.name(taxon))  (\(FavoriteText.rank(taxon)))  \(added)")
            } else if namesKnown {
                lines.append("\(id)  \(FavoriteText.notFound)  \(added)")
            } else {
                lines.append("\(id)  \(added)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `fav list --json`: every entry with its id and time; `found` when names were
    /// looked up, and the names when the active database knows the taxon.
    public struct ListJSON: Encodable, Sendable {
        public struct Entry: Encodable, Sendable {
            let taxonID: Int64
            let createdAt: String
            var found: Bool?
            var scientificName, commonName, rank: String?

            enum CodingKeys: String, CodingKey {
                case taxonID = "taxon_id", createdAt = "created_at", found
                case scientificName = "scientific_name", commonName = "common_name", rank
            }
        }

        let count: Int
        let sort: String
        let namesResolved: Bool
        let entries: [Entry]

        enum CodingKeys: String, CodingKey {
            case count, sort, namesResolved = "names_resolved", entries
        }
    }

    public func listJSON(_ order: FavoriteSort) -> ListJSON {
        let entries = sorted(order).map { row in
            var entry = ListJSON.Entry(taxonID: row.taxonID, createdAt: row.createdAt)
            guard namesKnown else { return entry }
            entry.found = row.taxon != nil
            if let taxon = row.taxon {
                entry.scientificName = taxon.scientificName
                entry.commonName = taxon.commonName
                entry.rank = FavoriteText.rank(taxon)
            }
            return entry
        }
        return ListJSON(count: rows.count, sort: order.rawValue, namesResolved: namesKnown, entries: entries)
    }

    // MARK: - Export

    /// The title line of the export (docs/design/favourites.md §11).
    public static let exportTitle = "My Favourite Species — Species: Tree of Life"

    /// One export line per favourite, names only: `Panthera leo (lion)`.
    public func exportNames(_ order: FavoriteSort) -> [String] {
        sorted(order).map { row in
            guard let taxon = row.taxon else { return FavoriteText.notFound }
            return taxon.commonName.isEmpty ? taxon.scientificName : "\(taxon.scientificName) (\(taxon.commonName))"
        }
    }

    /// `fav export`: the text of docs/design/favourites.md §11 — a title, a blank line, a numbered
    /// list of display names. No ids and no timestamps, so it can be shared freely.
    public func exportText(_ order: FavoriteSort) -> String {
        let items = exportNames(order).enumerated().map { "\($0.offset + 1). \($0.element)" }
        return ([Self.exportTitle, ""] + items).joined(separator: "\n")
    }

    /// `fav export --json`: the same names, still without ids or timestamps; a taxon
    /// the active database lacks has only `found` and `display_name`.
    public struct ExportJSON: Encodable, Sendable {
        public struct Species: Encodable, Sendable {
            let found: Bool
            let displayName: String
            var scientificName, commonName: String?

            enum CodingKeys: String, CodingKey {
                case found, displayName = "display_name", scientificName = "scientific_name", commonName = "common_name"
            }
        }

        let title: String
        let species: [Species]
        let text: String
    }

    public func exportJSON(_ order: FavoriteSort) -> ExportJSON {
        let species = sorted(order).map { row in
            guard let taxon = row.taxon else { return ExportJSON.Species(found: false, displayName: FavoriteText.notFound) }
            return ExportJSON.Species(found: true,
                                      displayName: taxon.commonName.isEmpty ? taxon.scientificName
                                          : "\(taxon.scientificName) (\(taxon.commonName))",
                                      scientificName: taxon.scientificName, commonName: taxon.commonName)
        }
        return ExportJSON(title: Self.exportTitle, species: species, text: exportText(order))
    }
}
