import STOLModel

/// A node of a test tree: the literal trees of the tests and the random taxonomies.
public struct TreeNode: Sendable, Equatable {
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

extension TaxonomyTree {
    /// The tree of `nodes`, given in any order; each rank is one of the eight, so
    /// every node is in the view and both views are the same tree.
    public init(testNodes nodes: [TreeNode]) throws(BuildError) {
        var builder = Builder(capacity: nodes.count)
        for node in nodes.sorted(by: { $0.id < $1.id }) {
            try builder.append(id: node.id, parentID: node.parentID, rank: node.rank.rawValue, name: node.scientificName.utf8)
        }
        self = try builder.build()
    }
}

/// Path-to-root helpers that share no code with ``TaxonomyTree``: the reference the
/// fast algorithms are checked against (docs/design/queries-and-algorithms.md §3).
public struct NaiveTree {
    public let parentOf: [TaxonID: TaxonID]
    public let nodeByID: [TaxonID: TreeNode]

    public init(_ nodes: [TreeNode]) {
        var parentOf: [TaxonID: TaxonID] = [:]
        var byID: [TaxonID: TreeNode] = [:]
        for node in nodes {
            byID[node.id] = node
            if let parent = node.parentID { parentOf[node.id] = parent }
        }
        self.parentOf = parentOf
        self.nodeByID = byID
    }

    /// The node itself first, its root last.
    public func pathToRoot(_ id: TaxonID) -> [TaxonID] {
        var path = [id]
        while let parent = parentOf[path.last!] { path.append(parent) }
        return path
    }

    public func depth(_ id: TaxonID) -> Int { pathToRoot(id).count - 1 }

    public func lca(_ a: TaxonID, _ b: TaxonID) -> TaxonID? {
        let ancestorsOfA = Set(pathToRoot(a))
        return pathToRoot(b).first { ancestorsOfA.contains($0) }
    }

    public func distance(_ a: TaxonID, _ b: TaxonID) -> Int? {
        lca(a, b).map { depth(a) + depth(b) - 2 * depth($0) }
    }

    /// Every other species of the same tree ranked by distance, scientific name, id.
    public func ranking(of target: TaxonID) -> [(id: TaxonID, lca: TaxonID, distance: Int)] {
        nodeByID.values
            .filter { $0.rank == .species && $0.id != target }
            .compactMap { other -> (TaxonID, TaxonID, Int)? in
                guard let common = lca(target, other.id) else { return nil }
                return (other.id, common, depth(target) + depth(other.id) - 2 * depth(common))
            }
            .sorted { a, b in
                if a.2 != b.2 { return a.2 < b.2 }
                // Names by their bytes (SQLite's BINARY order), then id.
                let nameA = Array(nodeByID[a.0]!.scientificName.utf8), nameB = Array(nodeByID[b.0]!.scientificName.utf8)
                if nameA != nameB { return nameA.lexicographicallyPrecedes(nameB) }
                return a.0 < b.0
            }
            .map { (id: $0.0, lca: $0.1, distance: $0.2) }
    }
}
