/// The taxonomy tree in compact arrays, for the algorithms that must never touch
/// disk: depth, lowest common ancestor, Euler tour and closest relatives.
///
/// The pipeline uses it to precompute `euler_tour`, `first_occurrence` and
/// `top_n_relatives` (``RelativesIndex``). The taxonomy server does not use it: it
/// answers from ``CompactTaxonTree`` (and ``FullTaxonTree`` for the whole tree),
/// which applies the same rule and order; the tests check that the precomputed and
/// computed answers agree (docs/design/queries-and-algorithms.md §2, §5).
public struct TaxonTree: Sendable {
    public struct Node: Sendable, Equatable {
        public var id: TaxonID
        public var parentID: TaxonID?
        public var rank: TaxonRank
        public var scientificName: String

        public init(id: TaxonID, parentID: TaxonID?, rank: TaxonRank, scientificName: String) {
            self.id = id
            self.parentID = parentID
            self.rank = rank
            self.scientificName = scientificName
        }
    }

    public enum TreeError: Error, Equatable {
        case duplicateID(TaxonID)
        case unknownParent(child: TaxonID, parent: TaxonID)
        case cycle(involving: TaxonID)
    }

    /// Nodes in depth-first preorder (children sorted by scientific name, then id).
    public let nodes: [Node]
    /// Index of each node's parent in `nodes`, -1 for roots.
    public let parentIndex: [Int32]
    /// Edges from the root of the node's tree (roots have depth 0).
    public let depth: [Int32]
    /// One past the last preorder index of each node's subtree.
    public let subtreeEnd: [Int32]
    private let indexByID: [TaxonID: Int32]

    public init(nodes unordered: [Node]) throws(TreeError) {
        var index: [TaxonID: Int] = [:]
        index.reserveCapacity(unordered.count)
        for (position, node) in unordered.enumerated() {
            guard index.updateValue(position, forKey: node.id) == nil else { throw .duplicateID(node.id) }
        }
        var children = [[Int]](repeating: [], count: unordered.count)
        var roots: [Int] = []
        for (position, node) in unordered.enumerated() {
            if let parent = node.parentID {
                guard let parentPosition = index[parent] else { throw .unknownParent(child: node.id, parent: parent) }
                children[parentPosition].append(position)
            } else {
                roots.append(position)
            }
        }
        let order: (Int, Int) -> Bool = { lhs, rhs in
            let a = unordered[lhs], b = unordered[rhs]
            return a.scientificName != b.scientificName ? a.scientificName < b.scientificName : a.id < b.id
        }
        roots.sort(by: order)
        for position in children.indices { children[position].sort(by: order) }

        var preorder: [Int] = []
        preorder.reserveCapacity(unordered.count)
        var newIndex = [Int32](repeating: -1, count: unordered.count)
        var depth = [Int32](repeating: 0, count: unordered.count)
        var end = [Int32](repeating: 0, count: unordered.count)
        var parentIndex = [Int32](repeating: -1, count: unordered.count)
        // Iterative DFS: (old position, depth, parent's new index, children visited?).
        var stack: [(Int, Int32, Int32, Bool)] = roots.reversed().map { ($0, 0, -1, false) }
        while let (position, level, parent, expanded) = stack.popLast() {
            if expanded {
                end[Int(newIndex[position])] = Int32(preorder.count)
                continue
            }
            let assigned = Int32(preorder.count)
            newIndex[position] = assigned
            preorder.append(position)
            depth[Int(assigned)] = level
            parentIndex[Int(assigned)] = parent
            stack.append((position, level, parent, true))
            for child in children[position].reversed() { stack.append((child, level + 1, assigned, false)) }
        }
        guard preorder.count == unordered.count else {
            let unreached = unordered.indices.first { newIndex[$0] < 0 }!
            throw .cycle(involving: unordered[unreached].id)
        }
        self.nodes = preorder.map { unordered[$0] }
        self.parentIndex = parentIndex
        self.depth = depth
        self.subtreeEnd = end
        var byID: [TaxonID: Int32] = [:]
        byID.reserveCapacity(nodes.count)
        for (position, node) in nodes.enumerated() { byID[node.id] = Int32(position) }
        self.indexByID = byID
    }

    public var count: Int { nodes.count }

    public func index(of id: TaxonID) -> Int? { indexByID[id].map(Int.init) }

    /// Whether `ancestor` is `node` or one of its ancestors (preorder intervals).
    public func isAncestor(_ ancestor: Int, of node: Int) -> Bool {
        ancestor <= node && node < Int(subtreeEnd[ancestor])
    }

