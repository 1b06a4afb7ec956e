/// The whole taxonomy tree as flat integer arrays, small enough for a server to
/// keep the full NCBI tree (2.3 M taxa) in memory in about 70 MB.
///
/// ``TaxonTree`` keeps every scientific name as a `String` (over 200 MB for NCBI);
/// the server needs names only to break ties between relatives at the same
/// distance, so this tree stores each taxon's position in the (scientific name,
/// id) order instead. Given the same order, ``closestRelatives(of:n:maximumCandidates:)``
/// returns exactly what ``TaxonTree/closestRelatives(of:n:maximumCandidates:)`` and
/// the pipeline's ``TaxonTree/RelativesIndex`` (which write `top_n_relatives`)
/// return: the tests check both on random trees and on every species of a built
/// database.
///
/// Nodes are numbered in depth-first preorder with children in name order, so a
/// subtree is a contiguous range and a page of children in name order is a walk
/// over siblings, without sorting.
public struct CompactTaxonTree: Sendable {
    public enum BuildError: Error, Equatable {
        case inconsistentInput(String)
        case unknownParent(child: TaxonID, parent: TaxonID)
        case cycle
    }

    /// Ids in ascending order (the lookup table).
    private let sortedIDs: [TaxonID]
    /// Preorder index of `sortedIDs[i]`.
    private let preorderOfSorted: [Int32]
    /// Position in `sortedIDs` of each preorder node (gives its id).
    private let sortedOfPreorder: [Int32]
    /// Preorder index of each node's parent, -1 for roots.
    public let parentIndex: [Int32]
    /// Edges from the node's root.
    public let depth: [UInt8]
    /// One past the last preorder index of each node's subtree.
    public let subtreeEnd: [Int32]
    /// ``TaxonRank/level`` of each node.
    public let rankLevel: [UInt8]
    /// Position of each node in the (scientific name, id) order: the tie-break.
    public let nameRank: [Int32]
    /// Number of direct children of each node (a page of a large genus needs its
    /// total without walking every sibling).
    public let childCounts: [Int32]
    /// Preorder indices of the roots, in name order.
    public let roots: [Int32]

