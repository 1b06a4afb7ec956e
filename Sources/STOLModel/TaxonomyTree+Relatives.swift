/// Closest relatives (docs/design/queries-and-algorithms.md §5): the `n` species
/// of a view nearest to a species in edges of that view, ties broken by
/// scientific name, then id. Every other species of the view is a candidate: its
/// siblings and cousins, a species above it, and a species below it (NCBI nests
/// a few species under species).
extension TaxonomyTree {
    /// One closest relative.
    public struct Relative: Sendable, Equatable {
        public var node: Int
        /// The common ancestor of the target and the relative, and its depth in the view.
        public var lca: Int
        public var lcaDepth: Int32
        public var distance: Int32

        public init(node: Int, lca: Int, lcaDepth: Int32, distance: Int32) {
            self.node = node
            self.lca = lca
            self.lcaDepth = lcaDepth
            self.distance = distance
        }
    }

    /// The answer of ``closestSpecies(of:n:maximumCandidates:in:)``.
    public struct RelativesAnswer: Sendable, Equatable {
        public var relatives: [Relative]
        /// Nodes looked at.
        public var examined: Int
        /// The guard stopped the scan before the answer was proven exact.
        public var truncated: Bool
    }

    @inline(__always)
    func precedes(_ a: Relative, _ b: Relative) -> Bool {
        a.distance != b.distance ? a.distance < b.distance : nameRank[a.node] < nameRank[b.node]
    }

    /// Inserts `relative` into `best` (sorted, at most `n`); false when it cannot enter.
    @inline(__always)
    func offer(_ relative: Relative, to best: inout [Relative], n: Int) -> Bool {
        if best.count >= n, let worst = best.last, !precedes(relative, worst) { return false }
        var slot = best.count
        while slot > 0 && precedes(relative, best[slot - 1]) { slot -= 1 }
        best.insert(relative, at: slot)
        if best.count > n { best.removeLast() }
        return true
    }

    /// The `n` closest species to `target` in `view`, exact: below the target
    /// first, then up its ancestors only while a farther one could still beat the
    /// n-th candidate.
    ///
    /// Under each ancestor the nodes are examined level by level (every species one
    /// level down is at the same distance), and the scan stops at the first level
    /// that cannot beat the n-th candidate. The first level is the ancestor's
    /// children in name order, so in a genus of 10,000 species the scan stops after
    /// the first n of them. After `maximumCandidates` nodes it stops and says the
    /// answer is truncated.
    public func closestSpecies(of target: Int, n: Int, maximumCandidates: Int = .max,
                               in view: View) -> RelativesAnswer {
        var answer = RelativesAnswer(relatives: [], examined: 0, truncated: false)
        guard n > 0 else { return answer }
        let (start, list) = view == .main ? (mainChildStart, mainChildren) : (childStart, children)
        var best: [Relative] = []
        best.reserveCapacity(n + 1)
        let targetDepth = depth(of: target, in: view)
        var frontier: [Int32] = [], next: [Int32] = []
        var previous = -1
        var ancestor = target
        while true {
            let ancestorDepth = Int32(depth(of: ancestor, in: view))
            let up = Int32(targetDepth) - ancestorDepth
            if up > 0 {
                if best.count >= n, let worst = best.last, up > worst.distance { break }
                if isSpecies(ancestor, in: view) {
                    answer.examined += 1
                    _ = offer(Relative(node: ancestor, lca: ancestor, lcaDepth: ancestorDepth, distance: up), to: &best, n: n)
                    // The guard counts a species above the target too (it let one more
                    // node through when the limit fell on it: seed 1774627262).
                    if answer.examined >= maximumCandidates {
                        answer.truncated = true
                        answer.relatives = best
                        return answer
                    }
                }
            }
            frontier.removeAll(keepingCapacity: true)
            for child in list[Int(start[ancestor])..<Int(start[ancestor + 1])] where Int(child) != previous {
                frontier.append(child)
            }
            var level: Int32 = 1
            levels: while !frontier.isEmpty {
                let distance = up + level
                if best.count >= n, let worst = best.last, distance > worst.distance { break }
                next.removeAll(keepingCapacity: true)
                for candidate in frontier {
                    let node = Int(candidate)
                    answer.examined += 1
                    if isSpecies(node, in: view),
                       !offer(Relative(node: node, lca: ancestor, lcaDepth: ancestorDepth, distance: distance), to: &best, n: n),
                       level == 1 {
                        // The first level comes in name order: no later species of it can
                        // enter, and nothing deeper is as near as the n-th.
                        break levels
                    }
                    if answer.examined >= maximumCandidates {
                        answer.truncated = true
                        answer.relatives = best
                        return answer
                    }
                    next.append(contentsOf: list[Int(start[node])..<Int(start[node + 1])])
                }
                swap(&frontier, &next)
                level += 1
            }
            guard let parent = parent(of: ancestor, in: view) else { break }
            previous = ancestor
            ancestor = parent
        }
        answer.relatives = best
        return answer
    }
}

