/// The common ancestor of a set of taxa: the plain lowest common ancestor, and the
/// majority vote of taxopy's `find_majority_vote` (the consensus CAT/BAT and
/// MMseqs2's taxonomy assign a read or a contig by).
extension TaxonomyTree {
    /// What a set of members agrees on.
    public struct Consensus: Sendable, Equatable {
        /// The taxon.
        public var node: Int
        /// Share of the members' weight whose lineage holds ``node``.
        public var support: Double
        /// The same share among the members whose lineage reaches ``node``'s depth
        /// (a member placed only at a higher rank neither agrees nor disagrees).
        public var agreement: Double

        public init(node: Int, support: Double, agreement: Double) {
            self.node = node
            self.support = support
            self.agreement = agreement
        }
    }

    /// The node a member stands for in `view`: itself, or in the main view a node
    /// outside it its nearest main-rank ancestor (its main lineage includes that one).
    public func node(_ node: Int, in view: View) -> Int? {
        guard view == .main, !isInView(node) else { return node }
        return parent(of: node, in: .main)
    }

    /// The lowest common ancestor of every node (a node is its own ancestor); nil for
    /// no node, or nodes under different roots.
    public func lowestCommonAncestor(of nodes: [Int], in view: View = .all) -> Int? {
        guard var result = nodes.first else { return nil }
        for node in nodes.dropFirst() {
            guard let common = lowestCommonAncestor(result, node, in: view) else { return nil }
            result = common
        }
        return result
    }

    /// The common ancestor of a set as `compare` shows a pair's (``Comparison``): on the
    /// whole tree the lowest common ancestor; on the main ranks the deepest taxon of
    /// every member's main lineage, or the source's own common ancestor when they share
    /// none (above every domain). Nil for no node, or nodes under different roots.
    public func commonAncestor(of nodes: [Int], in view: View) -> Int? {
        guard let lca = lowestCommonAncestor(of: nodes) else { return nil }
        guard view == .main else { return lca }
        let members = nodes.compactMap { node($0, in: .main) }
        guard members.count == nodes.count else { return lca }
        return lowestCommonAncestor(of: members, in: .main) ?? lca
    }

    /// The deepest taxon held by more than `fraction` of the members' weight, as
    /// taxopy defines it: the lineages are lined up by depth from the root and read
    /// from the deepest level up; a level answers when one taxon there has the
    /// largest weight alone (members whose lineage ends above the level count as one
    /// more contender, "none", which never answers) and that weight is more than
    /// `fraction` of the total. A taxon's weight at its level is the weight of every
    /// member at or below it. Nil when no level answers (under different roots).
    ///
    /// - Parameters:
    ///   - members: nodes of `view` (``node(_:in:)``) with their weights (positive).
    ///   - fraction: 0 < fraction < 1.
    public func majorityVote(_ members: [(node: Int, weight: Double)], fraction: Double,
                             in view: View = .all) -> Consensus? {
        let total = members.reduce(0) { $0 + $1.weight }
        guard total > 0 else { return nil }
        // Each taxon on a member's lineage gathers the member's weight; levels by depth.
        var weights: [Int: Double] = [:]
        var deepest = 0
        var reaching: [Double] = []  // reaching[d]: weight of the members whose lineage reaches depth d
        for (node, weight) in members {
            let depth = self.depth(of: node, in: view)
            deepest = max(deepest, depth)
            if reaching.count <= depth { reaching += Array(repeating: 0, count: depth + 1 - reaching.count) }
            reaching[depth] += weight
            var current: Int? = node
            while let at = current {
                weights[at, default: 0] += weight
                current = parent(of: at, in: view)
            }
        }
        // reaching[d] becomes the weight of members at depth >= d.
        var below = 0.0
        for depth in stride(from: reaching.count - 1, through: 0, by: -1) {
            below += reaching[depth]
            reaching[depth] = below
        }
        var levels = Array(repeating: [(node: Int, weight: Double)](), count: deepest + 1)
        for (node, weight) in weights { levels[self.depth(of: node, in: view)].append((node, weight)) }
        for depth in stride(from: deepest, through: 0, by: -1) {
            let none = total - reaching[depth]
            var best = (node: -1, weight: none), tied = false
            for candidate in levels[depth] {
                if candidate.weight > best.weight {
                    best = candidate
                    tied = false
                } else if candidate.weight == best.weight {
                    tied = true
                }
            }
            guard best.node >= 0, !tied, best.weight > total * fraction else { continue }
            return Consensus(node: best.node, support: best.weight / total, agreement: best.weight / reaching[depth])
        }
        return nil
    }
}
