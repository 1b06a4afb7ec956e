/// The order of NCBI's ranks, top down, and which spellings name one rank: the one
/// table of rank rules (docs/design/queries-and-algorithms.md §1). Filters by rank
/// range (`rank_filter`, `stol-client filter --lower-than genus`) order ranks by
/// ``levels``, as taxonkit's `filter` does; the eight main ranks take the source's
/// spellings of ``mainRankSpellings`` (``TaxonRank/init(sourceRank:)``, so the
/// pipeline's main view and the lineage templates' placeholders read them too); the
/// taxonomy server answers all of it (`rank_order`), so no client keeps a copy.
///
/// Spellings on one level are the same rank to a filter: NCBI renamed
/// `superkingdom` to `domain` in 2025 and gave Viruses the new rank
/// `acellular root`, and a script written for one release must keep working on
/// the other, so `--rank superkingdom` also keeps the domains of a 2025
/// database. Ranks outside the order (`no rank`, `clade`, and any rank this
/// table does not know) have no level: a filter keeps them unless told to
/// discard them, as taxonkit does.
public enum RankOrder {
    /// Levels from the top; each entry lists the spellings of one level.
    public static let levels: [[String]] = [
        ["acellular root", "cellular root"],
        ["domain", "superkingdom", "realm", "empire"],
        ["kingdom"], ["subkingdom"], ["infrakingdom"],
        ["superphylum", "superdivision"], ["phylum", "division"], ["subphylum", "subdivision"],
        ["infraphylum", "infradivision"],
        ["superclass"], ["class"], ["subclass"], ["infraclass"], ["parvclass"],
        ["supercohort"], ["cohort"], ["subcohort"], ["infracohort"],
        ["superorder"], ["order"], ["suborder"], ["infraorder"], ["parvorder"],
        ["superfamily"], ["epifamily"], ["family"], ["subfamily"], ["infrafamily"],
        ["supertribe"], ["tribe"], ["subtribe"],
        ["genus"], ["subgenus"], ["section"], ["subsection"], ["series"], ["subseries"],
        ["species group", "superspecies"], ["species subgroup"], ["species"],
        ["subspecies", "forma specialis", "pathovar"],
        ["serogroup", "pathogroup"], ["serotype", "biotype", "genotype"],
        ["varietas", "variety", "morph"], ["subvariety", "subvarietas"], ["forma", "form"], ["subforma", "subform"],
        ["strain"], ["isolate"],
    ]

    /// Ranks that say a node has none (kept by default, dropped by `--discard-noranks`).
    public static let unordered: [String] = ["no rank", "clade"]

    /// The source's spellings of each main rank, domain first: NCBI's before 2025
    /// (`superkingdom`) and since (`domain`, and `acellular root`, the rank of Viruses,
    /// a superkingdom before), so the main view of either release has Viruses among
    /// its domains. `cellular root` ("cellular organisms", no rank before), `empire`
    /// and `realm` are on the domain's level of the order but no main rank. Each
    /// spelling is on a level of ``levels``, every one of a main rank above every one
    /// of the next (`RankRulesTests` checks both).
    public static let mainRankSpellings: [(rank: TaxonRank, spellings: [String])] = [
        (.domain, ["domain", "superkingdom", "acellular root"]),
        (.kingdom, ["kingdom"]),
        (.phylum, ["phylum", "division"]),
        (.class, ["class"]),
        (.order, ["order"]),
        (.family, ["family"]),
        (.genus, ["genus"]),
        (.species, ["species"]),
    ]

    /// The main rank of each spelling of ``mainRankSpellings``.
    static let mainRankOfSpelling: [String: TaxonRank] = Dictionary(
        uniqueKeysWithValues: mainRankSpellings.flatMap { entry in entry.spellings.map { ($0, entry.rank) } })

    /// The spellings of one main rank.
    public static func spellings(of rank: TaxonRank) -> [String] {
        mainRankSpellings.first { $0.rank == rank }?.spellings ?? [rank.rawValue]
    }

    private static let levelOfRank: [String: Int] = {
        var table: [String: Int] = [:]
        for (level, spellings) in levels.enumerated() {
            for spelling in spellings { table[spelling] = level }
        }
        return table
    }()

    /// The level of `rank` (0 at the top), or nil for a rank without order.
    /// Case and surrounding blanks do not matter ("Genus", "genus ").
    public static func level(of rank: String) -> Int? {
        levelOfRank[normalized(rank)]
    }

