import Foundation
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

/// A random taxonomy of `count` nodes under one domain root (plus `extraRoots`
/// small separate trees): each child's rank is strictly below its parent's but
/// may skip ranks, so species sit at depths from 1 to 7. Names come from a small
/// pool so that ties on the scientific name occur; ids are scattered and the
/// input order is shuffled (children may come before their parents).
public func randomTaxonomy(count: Int, extraRoots: Int = 0, seed: UInt64) -> [TreeNode] {
    var rng = SplitMix64(seed: seed)
    var ids = Array(TaxonID(1)...TaxonID(count * 20)).shuffled(using: &rng).prefix(count + extraRoots * 4)
    var nodes: [TreeNode] = []
    func nextID() -> TaxonID { ids.removeFirst() }
    func name(_ rank: TaxonRank) -> String { "\(rank.rawValue.capitalized) \(Int.random(in: 0..<12, using: &rng))" }

    var parents: [TreeNode] = []
    let root = TreeNode(id: nextID(), parentID: nil, rank: .domain, scientificName: "Root")
    nodes.append(root)
    parents.append(root)
    while nodes.count < count {
        let parent = parents.randomElement(using: &rng)!
        let skip = Int.random(in: 0...10, using: &rng) < 6 ? 0 : Int.random(in: 1...3, using: &rng)
        // Half of the time go straight to a species, so species appear at every depth.
        let level = Bool.random(using: &rng) ? TaxonRank.species.level
                                               : min(TaxonRank.species.level, parent.rank.level + 1 + skip)
        let rank = TaxonRank.allCases[max(level, parent.rank.level + 1)]
        let node = TreeNode(id: nextID(), parentID: parent.id, rank: rank, scientificName: name(rank))
        nodes.append(node)
        if rank != .species { parents.append(node) }
    }
    for _ in 0..<extraRoots {
        let other = TreeNode(id: nextID(), parentID: nil, rank: .domain, scientificName: name(.domain))
        let genus = TreeNode(id: nextID(), parentID: other.id, rank: .genus, scientificName: name(.genus))
        nodes.append(other)
        nodes.append(genus)
        for _ in 0..<2 {
            nodes.append(.init(id: nextID(), parentID: genus.id, rank: .species, scientificName: name(.species)))
        }
    }
    return nodes.shuffled(using: &rng)
}
