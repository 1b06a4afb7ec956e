/// The smallest tree that connects a set of taxa (ete4's `get_topology`, Open Tree's
/// `induced_subtree`).
extension TaxonomyTree {
    /// An induced tree in preorder: each node with its depth below the top (a node's
    /// parent is the last one before it a level up) and whether it was asked for.
    public struct InducedTree: Sendable, Equatable {
        /// Nodes of the tree; `nil` for the unnamed top that joins several roots of the
        /// main view (a forest of domains), which only that case has.
        public var nodes: [Int?]
        public var depths: [Int]
        public var requested: [Bool]
    }

    /// The taxa of `nodes` with every ancestor that joins them, as ete4's
    /// `get_topology` builds it: all their lineages in `view`; unless
    /// `keepSingleChildren` (ete4's `intermediate_nodes`), every node that was not
    /// asked for and has one child left out (its child hangs from its parent); then a
    /// top that was not asked for and has one child gives way to it, once (ete4
    /// detaches the root's only child). Several tops (roots of the main view's forest)
    /// hang from an unnamed node. Children in name order (bytes of the name, then
    /// id), as ``children(of:in:)``.
    public func inducedTree(of nodes: [Int], in view: View = .all, keepSingleChildren: Bool = false) -> InducedTree {
        let requested = Set(nodes)
        // Every node on a lineage, with its parent; a walk up stops at a node already seen.
        var parentOf: [Int: Int] = [:], childCount: [Int: Int] = [:], roots: Set<Int> = []
        for start in requested {
            var node = start
            while parentOf[node] == nil, !roots.contains(node) {
                guard let parent = parent(of: node, in: view) else {
                    roots.insert(node)
                    break
                }
                parentOf[node] = parent
                childCount[parent, default: 0] += 1
                node = parent
            }
        }
        func kept(_ node: Int) -> Bool {
            requested.contains(node) || keepSingleChildren || childCount[node, default: 0] != 1
        }
        // The top of each root: down the chain while a node is dropped or, kept only for
        // its lineage, a root with one child (ete4 detaches the root's single child).
        var children: [Int: [Int]] = [:]
        var tops: [Int] = []
        for node in Set(parentOf.keys).union(roots) {
            guard kept(node) else { continue }
            var above = parentOf[node]
            while let candidate = above, !kept(candidate) { above = parentOf[candidate] }
            if let above { children[above, default: []].append(node) } else { tops.append(node) }
        }
        // ete4 detaches a root's only child once (a root kept for the lineages alone).
        for (index, top) in tops.enumerated() where !requested.contains(top) {
            if let only = children[top], only.count == 1 { tops[index] = only[0] }
        }
        guard !tops.isEmpty else { return InducedTree(nodes: [], depths: [], requested: []) }
        func order(_ list: [Int]) -> [Int] {
            list.sorted { a, b in
                let nameA = Array(name(of: a).utf8), nameB = Array(name(of: b).utf8)
                return nameA != nameB ? nameA.lexicographicallyPrecedes(nameB) : id(at: a) < id(at: b)
            }
        }
        var tree = InducedTree(nodes: [], depths: [], requested: [])
        var stack: [(Int?, Int)] = tops.count == 1 ? [(tops[0], 0)] : [(nil, 0)]
        while let (node, depth) = stack.popLast() {
            tree.nodes.append(node)
            tree.depths.append(depth)
            tree.requested.append(node.map(requested.contains) ?? false)
            let below = node.map { order(children[$0] ?? []) } ?? order(tops)
            for child in below.reversed() { stack.append((child, depth + 1)) }
        }
        return tree
    }
}