    static func normalized(_ rank: String) -> String {
        rank.trimmingBlanks.lowercased()
    }
}

/// Which taxa a rank filter keeps: taxonkit's `filter` rules.
///
/// - With `lowerThan` (or `higherThan`), a taxon whose rank is strictly below
///   (above) that rank; with `equalTo` as well, also the taxa of those ranks;
///   with `equalTo` alone, only them; with neither, every ranked taxon.
/// - A taxon without an ordered rank (`no rank`, `clade`, an unknown rank) is
///   kept unless `discardNoranks`. With `savePredictableNoranks` (which needs
///   `lowerThan` and implies `discardNoranks`), it is kept when its nearest
///   ancestor with an ordered rank is at or below the `lowerThan` rank (a
///   `no rank` serotype under a species passes `--lower-than genus`).
public struct RankFilter: Sendable, Equatable {
    public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
        case unknownRank(String)
        case bothBounds
        case predictableNeedsLowerThan

        public var description: String {
            switch self {
            case .unknownRank(let rank):
                "unknown rank '\(rank)'; the ranks: \(Self.knownRanks) (--list-order shows their order)"
            case .bothBounds: "--lower-than and --higher-than cannot be used together"
            case .predictableNeedsLowerThan: "--save-predictable-noranks goes with --lower-than"
            }
        }

        /// Every rank a filter takes, top down, spellings of one level joined by `=`: what an
        /// unknown rank's message lists (`no rank` and `clade` have no place in the order).
        static let knownRanks = RankOrder.levels.map { $0.joined(separator: "=") }.joined(separator: ", ")

        /// The same sentence naming the fields of the protocol's `rank_filter` (a
        /// client of any language words its own options after them).
        public var requestMessage: String {
            switch self {
            case .unknownRank(let rank):
                "unknown rank '\(rank.prefix(80))'; the ranks: \(Self.knownRanks) (rank_order gives their order)"
            case .bothBounds: "lower_than and higher_than cannot be used together"
            case .predictableNeedsLowerThan: "save_predictable_noranks goes with lower_than"
            }
        }
    }

    /// The ranks of `equal_to` entries: each entry one rank or several, comma-separated
    /// (`--rank genus,species`), blanks around each and empty ones dropped.
    public static func ranks(in entries: [String]) -> [String] {
        entries.flatMap { $0.split(separator: ",").map { String($0).trimmingBlanks } }.filter { !$0.isEmpty }
    }

    public let lowerThan: Int?
    public let higherThan: Int?
    public let equalTo: Set<Int>
    public let discardNoranks: Bool
    public let savePredictableNoranks: Bool

    public init(lowerThan: String? = nil, higherThan: String? = nil, equalTo: [String] = [],
                discardNoranks: Bool = false, savePredictableNoranks: Bool = false) throws(ConfigurationError) {
        func level(_ rank: String) throws(ConfigurationError) -> Int {
            guard let level = RankOrder.level(of: rank) else { throw .unknownRank(rank) }
            return level
        }
        guard lowerThan == nil || higherThan == nil else { throw .bothBounds }
        guard !savePredictableNoranks || lowerThan != nil else { throw .predictableNeedsLowerThan }
        self.lowerThan = try lowerThan.map(level)
        self.higherThan = try higherThan.map(level)
        var levels = Set<Int>()
        for rank in equalTo { levels.insert(try level(rank)) }
        self.equalTo = levels
        self.discardNoranks = discardNoranks || savePredictableNoranks
        self.savePredictableNoranks = savePredictableNoranks
    }

    /// Whether a taxon of `rank` passes; `ancestorRanks` are the ranks above it,
    /// nearest first (only read for a taxon without an ordered rank under
    /// ``savePredictableNoranks``). The root itself (no ancestors) is never
    /// predictable.
    public func keeps(rank: String, ancestorRanks: some Sequence<String>) -> Bool {
        guard let level = RankOrder.level(of: rank) else {
            guard discardNoranks else { return true }
            guard savePredictableNoranks, let lowerThan else { return false }
            for ancestor in ancestorRanks {
                if let above = RankOrder.level(of: ancestor) { return above >= lowerThan }
            }
            return false
        }
        if equalTo.contains(level) { return true }
        if let lowerThan { return level > lowerThan }
        if let higherThan { return level < higherThan }
        return equalTo.isEmpty
    }
}