    /// Lowest common ancestor by walking up from the deeper node (O(depth) ≤ 7 in
    /// an eight-rank tree). Nil when the two are in different root trees.
    public func lowestCommonAncestor(_ a: Int, _ b: Int) -> Int? {
        parentPointerLCA(a, b, parentIndex: parentIndex, depth: depth)
    }

    /// The Euler tour of docs/design/queries-and-algorithms.md §6: each node is recorded on entry and again
    /// after each child, so the tour of a tree of N nodes has 2N − 1 entries
    /// (forests: per tree). Returns (node index, depth) pairs.
    public func eulerTour() -> [(node: Int, depth: Int32)] {
        var tour: [(Int, Int32)] = []
        tour.reserveCapacity(2 * nodes.count)
        var childrenOf = [[Int]](repeating: [], count: nodes.count)
        var roots: [Int] = []
        for index in nodes.indices {
            let parent = Int(parentIndex[index])
            if parent >= 0 { childrenOf[parent].append(index) } else { roots.append(index) }
        }
        for root in roots {
            // (node, next child position)
            var stack: [(Int, Int)] = [(root, 0)]
            tour.append((root, depth[root]))
            while !stack.isEmpty {
                let (node, next) = stack[stack.count - 1]
                if next < childrenOf[node].count {
                    stack[stack.count - 1].1 += 1
                    let child = childrenOf[node][next]
                    tour.append((child, depth[child]))
                    stack.append((child, 0))
                } else {
                    stack.removeLast()
                    if let parent = stack.last { tour.append((parent.0, depth[parent.0])) }
                }
            }
        }
        return tour
    }

    /// One closest relative.
    public struct Relative: Sendable, Equatable {
        public var node: Int
        public var lca: Int
        public var lcaDepth: Int32
        public var distance: Int32
    }

    /// The `n` closest species to the species at `target`, by taxonomic distance
    /// `depth(a) + depth(b) − 2·depth(lca)`, ties broken by scientific name, then id
    /// (docs/design/queries-and-algorithms.md §5). Exact: climbs ancestors only while a farther ancestor
    /// could still beat the current n-th candidate. `maximumCandidates` bounds the
    /// work (the guard of the computed mode).
    public func closestRelatives(of target: Int, n: Int, maximumCandidates: Int = .max) -> [Relative] {
        guard n > 0 else { return [] }
        var best: [Relative] = []
        var examined = 0
        var previous = target
        var ancestor = Int(parentIndex[target])
        let targetDepth = depth[target]
        while ancestor >= 0 {
            let ancestorDepth = depth[ancestor]
            // Any species below `ancestor` but outside `previous` is at least this far.
            let lowerBound = targetDepth - ancestorDepth + 1
            if best.count >= n, let worst = best.last, lowerBound > worst.distance { break }
            var candidate = ancestor + 1
            let end = Int(subtreeEnd[ancestor])
            while candidate < end {
                if candidate == previous {
                    candidate = Int(subtreeEnd[previous])
                    continue
                }
                if nodes[candidate].rank == .species {
                    examined += 1
                    let distance = targetDepth + depth[candidate] - 2 * ancestorDepth
                    insert(Relative(node: candidate, lca: ancestor, lcaDepth: ancestorDepth, distance: distance),
                           into: &best, limit: n)
                    if examined >= maximumCandidates { return best }
                }
                candidate += 1
            }
            previous = ancestor
            ancestor = Int(parentIndex[ancestor])
        }
        return best
    }

    private func precedes(_ a: Relative, _ b: Relative) -> Bool {
        if a.distance != b.distance { return a.distance < b.distance }
        let nameA = nodes[a.node].scientificName, nameB = nodes[b.node].scientificName
        if nameA != nameB { return nameA < nameB }
        return nodes[a.node].id < nodes[b.node].id
    }

    private func insert(_ relative: Relative, into best: inout [Relative], limit: Int) {
        if best.count >= limit, let worst = best.last, !precedes(relative, worst) { return }
        var position = best.count
        while position > 0 && precedes(relative, best[position - 1]) { position -= 1 }
        best.insert(relative, at: position)
        if best.count > limit { best.removeLast() }
    }
}

extension TaxonTree {
    /// Precomputed species lists that answer ``TaxonTree/closestRelatives(of:n:maximumCandidates:)``
    /// for every species of a large tree (the pipeline's `top_n_relatives`) in
    /// time independent of the size of the genus.
    ///
    /// For every node `a` and relative depth `r ≥ 1` it keeps the species `r`
    /// levels below `a`, sorted by scientific name then id — the order in which
    /// candidates at one distance are ranked. A query climbs the target's
    /// ancestors as the tree's own method does, but reads each ancestor's lists in
    /// that order and stops at the first candidate that cannot enter the top n,
    /// instead of scanning the whole subtree. The answer is the same exact top n
    /// (distance, then name, then id), so it equals the tree's method; the tests
    /// check that on random trees.
    public struct RelativesIndex: Sendable {
        public let tree: TaxonTree
        /// Position of each species in the (scientific name, id) order; -1 for other ranks.
        private let order: [Int32]
        /// First bucket of each node; node `a`'s bucket for depth `r` is `bucketBase[a] + r - 1`.
        private let bucketBase: [Int32]
        /// Number of buckets of each node (the deepest species below it, relative).
        private let height: [Int32]
        /// Start of each bucket in `entries` (one more element than there are buckets).
        private let bucketStart: [Int32]
        /// Species node indices, bucket after bucket, each bucket in (name, id) order.
        private let entries: [Int32]

