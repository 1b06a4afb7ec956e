import STOLModel

/// Tree-wide selections on a ``SourceTaxonomy`` (before normalisation, on the
/// source's own ids and full tree): whole subtrees dropped, or a subset kept.
extension SourceTaxonomy {
    /// Position of each usage by id (the first usage of an id wins).
    func usagePositions() -> [TaxonID: Int32] {
        var positions: [TaxonID: Int32] = [:]
        positions.reserveCapacity(usages.count)
        for (position, usage) in usages.enumerated() where positions[usage.id] == nil {
            positions[usage.id] = Int32(position)
        }
        return positions
    }

    /// For each usage, whether it or one of its ancestors satisfies `marks`
    /// (`marks` is asked at most once per usage, and not for usages below a marked
    /// one). Parents missing from the source end the walk; a cycle counts as unmarked.
    func inheritedMarks(positions: [TaxonID: Int32], _ marks: (Int) -> Bool) -> [Bool] {
        // 0 unknown, 1 unmarked, 2 marked, 3 on the current path.
        var state = [UInt8](repeating: 0, count: usages.count)
        var path: [Int] = []
        for start in usages.indices where state[start] == 0 {
            path.removeAll(keepingCapacity: true)
            var current = start
            var verdict: UInt8 = 1
            while true {
                let known = state[current]
                if known == 1 || known == 2 { verdict = known; break }
                if known == 3 { verdict = 1; break }
                if marks(current) { state[current] = 2; verdict = 2; break }
                state[current] = 3
                path.append(current)
                guard let parent = usages[current].parentID, let next = positions[parent] else { verdict = 1; break }
                current = Int(next)
            }
            for position in path { state[position] = verdict }
        }
        return state.map { $0 == 2 }
    }

    /// The usages with `keep[i]` true, and the names (vernacular, synonyms, other
    /// names), properties, merged and deleted ids that go with them; names and
    /// properties of dropped usages are counted in the second result.
    func retaining(_ keep: [Bool], positions: [TaxonID: Int32]) -> (SourceTaxonomy, droppedNames: Int) {
        var result = SourceTaxonomy()
        result.readStatistics = readStatistics
        result.merged = merged
        result.deleted = deleted
        result.references = references
        result.usages.reserveCapacity(keep.lazy.filter { $0 }.count)
        for (position, usage) in usages.enumerated() where keep[position] { result.usages.append(usage) }
        func kept(_ id: TaxonID) -> Bool {
            guard let position = positions[id] else { return true }  // unknown: the normaliser decides
            return keep[Int(position)]
        }
        var dropped = 0
        result.synonyms = synonyms.filter { kept($0.acceptedID) }
        dropped += synonyms.count - result.synonyms.count
        result.vernacularNames = vernacularNames.filter { kept($0.taxonID) }
        dropped += vernacularNames.count - result.vernacularNames.count
        result.otherNames = otherNames.filter { kept($0.taxonID) }
        dropped += otherNames.count - result.otherNames.count
        result.properties = properties.filter { kept($0.taxonID) }
        dropped += properties.count - result.properties.count
        return (result, dropped)
    }

    /// What ``subset(roots:)`` kept.
    public struct SubsetReport: Sendable, Equatable {
        public var keptUsages = 0
        public var droppedUsages = 0
        public var droppedNames = 0
        /// Requested roots that are not usages of the source.
        public var unknownRoots: [TaxonID] = []
    }

    /// Only the subtrees of `roots` (each root and all its descendants), plus the
    /// ancestors of each root so that the tree stays connected up to the source's root.
    public func subset(roots: [TaxonID]) -> (SourceTaxonomy, SubsetReport) {
        let positions = usagePositions()
        var rootPositions = Set<Int>()
        var report = SubsetReport()
        for root in roots {
            if let position = positions[root] { rootPositions.insert(Int(position)) } else { report.unknownRoots.append(root) }
        }
        var keep = inheritedMarks(positions: positions) { rootPositions.contains($0) }
        for root in rootPositions {
            var current = root
            var hops = 0
            while let parent = usages[current].parentID, let next = positions[parent], hops < usages.count {
                current = Int(next)
                // Already kept: inside another root's subtree (whose own walk marks
                // what is above it) or on an earlier walk (which went on up).
                if keep[current] { break }
                keep[current] = true
                hops += 1
            }
        }
        let (result, droppedNames) = retaining(keep, positions: positions)
        report.keptUsages = result.usages.count
        report.droppedUsages = usages.count - result.usages.count
        report.droppedNames = droppedNames
        return (result, report)
    }
}

extension SourceTaxonomy {
    /// What ``keepingNamedSpecies()`` kept.
    public struct NamedSpeciesReport: Sendable, Equatable {
        public var keptSpecies = 0
        public var droppedSpecies = 0
        /// Source usages dropped: the unnamed species and everything below them.
        public var droppedUsages = 0
        public var droppedNames = 0
    }

    /// Every taxon above species rank, and, at species rank and below, only the
    /// taxa that have a common name or a property (IUCN status, trait) in the
    /// source or its overlay, or whose id is in `alsoKeeping`, with their ancestors
    /// (a species stays when a strain or subspecies under it is named: the dog,
    /// *Canis lupus familiaris*, keeps the gray wolf). Synonyms and other names
    /// (acronyms, misspellings, …) do not make a species named; they stay or go
    /// with their taxon.
    ///
    /// `alsoKeeping` holds the overlay's own taxa and every released id: an id
    /// once released stays (stable-id policy), even if its name goes away.
    ///
    /// This is the bundled database's selection rule: the whole tree down to genus,
    /// plus the species and below that people know by a name. It exists because the
    /// full placeholder-free NCBI tree (645 k species) cannot fit the bundled
    /// database's 20 MB compressed budget (docs/design/data-and-format.md §6).
    public func keepingNamedSpecies(alsoKeeping: Set<TaxonID> = []) -> (SourceTaxonomy, NamedSpeciesReport) {
        let positions = usagePositions()
        var notable = alsoKeeping
        for name in vernacularNames { notable.insert(name.taxonID) }
        for property in properties { notable.insert(property.taxonID) }
        var isSpecies = [Bool](repeating: false, count: usages.count)
        for (position, usage) in usages.enumerated() where TaxonRank(sourceRank: usage.rank) == .species {
            isSpecies[position] = true
        }
        // Notable taxa and every ancestor of one.
        var leadsToNotable = [Bool](repeating: false, count: usages.count)
        for id in notable {
            guard var position = positions[id].map(Int.init) else { continue }
            var hops = 0
            while !leadsToNotable[position], hops < usages.count {
                leadsToNotable[position] = true
                guard let parent = usages[position].parentID, let next = positions[parent] else { break }
                position = Int(next)
                hops += 1
            }
        }
        let atOrBelowSpecies = inheritedMarks(positions: positions) { isSpecies[$0] }
        let keep = usages.indices.map { !atOrBelowSpecies[$0] || leadsToNotable[$0] }
        let (result, droppedNames) = retaining(keep, positions: positions)
        var report = NamedSpeciesReport()
        for position in usages.indices where isSpecies[position] {
            if keep[position] { report.keptSpecies += 1 } else { report.droppedSpecies += 1 }
        }
        report.droppedUsages = usages.count - result.usages.count
        report.droppedNames = droppedNames
        return (result, report)
    }
}