extension TaxonomyTree {
    /// Precomputed species lists that answer ``closestSpecies(of:n:maximumCandidates:in:)``
    /// for every species of a large tree (the pipeline's `top_n_relatives`) in
    /// time independent of the size of the genus: the same rule and order, an
    /// index over the same tree (the tests check that the two agree on random trees).
    ///
    /// For every node `a` and relative depth `r ≥ 1` it keeps the species `r`
    /// levels below `a`, sorted by scientific name then id — the order in which
    /// candidates at one distance are ranked. A query climbs the target's
    /// ancestors, reads each ancestor's lists in that order and stops at the first
    /// candidate that cannot enter the top n, instead of scanning whole subtrees.
    public struct RelativesIndex: Sendable {
        public let tree: TaxonomyTree
        public let view: View
        /// Preorder interval of each node of the view (to skip the subtree already searched).
        private let enter: [Int32]
        private let exit: [Int32]
        /// First bucket of each node; node `a`'s bucket for depth `r` is `bucketBase[a] + r - 1`.
        private let bucketBase: [Int32]
        /// Number of buckets of each node (the deepest species below it, relative).
        private let height: [Int32]
        /// Start of each bucket in `entries` (one more element than there are buckets).
        private let bucketStart: [Int32]
        /// Species, bucket after bucket, each bucket in (name, id) order.
        private let entries: [Int32]

        public init(_ tree: TaxonomyTree, view: View = .main) {
            self.tree = tree
            self.view = view
            let count = tree.count
            var species: [Int32] = []
            tree.forEachInNameOrder { node in if tree.isSpecies(node, in: view) { species.append(Int32(node)) } }
            var enter = [Int32](repeating: -1, count: count), exit = [Int32](repeating: -1, count: count)
            var clock: Int32 = 0
            for root in tree.roots(in: view) {
                var stack: [(node: Int, expanded: Bool)] = [(root, false)]
                while let (node, expanded) = stack.popLast() {
                    if expanded {
                        exit[node] = clock
                        continue
                    }
                    enter[node] = clock
                    clock += 1
                    stack.append((node, true))
                    for child in tree.children(of: node, in: view).reversed() { stack.append((child, false)) }
                }
            }
            var height = [Int32](repeating: 0, count: count)
            for node in species {
                var ancestor = Int(tree.parentPosition(Int(node), view))
                var relative: Int32 = 1
                while ancestor >= 0 {
                    if height[ancestor] < relative { height[ancestor] = relative }
                    ancestor = Int(tree.parentPosition(ancestor, view))
                    relative += 1
                }
            }
            var bucketBase = [Int32](repeating: 0, count: count)
            var buckets = 0
            for node in 0..<count {
                bucketBase[node] = Int32(buckets)
                buckets += Int(height[node])
            }
            var bucketStart = [Int32](repeating: 0, count: buckets + 1)
            for node in species {
                var ancestor = Int(tree.parentPosition(Int(node), view))
                var relative = 1
                while ancestor >= 0 {
                    bucketStart[Int(bucketBase[ancestor]) + relative] += 1
                    ancestor = Int(tree.parentPosition(ancestor, view))
                    relative += 1
                }
            }
            for bucket in 0..<buckets { bucketStart[bucket + 1] += bucketStart[bucket] }
            var fill = bucketStart
            var entries = [Int32](repeating: 0, count: Int(bucketStart[buckets]))
            // In (name, id) order, so that every bucket comes out sorted.
            for node in species {
                var ancestor = Int(tree.parentPosition(Int(node), view))
                var relative = 1
                while ancestor >= 0 {
                    let bucket = Int(bucketBase[ancestor]) + relative - 1
                    entries[Int(fill[bucket])] = node
                    fill[bucket] += 1
                    ancestor = Int(tree.parentPosition(ancestor, view))
                    relative += 1
                }
            }
            self.enter = enter
            self.exit = exit
            self.bucketBase = bucketBase
            self.height = height
            self.bucketStart = bucketStart
            self.entries = entries
        }

        /// The same answer as `tree.closestSpecies(of: target, n: n, in: view).relatives`.
        public func closestRelatives(of target: Int, n: Int) -> [Relative] {
            guard n > 0 else { return [] }
            var best: [Relative] = []
            best.reserveCapacity(n + 1)
            let targetDepth = Int32(tree.depth(of: target, in: view))
            var previous = -1
            var ancestor = target
            while ancestor >= 0 {
                let ancestorDepth = Int32(tree.depth(of: ancestor, in: view))
                let up = targetDepth - ancestorDepth
                if up > 0 {
                    if best.count >= n, let worst = best.last, up > worst.distance { break }
                    if tree.isSpecies(ancestor, in: view) {
                        _ = tree.offer(Relative(node: ancestor, lca: ancestor, lcaDepth: ancestorDepth, distance: up),
                                       to: &best, n: n)
                    }
                }
                let skipStart = previous >= 0 ? enter[previous] : -1, skipEnd = previous >= 0 ? exit[previous] : -1
                let base = Int(bucketBase[ancestor])
                for relative in 0..<Int(height[ancestor]) {
                    let distance = up + Int32(relative) + 1
                    if best.count >= n, let worst = best.last, distance > worst.distance { break }
                    let bucket = base + relative
                    for position in Int(bucketStart[bucket])..<Int(bucketStart[bucket + 1]) {
                        let candidate = Int(entries[position])
                        if enter[candidate] >= skipStart && enter[candidate] < skipEnd { continue }
                        let entry = Relative(node: candidate, lca: ancestor, lcaDepth: ancestorDepth, distance: distance)
                        if !tree.offer(entry, to: &best, n: n) { break }
                    }
                }
                previous = ancestor
                ancestor = Int(tree.parentPosition(ancestor, view))
            }
            return best
        }
    }
}
