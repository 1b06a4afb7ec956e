/// The taxonomy tree in compact arrays, for the algorithms that must never touch
/// disk: depth, lowest common ancestor, Euler tour and closest relatives.
///
/// The pipeline uses it to precompute `euler_tour`, `first_occurrence` and
/// `top_n_relatives`; the taxonomy server uses the same type to answer on demand,
/// so the precomputed and computed answers agree by construction.
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
        var x = a, y = b
        while depth[x] > depth[y] { x = Int(parentIndex[x]) }
        while depth[y] > depth[x] { y = Int(parentIndex[y]) }
        while x != y {
            let px = Int(parentIndex[x]), py = Int(parentIndex[y])
            if px < 0 || py < 0 { return nil }
            x = px
            y = py
        }
        return x
    }

    /// The Euler tour of seeds/000 §3.6: each node is recorded on entry and again
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
    /// (seeds/001 §12.3). Exact: climbs ancestors only while a farther ancestor
    /// could still beat the current n-th candidate. `maximumCandidates` bounds the
    /// work (the seeds' guard for the computed mode).
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
