/// Parents, lineages, common ancestors, children and subtrees, once for both views.
extension TaxonomyTree {
    @inline(__always)
    func parentPosition(_ node: Int, _ view: View) -> Int32 {
        view == .main ? mainParents[node] : parents[node]
    }

    /// The node's parent in `view` (in the main view: its nearest ancestor of a main rank).
    public func parent(of node: Int, in view: View = .all) -> Int? {
        let parent = parentPosition(node, view)
        return parent < 0 ? nil : Int(parent)
    }

    /// Edges from the node's root in `view` (in the main view: the view nodes above it).
    public func depth(of node: Int, in view: View = .all) -> Int {
        view == .main ? Int(mainDepths[node]) : Int(depths[node])
    }

    /// The node's ancestors in `view`, root first, the node itself excluded. In
    /// the main view, a node outside the view gets its nearest main-rank
    /// ancestor's lineage, that one included (as taxonkit's `reformat` gives it).
    public func ancestors(of node: Int, in view: View = .all) -> [Int] {
        var result: [Int] = []
        result.reserveCapacity(depth(of: node, in: view))
        var current = parentPosition(node, view)
        while current >= 0 {
            result.append(Int(current))
            current = parentPosition(Int(current), view)
        }
        result.reverse()
        return result
    }

    /// The lowest common ancestor in `view` (a node is its own ancestor), by
    /// walking up from the deeper node: at most the tree's depth in steps, so no
    /// Euler-tour range-minimum structure is kept in memory. Nil when the two are
    /// under different roots.
    public func lowestCommonAncestor(_ a: Int, _ b: Int, in view: View = .all) -> Int? {
        var a = Int32(a), b = Int32(b)
        while depth(of: Int(a), in: view) > depth(of: Int(b), in: view) { a = parentPosition(Int(a), view) }
        while depth(of: Int(b), in: view) > depth(of: Int(a), in: view) { b = parentPosition(Int(b), view) }
        while a != b {
            a = parentPosition(Int(a), view)
            b = parentPosition(Int(b), view)
            if a < 0 || b < 0 { return nil }
        }
        return Int(a)
    }

    /// Whether `node` lies under `ancestor` in the whole tree (a node is under itself):
    /// a walk up from `node` to `ancestor`'s depth, so a search `--within` a clade checks
    /// each candidate in as many steps as the two are levels apart.
    public func isDescendant(_ node: Int, of ancestor: Int) -> Bool {
        var current = Int32(node)
        let top = depth(of: ancestor)
        while current >= 0, depth(of: Int(current)) > top { current = parents[Int(current)] }
        return current == Int32(ancestor)
    }

    /// How two nodes are related: the one comparison every `compare` answer is made of
    /// (protocol/PROTOCOL.md, `compare`).
    public struct Comparison: Sendable, Equatable {
        /// The lowest common ancestor on the source's tree.
        public var lca: Int
        /// The common ancestor on the main ranks: the deepest taxon of both main
        /// lineages (each node's view ancestors, and itself when it is of a main rank);
        /// ``lca`` when they share none (above every domain: NCBI's "cellular
        /// organisms", its root).
        public var mainLCA: Int
        /// Edges of the source's tree on the path between the two.
        public var distanceAll: Int
        /// Taxa of the two main lineages below ``mainLCA``: the distance in the
        /// eight-rank view, where a node outside it is not counted.
        public var distanceMain: Int
    }

    /// Nil when the two are under different roots (a forest of main ranks only).
    public func compare(_ a: Int, _ b: Int) -> Comparison? {
        guard let lca = lowestCommonAncestor(a, b) else { return nil }
        let main = mainLowestCommonAncestor(a, b)
        return Comparison(lca: lca, mainLCA: main ?? lca,
                          distanceAll: depth(of: a) + depth(of: b) - 2 * depth(of: lca),
                          distanceMain: mainCount(a) + mainCount(b) - 2 * (main.map(mainCount) ?? 0))
    }

    /// The deepest taxon on both main lineages, nil when they share none. Each node
    /// stands on the main ranks for itself, or (outside them) for its view parent. The
    /// view's parents skip a main-rank ancestor whose rank is not above the node's
    /// (taxonkit's `reformat`), so with such rank inversions this view's own common
    /// ancestor may lie above the nearest main-rank node over the source's.
    public func mainLowestCommonAncestor(_ a: Int, _ b: Int) -> Int? {
        guard let x = node(a, in: .main), let y = node(b, in: .main) else { return nil }
        return lowestCommonAncestor(x, y, in: .main)
    }

    /// The length of `node`'s main lineage: its view ancestors, and itself when it is of a main rank.
    private func mainCount(_ node: Int) -> Int { Int(mainDepths[node]) + (isInView(node) ? 1 : 0) }

    /// The roots of `view`, in name order.
    public func roots(in view: View = .all) -> [Int] {
        (view == .main ? mainRoots : allRoots).map(Int.init)
    }

    public func childCount(of node: Int, in view: View = .all) -> Int {
        let start = view == .main ? mainChildStart : childStart
        return Int(start[node + 1] - start[node])
    }