    /// - Parameters:
    ///   - ids: every taxon id, ascending.
    ///   - parentIDs: each taxon's parent id, 0 for a root (ids are positive; a
    ///     non-optional array keeps the load of 2.3 M taxa 18 MB smaller).
    ///   - rankLevels: each taxon's ``TaxonRank/level``.
    ///   - nameOrder: positions in `ids`, sorted by (scientific name, id).
    public init(ids: [TaxonID], parentIDs: [TaxonID], rankLevels: [UInt8], nameOrder: [Int32]) throws(BuildError) {
        let count = ids.count
        guard parentIDs.count == count, rankLevels.count == count, nameOrder.count == count else {
            throw .inconsistentInput("arrays of different lengths")
        }
        for i in 1..<max(count, 1) where ids[i - 1] >= ids[i] {
            throw .inconsistentInput("ids not strictly ascending at \(ids[i])")
        }
        // Parent positions (in `ids`), by binary search.
        var parentPosition = [Int32](repeating: -1, count: count)
        for i in 0..<count {
            let parent = parentIDs[i]
            guard parent != 0 else { continue }
            guard let position = ids.position(ofSorted: parent) else { throw .unknownParent(child: ids[i], parent: parent) }
            parentPosition[i] = Int32(position)
        }
        // Children lists (CSR), filled in name order so that each list comes out sorted.
        var childStart = [Int32](repeating: 0, count: count + 1)
        for i in 0..<count where parentPosition[i] >= 0 { childStart[Int(parentPosition[i]) + 1] += 1 }
        for i in 0..<count { childStart[i + 1] += childStart[i] }
        var fill = childStart
        var children = [Int32](repeating: 0, count: Int(childStart[count]))
        var roots: [Int32] = []
        var nameRankOfSorted = [Int32](repeating: 0, count: count)
        for (rank, position) in nameOrder.enumerated() {
            let i = Int(position)
            nameRankOfSorted[i] = Int32(rank)
            let parent = Int(parentPosition[i])
            if parent < 0 {
                roots.append(position)
            } else {
                children[Int(fill[parent])] = position
                fill[parent] += 1
            }
        }
        fill = []
        // Iterative preorder over positions in `ids`.
        var preorderOfSorted = [Int32](repeating: -1, count: count)
        var sortedOfPreorder = [Int32](repeating: 0, count: count)
        var parentIndex = [Int32](repeating: -1, count: count)
        var depth = [UInt8](repeating: 0, count: count)
        var subtreeEnd = [Int32](repeating: 0, count: count)
        var next: Int32 = 0
        // (position, parent preorder index, depth, expanded)
        var stack: [(Int32, Int32, UInt8, Bool)] = roots.reversed().map { ($0, -1, 0, false) }
        while let (position, parent, level, expanded) = stack.popLast() {
            let i = Int(position)
            if expanded {
                subtreeEnd[Int(preorderOfSorted[i])] = next
                continue
            }
            let assigned = next
            next += 1
            preorderOfSorted[i] = assigned
            sortedOfPreorder[Int(assigned)] = position
            parentIndex[Int(assigned)] = parent
            depth[Int(assigned)] = level
            stack.append((position, parent, level, true))
            var child = Int(childStart[i + 1]) - 1
            while child >= Int(childStart[i]) {
                stack.append((children[child], assigned, level &+ 1, false))
                child -= 1
            }
        }
        guard Int(next) == count else { throw .cycle }
        var rankLevel = [UInt8](repeating: 0, count: count)
        var nameRank = [Int32](repeating: 0, count: count)
        var childCounts = [Int32](repeating: 0, count: count)
        for node in 0..<count {
            let i = Int(sortedOfPreorder[node])
            rankLevel[node] = rankLevels[i]
            nameRank[node] = nameRankOfSorted[i]
            childCounts[node] = childStart[i + 1] - childStart[i]
        }
        self.sortedIDs = ids
        self.preorderOfSorted = preorderOfSorted
        self.sortedOfPreorder = sortedOfPreorder
        self.parentIndex = parentIndex
        self.depth = depth
        self.subtreeEnd = subtreeEnd
        self.rankLevel = rankLevel
        self.nameRank = nameRank
        self.childCounts = childCounts
        self.roots = roots.map { preorderOfSorted[Int($0)] }
    }

    public var count: Int { sortedIDs.count }

    /// The preorder index of `id`, nil when the tree has no such taxon.
    public func index(of id: TaxonID) -> Int? {
        sortedIDs.position(ofSorted: id).map { Int(preorderOfSorted[$0]) }
    }

    public func id(at index: Int) -> TaxonID { sortedIDs[Int(sortedOfPreorder[index])] }

    public func isSpecies(_ index: Int) -> Bool { rankLevel[index] == Self.speciesLevel }

    private static let speciesLevel = UInt8(TaxonRank.species.level)

    /// The direct children of `index` in (scientific name, id) order: `limit` of
    /// them from `offset`, and how many there are in all.
    public func children(of index: Int, offset: Int, limit: Int) -> (page: [Int], total: Int) {
        var page: [Int] = []
        var position = 0
        var child = index + 1
        let end = Int(subtreeEnd[index])
        while child < end && page.count < limit {
            if position >= offset { page.append(child) }
            position += 1
            child = Int(subtreeEnd[child])
        }
        return (page, Int(childCounts[index]))
    }

    /// The number of direct children of `index`.
    public func childCount(of index: Int) -> Int { Int(childCounts[index]) }

    /// Lowest common ancestor by walking up from the deeper node; nil for different roots.
    public func lowestCommonAncestor(_ a: Int, _ b: Int) -> Int? {
        parentPointerLCA(a, b, parentIndex: parentIndex, depth: depth)
    }

    /// The answer of ``closestRelatives(of:n:maximumCandidates:)``.
    public struct RelativesAnswer: Sendable, Equatable {
        public var relatives: [TaxonTree.Relative]
        /// Species looked at.
        public var examined: Int
        /// The guard stopped the scan before the answer was proven exact.
        public var truncated: Bool
    }

