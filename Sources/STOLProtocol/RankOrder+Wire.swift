import STOLModel

extension Stol_V1_RankOrderResponse {
    /// The rank tables as `rank_order` answers them: ``RankOrder``'s levels, unordered
    /// ranks and main-rank spellings, and the placeholders of lineage templates
    /// (``LineageFormat/all``) with their default fill. Clients render these; they
    /// keep no copy (protocol/PROTOCOL.md §4.2, `rank_order`).
    public static let current: Stol_V1_RankOrderResponse = {
        var response = Stol_V1_RankOrderResponse()
        response.levels = RankOrder.levels.map { spellings in
            var level = Stol_V1_RankLevel()
            level.spellings = spellings
            return level
        }
        response.unordered = RankOrder.unordered
        response.mainRanks = RankOrder.mainRankSpellings.map { entry in
            var main = Stol_V1_MainRankSpellings()
            main.rank = Stol_V1_Rank(entry.rank)
            main.spellings = entry.spellings
            return main
        }
        response.placeholders = LineageFormat.all.map { placeholder in
            var wire = Stol_V1_RankPlaceholder()
            wire.letter = String(placeholder.letter)
            wire.name = placeholder.name
            wire.aliases = placeholder.aliases
            wire.spellings = placeholder.ranks
            wire.prefix = placeholder.prefix
            wire.level = UInt32(placeholder.level)
            return wire
        }
        response.defaultFill = LineageFormat.defaultFill
        return response
    }()
}
