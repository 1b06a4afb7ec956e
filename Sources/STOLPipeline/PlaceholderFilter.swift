import STOLModel

/// Drops placeholder taxa — names that stand for "some organism of this group"
/// rather than a described taxon (`stol-pipeline build --drop-placeholders`).
/// Runs on the source tree, before the intermediate ranks are removed.
///
/// Two kinds, decided from the scientific name (ASCII case ignored for phrases),
/// the source rank and the source flags:
///
/// **Placeholder organisms** are dropped with their whole subtree (what is below
/// `Bacillus sp. XYZ` or `environmental samples` is strains and clones):
/// - the name contains `uncultured`, `unidentified`, `environmental sample`,
///   `metagenome`, ` endosymbiont of `, ` symbiont of `, or is `other sequences`
///   (NCBI's container of vectors, plasmids and synthetic constructs);
/// - a word after the first is `sp.`, `sp`, `spp.`, `spp`, `cf.`, `cf`, `aff.`,
///   `aff`, `nr.`, `genomosp.`, or starts with `sp.` (`sp.1`): `Panthera sp.`,
///   `Myotis cf. davidii ZMB Mam 108401`;
/// - a word is `bacterium`, `archaeon`, `proteobacterium`, `actinobacterium` or
///   `cyanobacterium` in lower case: the unnamed-strain pattern
///   (`Lachnospiraceae bacterium AM48-27BH`, `alpha proteobacterium HIMB59`; the
///   genus `Bacterium` is capitalised and not matched);
/// - the second word is digits only (`Anisakidae 53 FMC-2017`), unless the first
///   word is a virus or phage name (`Alphapapillomavirus 9` is an ICTV species);
/// - a species whose name starts with a lower-case letter (`methanotroph K2-10`,
///   `marine eukaryote`): every described species starts with its capitalised genus;
/// - Open Tree flag `environmental`.
///
/// **Placeholder containers** are dropped alone, and their children are attached
/// to the container's parent (then judged by their own names): names containing
/// `unclassified` or `incertae sedis` (NCBI files real species under
/// `unclassified Bornaviridae` or `Eupercaria incertae sedis`: dropping those
/// subtrees would lose about 81,000 real NCBI species such as `Siganus
/// guttatus`), and the Open Tree flags `not_otu` and `was_container`.
/// Open Tree's `incertae_sedis`, `unclassified` (the flag on real species that
/// sat in such a container), `hidden`, `barren`, `extinct` and other flags do
/// not mark placeholders.
public struct PlaceholderFilter {
    public enum Verdict: Sendable, Equatable {
        case keep
        /// A placeholder container: the taxon goes, its children stay.
        case dropTaxon
        /// A placeholder organism: the taxon and everything below it go.
        case dropSubtree
    }

    public struct Report: Sendable, Equatable {
        /// Usages whose own name or flags mark a placeholder organism (also those
        /// inside another placeholder's subtree).
        public var placeholders = 0
        /// Placeholder containers removed on their own.
        public var containers = 0
        /// All usages dropped: placeholders, their subtrees and the containers.
        public var droppedUsages = 0
        /// Of those, usages of rank species.
        public var droppedSpecies = 0
        /// Kept usages whose parent was a dropped container (now under its parent).
        public var reattached = 0
        /// Synonyms, vernacular names, other names and properties of dropped usages.
        public var droppedNames = 0

        public init() {}
    }

    public static let subtreeFlags: Set<String> = ["environmental"]
    public static let containerFlags: Set<String> = ["not_otu", "was_container"]

    public init() {}

    /// The source without placeholders.
    public func filter(_ source: SourceTaxonomy) -> (SourceTaxonomy, Report) {
        var report = Report()
        let positions = source.usagePositions()
        // Rank names repeat: map each once.
        var speciesRank: [String: Bool] = [:]
        let verdicts = source.usages.map { usage in
            let isSpecies = speciesRank[usage.rank] ?? {
                let value = TaxonRank(sourceRank: usage.rank) == .species
                speciesRank[usage.rank] = value
                return value
            }()
            return Self.verdict(name: usage.scientificName, isSpecies: isSpecies, flags: usage.flags)
        }
        let inSubtree = source.inheritedMarks(positions: positions) { verdicts[$0] == .dropSubtree }
        var keep = [Bool](repeating: true, count: verdicts.count)
        for position in verdicts.indices {
            switch verdicts[position] {
            case .dropSubtree: report.placeholders += 1
            case .dropTaxon: if !inSubtree[position] { report.containers += 1 }
            case .keep: break
            }
            guard inSubtree[position] || verdicts[position] != .keep else { continue }
            keep[position] = false
            report.droppedUsages += 1
            if speciesRank[source.usages[position].rank] == true { report.droppedSpecies += 1 }
        }
        var (result, droppedNames) = source.retaining(keep, positions: positions)
        report.droppedNames = droppedNames
        // Children of a dropped container go to its nearest kept ancestor.
        if report.containers > 0 {
            for index in result.usages.indices {
                guard let parent = result.usages[index].parentID, let start = positions[parent],
                      !keep[Int(start)] else { continue }
                var candidate: TaxonID? = parent
                var hops = 0
                while let id = candidate, let position = positions[id], !keep[Int(position)], hops < verdicts.count {
                    candidate = source.usages[Int(position)].parentID
                    hops += 1
                }
                result.usages[index].parentID = candidate
                report.reattached += 1
            }
        }
        return (result, report)
    }

