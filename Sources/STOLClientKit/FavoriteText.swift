import STOLProtocol

/// How the favourites commands name one taxon in text.
///
/// Kept apart from the shared `TextFormatter` so the favourites output can follow
/// docs/design/favourites.md §11 (names next to ids, the "Not found in active database" placeholder)
/// without changing what the taxonomy commands print.
public enum FavoriteText {
    /// The placeholder (docs/design/favourites.md §11) for a favourite the active database lacks.
    public static let notFound = "Not found in active database"

    /// `9689  Panthera leo — lion  (species)`: id, scientific name, common name, rank.
    public static func describe(_ taxon: Stol_V1_Taxon) -> String {
        "\(taxon.id)  \(name(taxon))  (\(rank(taxon)))"
    }

    /// `Panthera leo — lion`, or the scientific name alone.
    public static func name(_ taxon: Stol_V1_Taxon) -> String {
        taxon.commonName.isEmpty ? taxon.scientificName : "\(taxon.scientificName) — \(taxon.commonName)"
    }

    /// A taxon named by id, with its names when the active database knows it.
    public static func describe(id: Int64, taxon: Stol_V1_Taxon?, namesKnown: Bool) -> String {
        if let taxon { return describe(taxon) }
        return namesKnown ? "\(id)  (\(notFound); kept as a favourite)" : "\(id)"
    }

    public static func rank(_ rank: Stol_V1_Rank) -> String { TextFormatter.rankName(rank) }

    /// The taxon's rank as shown: its main rank, or the source's own for a node
    /// outside the eight ranks (a strain, a subspecies).
    public static func rank(_ taxon: Stol_V1_Taxon) -> String { TextFormatter.displayRank(taxon) }

    public static func rank(named name: String) -> Stol_V1_Rank? {
        Stol_V1_Rank.allCases.first { $0 != .unspecified && rank($0) == name.lowercased() }
    }

    /// `2026-02-26T10:15:30.123Z` → `2026-02-26 10:15 UTC` (the list's "added" column).
    public static func added(_ createdAt: String) -> String {
        guard createdAt.count >= 16 else { return createdAt }
        let minute = createdAt.prefix(16).replacingOccurrences(of: "T", with: " ")
        return "\(minute) UTC"
    }
}