    /// The `n` closest species to the species at `target`, by distance, then
    /// scientific name, then id — the exact answer of
    /// ``TaxonTree/closestRelatives(of:n:maximumCandidates:)``: climb the
    /// ancestors only while a farther one could still beat the n-th candidate.
    ///
    /// Within one ancestor the species are examined level by level (every
    /// species one level down is at the same distance), and the scan stops at
    /// the first level that cannot beat the n-th candidate. So a species whose
    /// family has 100,000 species in its genera, but enough siblings right under
    /// the family, never looks at the genera's species (the tree's own method
    /// scans the whole subtree). After `maximumCandidates` species it stops and
    /// says the answer is truncated.
    public func closestRelatives(of target: Int, n: Int, maximumCandidates: Int = .max) -> RelativesAnswer {
        var answer = RelativesAnswer(relatives: [], examined: 0, truncated: false)
        guard n > 0 else { return answer }
        var best: [TaxonTree.Relative] = []
        best.reserveCapacity(n + 1)
        var previous = target
        var ancestor = Int(parentIndex[target])
        let targetDepth = Int32(depth[target])
        let species = Self.speciesLevel
        while ancestor >= 0 {
            let ancestorDepth = Int32(depth[ancestor])
            let lowerBound = targetDepth - ancestorDepth + 1
            if best.count >= n, let worst = best.last, lowerBound > worst.distance { break }
            let end = Int(subtreeEnd[ancestor])
            var level: Int32 = 1
            while true {
                let distance = lowerBound + level - 1
                if best.count >= n, let worst = best.last, distance > worst.distance { break }
                let levelDepth = UInt8(clamping: ancestorDepth + level)
                var deeper = false
                var candidate = ancestor + 1
                while candidate < end {
                    if candidate == previous {
                        candidate = Int(subtreeEnd[previous])
                        continue
                    }
                    let nodeDepth = depth[candidate]
                    if nodeDepth < levelDepth {
                        candidate += 1
                        continue
                    }
                    // At this level: examine it, skip what lies below.
                    let next = Int(subtreeEnd[candidate])
                    if next > candidate + 1 { deeper = true }
                    if rankLevel[candidate] == species {
                        answer.examined += 1
                        let relative = TaxonTree.Relative(node: candidate, lca: ancestor, lcaDepth: ancestorDepth,
                                                          distance: distance)
                        if best.count < n || precedes(relative, best[best.count - 1]) {
                            var slot = best.count
                            while slot > 0 && precedes(relative, best[slot - 1]) { slot -= 1 }
                            best.insert(relative, at: slot)
                            if best.count > n { best.removeLast() }
                        }
                        if answer.examined >= maximumCandidates {
                            answer.truncated = true
                            answer.relatives = best
                            return answer
                        }
                    }
                    candidate = next
                }
                if !deeper { break }
                level += 1
            }
            previous = ancestor
            ancestor = Int(parentIndex[ancestor])
        }
        answer.relatives = best
        return answer
    }

    @inline(__always)
    private func precedes(_ a: TaxonTree.Relative, _ b: TaxonTree.Relative) -> Bool {
        a.distance != b.distance ? a.distance < b.distance : nameRank[a.node] < nameRank[b.node]
    }
}

extension CompactTaxonTree {
    /// Builds the compact form of a ``TaxonTree`` (names ordered as Swift orders
    /// them, which is what the pipeline uses). For tests and small trees.
    public init(_ tree: TaxonTree) throws(BuildError) {
        let sorted = tree.nodes.sorted { $0.id < $1.id }
        let byName = sorted.indices.sorted { lhs, rhs in
            let a = sorted[lhs], b = sorted[rhs]
            return a.scientificName != b.scientificName ? a.scientificName < b.scientificName : a.id < b.id
        }
        try self.init(ids: sorted.map(\.id), parentIDs: sorted.map { $0.parentID ?? 0 },
                      rankLevels: sorted.map { UInt8($0.rank.level) }, nameOrder: byName.map { Int32($0) })
    }
}
