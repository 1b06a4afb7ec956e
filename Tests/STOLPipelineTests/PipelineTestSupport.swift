import Foundation
import Glibc
import Logging
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// Shared helpers for the pipeline tests: temporary directories, small ColDP
/// fixtures written from literal TSV, and random taxonomies from a seed (the kit's
/// `TestSeed`: printed, and replayed with `STOL_TEST_SEED`).



/// A random taxonomy of `count` nodes under one domain root (plus `extraRoots`
/// small separate trees): each child's rank is strictly below its parent's but
/// may skip ranks, so species sit at depths from 1 to 7. Names come from a small
/// pool so that ties on the scientific name occur; ids are scattered and the
/// input order is shuffled (children may come before their parents).
func randomTaxonomy(count: Int, extraRoots: Int = 0, seed: UInt64) -> [TaxonTree.Node] {
    var rng = SplitMix64(seed: seed)
    var ids = Array(TaxonID(1)...TaxonID(count * 20)).shuffled(using: &rng).prefix(count + extraRoots * 4)
    var nodes: [TaxonTree.Node] = []
    func nextID() -> TaxonID { ids.removeFirst() }
    func name(_ rank: TaxonRank) -> String { "\(rank.rawValue.capitalized) \(Int.random(in: 0..<12, using: &rng))" }

    var parents: [TaxonTree.Node] = []
    let root = TaxonTree.Node(id: nextID(), parentID: nil, rank: .domain, scientificName: "Root")
    nodes.append(root)
    parents.append(root)
    while nodes.count < count {
        let parent = parents.randomElement(using: &rng)!
        let skip = Int.random(in: 0...10, using: &rng) < 6 ? 0 : Int.random(in: 1...3, using: &rng)
        // Half of the time go straight to a species, so species appear at every depth.
        let level = Bool.random(using: &rng) ? TaxonRank.species.level
                                               : min(TaxonRank.species.level, parent.rank.level + 1 + skip)
        let rank = TaxonRank.allCases[max(level, parent.rank.level + 1)]
        let node = TaxonTree.Node(id: nextID(), parentID: parent.id, rank: rank, scientificName: name(rank))
        nodes.append(node)
        if rank != .species { parents.append(node) }
    }
    for _ in 0..<extraRoots {
        let other = TaxonTree.Node(id: nextID(), parentID: nil, rank: .domain, scientificName: name(.domain))
        let genus = TaxonTree.Node(id: nextID(), parentID: other.id, rank: .genus, scientificName: name(.genus))
        nodes.append(other)
        nodes.append(genus)
        for _ in 0..<2 {
            nodes.append(.init(id: nextID(), parentID: genus.id, rank: .species, scientificName: name(.species)))
        }
    }
    return nodes.shuffled(using: &rng)
}

/// Path-to-root helpers that share no code with ``TaxonTree``: the reference the
/// fast algorithms are checked against (docs/design/queries-and-algorithms.md §3).
struct NaiveTree {
    let parentOf: [TaxonID: TaxonID]
    let nodeByID: [TaxonID: TaxonTree.Node]

    init(_ nodes: [TaxonTree.Node]) {
        var parentOf: [TaxonID: TaxonID] = [:]
        var byID: [TaxonID: TaxonTree.Node] = [:]
        for node in nodes {
            byID[node.id] = node
            if let parent = node.parentID { parentOf[node.id] = parent }
        }
        self.parentOf = parentOf
        self.nodeByID = byID
    }

    /// The node itself first, its root last.
    func pathToRoot(_ id: TaxonID) -> [TaxonID] {
        var path = [id]
        while let parent = parentOf[path.last!] { path.append(parent) }
        return path
    }

    func depth(_ id: TaxonID) -> Int { pathToRoot(id).count - 1 }

    func lca(_ a: TaxonID, _ b: TaxonID) -> TaxonID? {
        let ancestorsOfA = Set(pathToRoot(a))
        return pathToRoot(b).first { ancestorsOfA.contains($0) }
    }

    func distance(_ a: TaxonID, _ b: TaxonID) -> Int? {
        lca(a, b).map { depth(a) + depth(b) - 2 * depth($0) }
    }

    /// Every other species of the same tree ranked by distance, scientific name, id.
    func ranking(of target: TaxonID) -> [(id: TaxonID, lca: TaxonID, distance: Int)] {
        nodeByID.values
            .filter { $0.rank == .species && $0.id != target }
            .compactMap { other -> (TaxonID, TaxonID, Int)? in
                guard let common = lca(target, other.id) else { return nil }
                return (other.id, common, depth(target) + depth(other.id) - 2 * depth(common))
            }
            .sorted { a, b in
                if a.2 != b.2 { return a.2 < b.2 }
                let nameA = nodeByID[a.0]!.scientificName, nameB = nodeByID[b.0]!.scientificName
                if nameA != nameB { return nameA < nameB }
                return a.0 < b.0
            }
            .map { (id: $0.0, lca: $0.1, distance: $0.2) }
    }
}
