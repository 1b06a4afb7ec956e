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
func randomTaxonomy(count: Int, extraRoots: Int = 0, seed: UInt64) -> [TreeNode] {
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