    private static let subtreePhrases: [[UInt8]] = [
        "uncultured", "unidentified", "environmental sample", "metagenome", " endosymbiont of ", " symbiont of ",
    ].map { Array($0.utf8) }

    private static let containerPhrases: [[UInt8]] = ["unclassified", "incertae sedis"].map { Array($0.utf8) }

    private static let qualifierWords: [[UInt8]] = [
        "sp.", "sp", "spp.", "spp", "cf.", "cf", "aff.", "aff", "nr.", "genomosp.",
    ].map { Array($0.utf8) }

    private static let strainWords: [[UInt8]] = [
        "bacterium", "archaeon", "proteobacterium", "actinobacterium", "cyanobacterium",
    ].map { Array($0.utf8) }

    /// What the filter does with a taxon of this name, source rank and flags.
    public static func verdict(name: String, rank: String, flags: [String] = []) -> Verdict {
        verdict(name: name, isSpecies: TaxonRank(sourceRank: rank) == .species, flags: flags)
    }

    static func verdict(name: String, isSpecies: Bool, flags: [String]) -> Verdict {
        if !flags.isEmpty, flags.contains(where: { subtreeFlags.contains($0) }) { return .dropSubtree }
        var text = name
        let verdict = text.withUTF8 { nameVerdict($0, isSpecies: isSpecies) }
        if verdict == .keep, !flags.isEmpty, flags.contains(where: { containerFlags.contains($0) }) { return .dropTaxon }
        return verdict
    }

    /// Whether a name (of a species) marks a placeholder of either kind.
    public static func isPlaceholder(name: String) -> Bool {
        verdict(name: name, rank: "species") != .keep
    }

    private static func nameVerdict(_ bytes: UnsafeBufferPointer<UInt8>, isSpecies: Bool) -> Verdict {
        let count = bytes.count
        guard count > 0 else { return .keep }
        if subtreePhrases.contains(where: { contains(bytes, 0..<count, $0) }) { return .dropSubtree }
        if equalIgnoringCase(bytes, 0..<count, otherSequences) { return .dropSubtree }
        if isSpecies && bytes[0] >= 0x61 && bytes[0] <= 0x7A { return .dropSubtree }
        // Words.
        var word = 0
        var start = 0
        var firstWord = 0..<0
        while start < count {
            while start < count && bytes[start] == 0x20 { start += 1 }
            guard start < count else { break }
            var end = start
            while end < count && bytes[end] != 0x20 { end += 1 }
            let range = start..<end
            if word == 0 { firstWord = range }
            if word >= 1 {
                if qualifierWords.contains(where: { equal(bytes, range, $0) }) { return .dropSubtree }
                if range.count > 3 && bytes[start] == 0x73 && bytes[start + 1] == 0x70 && bytes[start + 2] == 0x2E {
                    return .dropSubtree  // sp.1, sp.A
                }
            }
            if strainWords.contains(where: { equal(bytes, range, $0) }) { return .dropSubtree }
            if word == 1 && range.allSatisfy({ bytes[$0] >= 0x30 && bytes[$0] <= 0x39 })
                && !contains(bytes, firstWord, virus) && !contains(bytes, firstWord, phage) {
                return .dropSubtree
            }
            word += 1
            start = end
        }
        if containerPhrases.contains(where: { contains(bytes, 0..<count, $0) }) { return .dropTaxon }
        return .keep
    }

    @inline(__always)
    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    private static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ word: [UInt8]) -> Bool {
        guard range.count == word.count else { return false }
        for (offset, byte) in word.enumerated() where bytes[range.lowerBound + offset] != byte { return false }
        return true
    }

    private static func equalIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ word: [UInt8]) -> Bool {
        guard range.count == word.count else { return false }
        for (offset, byte) in word.enumerated() where lower(bytes[range.lowerBound + offset]) != byte { return false }
        return true
    }

    /// Whether `bytes[range]` contains the lower-case ASCII `needle`, ignoring ASCII case.
    private static func contains(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, range.count >= needle.count else { return false }
        let first = needle[0]
        var start = range.lowerBound
        while start + needle.count <= range.upperBound {
            if lower(bytes[start]) == first {
                var matched = true
                for offset in 1..<needle.count where lower(bytes[start + offset]) != needle[offset] {
                    matched = false
                    break
                }
                if matched { return true }
            }
            start += 1
        }
        return false
    }

    private static let virus = Array("virus".utf8), phage = Array("phage".utf8), otherSequences = Array("other sequences".utf8)
}
