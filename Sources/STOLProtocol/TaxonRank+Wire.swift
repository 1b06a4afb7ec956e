import STOLModel

extension Stol_V1_Rank {
    /// The wire form of one of the eight main ranks: the protocol numbers them 1…8,
    /// domain to species, in their order (``TaxonRank/level`` + 1).
    public init(_ rank: TaxonRank) {
        self = Stol_V1_Rank(rawValue: rank.level + 1) ?? .unspecified
    }
}

extension TaxonRank {
    /// The main rank a wire rank names; nil for `RANK_UNSPECIFIED` and values this
    /// build does not know.
    public init?(_ rank: Stol_V1_Rank) {
        guard rank.rawValue >= 1, rank.rawValue <= TaxonRank.allCases.count else { return nil }
        self = TaxonRank.allCases[rank.rawValue - 1]
    }
}
