import STOLModel

/// What prominence counts under a node (docs/design/queries-and-algorithms.md §8):
/// the nodes below it and the named nodes in its subtree, itself included.
public struct SubtreeCount: Sendable, Equatable {
    public var descendants: Int32
    public var named: Int32

    public init(descendants: Int32, named: Int32) {
        self.descendants = descendants
        self.named = named
    }
}

extension SourceTaxonomy {
    /// Each node's ``SubtreeCount`` on this source as it is, for the nodes with
    /// anything to count (most leaves have none and are left out): a build that
    /// then cuts the source (`--only-named-species`, `--drop-placeholders`,
    /// `--subset`) still ranks its taxa by what the source has under them, as the
    /// uncut reference build does. Without it, *Saccharomyces cerevisiae*, whose
    /// thousands of strains the bundled database leaves out, counted as much as
    /// any named yeast (2 against 10.3 in the reference), and "yeast" gave the
    /// lager yeast first.
    ///
    /// The nodes are the usages that are not synonyms, each under its own parent
    /// when that is a node, as ``TaxonomyNormalizer`` makes them; named means
    /// having a vernacular name in any language. A cycle is not counted.
    public func subtreeCounts() -> [TaxonID: SubtreeCount] {
        var positions: [TaxonID: Int32] = [:]
        positions.reserveCapacity(usages.count)
        for (position, usage) in usages.enumerated() where usage.status != .synonym && positions[usage.id] == nil {
            positions[usage.id] = Int32(position)
        }
        var parent = [Int32](repeating: -1, count: usages.count)
        var pendingChildren = [Int32](repeating: 0, count: usages.count)
        for (id, position) in positions {
            guard let parentID = usages[Int(position)].parentID, parentID != id, let up = positions[parentID] else { continue }
            parent[Int(position)] = up
            pendingChildren[Int(up)] += 1
        }
        var descendants = [Int32](repeating: 0, count: usages.count)
        var named = [Int32](repeating: 0, count: usages.count)
        var isNamed = Set<TaxonID>()
        for name in vernacularNames where isNamed.insert(name.taxonID).inserted {
            if let position = positions[name.taxonID] { named[Int(position)] = 1 }
        }
        // Leaves first; a node is added to its parent once all its children were.
        var ready = positions.values.filter { pendingChildren[Int($0)] == 0 }
        while let position = ready.popLast() {
            let up = parent[Int(position)]
            guard up >= 0 else { continue }
            descendants[Int(up)] += descendants[Int(position)] + 1
            named[Int(up)] += named[Int(position)]
            pendingChildren[Int(up)] -= 1
            if pendingChildren[Int(up)] == 0 { ready.append(up) }
        }
        var counts: [TaxonID: SubtreeCount] = [:]
        for (id, position) in positions where descendants[Int(position)] > 0 || named[Int(position)] > 0 {
            counts[id] = SubtreeCount(descendants: descendants[Int(position)], named: named[Int(position)])
        }
        return counts
    }
}