    /// The children of `node` in `view`, in name order (bytes of the name, then id).
    public func children(of node: Int, in view: View = .all) -> [Int] {
        let (start, list) = view == .main ? (mainChildStart, mainChildren) : (childStart, children)
        return list[Int(start[node])..<Int(start[node + 1])].map(Int.init)
    }

    /// One page of the children of `node` in name order, and how many there are.
    public func children(of node: Int, in view: View = .all, offset: Int, limit: Int) -> (page: [Int], total: Int) {
        let (start, list) = view == .main ? (mainChildStart, mainChildren) : (childStart, children)
        let first = Int(start[node]), end = Int(start[node + 1])
        let from = min(end, first + max(0, offset))
        return (list[from..<min(end, from + max(0, limit))].map(Int.init), end - first)
    }

    /// The subtree of `node` in `view` in preorder (children in name order), with
    /// each node's depth below `node`; nil when it has more than `limit` nodes (the
    /// walk stops there, having paid for `limit` nodes at most).
    public func subtree(of node: Int, in view: View = .all, limit: Int) -> (nodes: [Int], depths: [Int])? {
        let (start, list) = view == .main ? (mainChildStart, mainChildren) : (childStart, children)
        var nodes: [Int] = [], depths: [Int] = []
        var stack: [(Int32, Int32)] = [(Int32(node), 0)]
        while let (current, depth) = stack.popLast() {
            guard nodes.count < limit else { return nil }
            nodes.append(Int(current))
            depths.append(Int(depth))
            var child = Int(start[Int(current) + 1]) - 1
            while child >= Int(start[Int(current)]) {
                stack.append((list[child], depth + 1))
                child -= 1
            }
        }
        return (nodes, depths)
    }

    /// The Euler tour of `view` (docs/design/queries-and-algorithms.md §6): each
    /// node on entry and again after each child, children in name order, so a tree
    /// of N nodes has 2N − 1 entries (a forest: one tour per root, roots in name
    /// order). (node, depth in the view) pairs.
    public func eulerTour(in view: View) -> [(node: Int, depth: Int32)] {
        let (start, list) = view == .main ? (mainChildStart, mainChildren) : (childStart, children)
        var tour: [(node: Int, depth: Int32)] = []
        for root in roots(in: view) {
            var stack: [(node: Int, next: Int)] = [(root, Int(start[root]))]
            tour.append((root, Int32(depth(of: root, in: view))))
            while let (node, next) = stack.last {
                if next < Int(start[node + 1]) {
                    stack[stack.count - 1].next += 1
                    let child = Int(list[next])
                    tour.append((child, Int32(depth(of: child, in: view))))
                    stack.append((child, Int(start[child])))
                } else {
                    stack.removeLast()
                    if let parent = stack.last { tour.append((parent.node, Int32(depth(of: parent.node, in: view)))) }
                }
            }
        }
        return tour
    }
}

extension TaxonomyTree {
    /// The codes of the ranks that `rank` names in this tree: its own spelling, and
    /// every spelling on its level of ``RankOrder/levels`` (so `superkingdom` finds a
    /// 2025 release's domains); nil when no rank of the tree or of the order is
    /// spelled so. Case and surrounding blanks do not matter.
    public func codes(ofRank rank: String) -> Set<UInt8>? {
        let wanted = RankOrder.normalized(rank)
        let level = RankOrder.level(of: wanted)
        var codes = Set<UInt8>()
        for (code, name) in rankNames.enumerated() {
            let spelling = RankOrder.normalized(name)
            if spelling == wanted || (level != nil && RankOrder.level(of: spelling) == level) { codes.insert(UInt8(code)) }
        }
        guard !codes.isEmpty || level != nil || RankOrder.unordered.contains(wanted) else { return nil }
        return codes
    }

    /// One page of the descendants of `node` (itself excluded) whose rank is one of
    /// `ranks` (codes of ``codes(ofRank:)``; nil: every rank), on the whole tree in
    /// preorder with children in id order (ete4's `get_descendant_taxa` and taxonkit's
    /// `list` give that order), and how many there are in all: a range of the tree's
    /// preorder, its ranks scanned as bytes (NCBI's root at every rank: 2.6 M bytes).
    public func descendants(of node: Int, ranks: Set<UInt8>?, offset: Int, limit: Int) -> (page: [Int], total: Int) {
        let first = Int(preorderPosition[node]) + 1, end = Int(subtreeEnd[node])
        let offset = max(0, offset), limit = max(0, limit)
        guard let ranks else {
            let from = offset >= end - first ? end : first + offset
            return (preorder[from..<(limit >= end - from ? end : from + limit)].map(Int.init), end - first)
        }
        var wanted = [Bool](repeating: false, count: 256)
        for code in ranks { wanted[Int(code)] = true }
        var page: [Int] = []
        var total = 0
        preorderRanks.withUnsafeBufferPointer { codes in
            wanted.withUnsafeBufferPointer { wanted in
                for position in first..<end where wanted[Int(codes[position])] {
                    if total >= offset && page.count < limit { page.append(Int(preorder[position])) }
                    total += 1
                }
            }
        }
        return (page, total)
    }
}