        public init(_ tree: TaxonTree) {
            self.tree = tree
            let count = tree.count
            var species: [Int32] = []
            for index in 0..<count where tree.nodes[index].rank == .species { species.append(Int32(index)) }
            let nodes = tree.nodes
            species.sort { lhs, rhs in
                let a = nodes[Int(lhs)], b = nodes[Int(rhs)]
                return a.scientificName != b.scientificName ? a.scientificName < b.scientificName : a.id < b.id
            }
            var order = [Int32](repeating: -1, count: count)
            for (position, node) in species.enumerated() { order[Int(node)] = Int32(position) }

            var height = [Int32](repeating: 0, count: count)
            for node in species {
                var ancestor = Int(tree.parentIndex[Int(node)])
                var relative: Int32 = 1
                while ancestor >= 0 {
                    if height[ancestor] < relative { height[ancestor] = relative }
                    ancestor = Int(tree.parentIndex[ancestor])
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
                var ancestor = Int(tree.parentIndex[Int(node)])
                var relative = 1
                while ancestor >= 0 {
                    bucketStart[Int(bucketBase[ancestor]) + relative - 1 + 1] += 1
                    ancestor = Int(tree.parentIndex[ancestor])
                    relative += 1
                }
            }
            for bucket in 0..<buckets { bucketStart[bucket + 1] += bucketStart[bucket] }
            var fill = bucketStart
            var entries = [Int32](repeating: 0, count: Int(bucketStart[buckets]))
            // In (name, id) order, so that every bucket comes out sorted.
            for node in species {
                var ancestor = Int(tree.parentIndex[Int(node)])
                var relative = 1
                while ancestor >= 0 {
                    let bucket = Int(bucketBase[ancestor]) + relative - 1
                    entries[Int(fill[bucket])] = node
                    fill[bucket] += 1
                    ancestor = Int(tree.parentIndex[ancestor])
                    relative += 1
                }
            }
            self.order = order
            self.bucketBase = bucketBase
            self.height = height
            self.bucketStart = bucketStart
            self.entries = entries
        }

        /// The same answer as `tree.closestRelatives(of: target, n: n)`.
        public func closestRelatives(of target: Int, n: Int) -> [Relative] {
            guard n > 0 else { return [] }
            var best: [Relative] = []
            best.reserveCapacity(n + 1)
            let targetDepth = tree.depth[target]
            var previous = target
            var ancestor = Int(tree.parentIndex[target])
            while ancestor >= 0 {
                let ancestorDepth = tree.depth[ancestor]
                let lowerBound = targetDepth - ancestorDepth + 1
                if best.count >= n, let worst = best.last, lowerBound > worst.distance { break }
                let skipStart = previous, skipEnd = Int(tree.subtreeEnd[previous])
                let base = Int(bucketBase[ancestor])
                for relative in 0..<Int(height[ancestor]) {
                    let distance = lowerBound + Int32(relative)
                    if best.count >= n, let worst = best.last, distance > worst.distance { break }
                    let bucket = base + relative
                    var position = Int(bucketStart[bucket])
                    let end = Int(bucketStart[bucket + 1])
                    while position < end {
                        let candidate = Int(entries[position])
                        position += 1
                        if candidate >= skipStart && candidate < skipEnd { continue }
                        let relativeEntry = Relative(node: candidate, lca: ancestor, lcaDepth: ancestorDepth,
                                                     distance: distance)
                        if best.count >= n, let worst = best.last, !precedes(relativeEntry, worst) { break }
                        var slot = best.count
                        while slot > 0 && precedes(relativeEntry, best[slot - 1]) { slot -= 1 }
                        best.insert(relativeEntry, at: slot)
                        if best.count > n { best.removeLast() }
                    }
                }
                previous = ancestor
                ancestor = Int(tree.parentIndex[ancestor])
            }
            return best
        }

        @inline(__always)
        private func precedes(_ a: Relative, _ b: Relative) -> Bool {
            a.distance != b.distance ? a.distance < b.distance : order[a.node] < order[b.node]
        }
    }
}
