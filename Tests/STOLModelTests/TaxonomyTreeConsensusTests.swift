import STOLModel
import STOLTestFixtures
import XCTest

/// ``TaxonomyTree``'s common ancestor of a set and its majority vote, on random
/// trees, against references that share no code with them: the intersection of the
/// members' paths to the root, and taxopy's `find_majority_vote` written out as taxopy
/// writes it (root-first lineages zipped by depth, a Counter per level, deepest first).
final class TaxonomyTreeConsensusTests: XCTestCase {
    /// taxopy 0.14's `_unweighted_majority_vote` / `_weighted_majority_vote`, line by line:
    /// per level, the weights in the order the members come (Python dicts keep insertion
    /// order, and `sorted` is stable), `None` for a lineage that ends above the level.
    private func taxopyMajorityVote(_ lineages: [[TaxonID]], weights: [Double], fraction: Double) -> (TaxonID, Double)? {
        let total = weights.reduce(0, +)
        let deepest = lineages.map(\.count).max() ?? 0
        for level in stride(from: deepest - 1, through: 0, by: -1) {
            var order: [TaxonID?] = []
            var weightOf: [TaxonID?: Double] = [:]
            for (lineage, weight) in zip(lineages, weights) {
                let taxon: TaxonID? = level < lineage.count ? lineage[level] : nil
                if weightOf[taxon] == nil { order.append(taxon) }
                weightOf[taxon, default: 0] += weight
            }
            let ranked = order.enumerated().sorted { a, b in
                let (wa, wb) = (weightOf[a.element]!, weightOf[b.element]!)
                return wa != wb ? wa > wb : a.offset < b.offset
            }.map { (taxon: $0.element, weight: weightOf[$0.element]!) }
            guard let top = ranked.first?.taxon, ranked[0].weight > total * fraction else { continue }
            if ranked.count == 1 || ranked[0].weight > ranked[1].weight { return (top, ranked[0].weight / total) }
        }
        return nil
    }

    func testMajorityVote_isTaxopysFindMajorityVote_onRandomSetsFractionsAndWeights() throws {
        let seed = TestSeed.make(for: self)
        var rng = SplitMix64(seed: seed)
        let input = randomTaxonomy(count: 400, extraRoots: 1, seed: seed)
        let tree = try TaxonomyTree(testNodes: input)
        let naive = NaiveTree(input)
        var answered = 0, unanswered = 0
        for round in 0..<600 {
            let size = Int.random(in: 1...25, using: &rng)
            // Members drawn from a few subtrees, so that majorities happen at every depth.
            let pool = Array(input.shuffled(using: &rng).prefix(Int.random(in: 2...40, using: &rng)))
            let members = (0..<size).map { _ in pool.randomElement(using: &rng)!.id }
            let weighted = round % 2 == 1
            // Whole numbers: sums are exact in any order, as they would be in Python.
            let weights = members.map { _ in weighted ? Double(Int.random(in: 1...5, using: &rng)) : 1 }
            let fraction = [0.2, 0.34, 0.5, 0.51, 0.66, 0.75, 0.9, 0.99].randomElement(using: &rng)!
            let expected = taxopyMajorityVote(members.map { Array(naive.pathToRoot($0).reversed()) }, weights: weights,
                                              fraction: fraction)
            let nodes = try members.map { try XCTUnwrap(tree.index(of: $0)) }
            let got = tree.majorityVote(Array(zip(nodes, weights)).map { (node: $0.0, weight: $0.1) }, fraction: fraction)
            XCTAssertEqual(got.map { tree.id(at: $0.node) }, expected?.0,
                           "members \(members), weights \(weights), fraction \(fraction) (seed \(seed))")
            if let got, let expected {
                XCTAssertEqual(got.support, expected.1, accuracy: 1e-12)
                XCTAssertGreaterThanOrEqual(got.agreement, got.support)
                answered += 1
            } else {
                unanswered += 1
            }
        }
        XCTAssertGreaterThan(answered, 300, "the sets were too scattered to test much")
        XCTAssertGreaterThan(unanswered, 0, "no set was under different roots or without a majority")
    }

    func testLowestCommonAncestorOfASet_isTheDeepestNodeOnEveryMembersPath() throws {
        let seed = TestSeed.make(for: self)
        var rng = SplitMix64(seed: seed)
        let input = randomTaxonomy(count: 300, extraRoots: 1, seed: seed)
        let tree = try TaxonomyTree(testNodes: input)
        let naive = NaiveTree(input)
        for _ in 0..<400 {
            let members = (0..<Int.random(in: 1...12, using: &rng)).map { _ in input.randomElement(using: &rng)!.id }
            let common = members.dropFirst().reduce(Set(naive.pathToRoot(members[0]))) { $0.intersection(naive.pathToRoot($1)) }
            let expected = common.max { naive.depth($0) < naive.depth($1) }
            let got = tree.lowestCommonAncestor(of: try members.map { try XCTUnwrap(tree.index(of: $0)) })
            XCTAssertEqual(got.map(tree.id(at:)), expected, "members \(members) (seed \(seed))")
        }
    }

    func testMajorityVote_onAHandDrawnTree_answersAsCATWould() throws {
        // 1 ─ 2 (family) ─┬─ 3 (genus) ─┬─ 5 (species)
        //                 │             └─ 6 (species)
        //                 └─ 4 (genus) ─── 7 (species)
        let tree = try TaxonomyTree(testNodes: [
            .init(id: 1, parentID: nil, rank: .domain, scientificName: "Root"),
            .init(id: 2, parentID: 1, rank: .family, scientificName: "F"),
            .init(id: 3, parentID: 2, rank: .genus, scientificName: "G3"),
            .init(id: 4, parentID: 2, rank: .genus, scientificName: "G4"),
            .init(id: 5, parentID: 3, rank: .species, scientificName: "S5"),
            .init(id: 6, parentID: 3, rank: .species, scientificName: "S6"),
            .init(id: 7, parentID: 4, rank: .species, scientificName: "S7"),
        ])
        func vote(_ ids: [TaxonID], _ weights: [Double]? = nil, _ fraction: Double) -> (TaxonID, Double, Double)? {
            let members = ids.enumerated().map { (node: tree.index(of: $0.element)!, weight: weights?[$0.offset] ?? 1) }
            return tree.majorityVote(members, fraction: fraction).map { (tree.id(at: $0.node), $0.support, $0.agreement) }
        }
        // Two of three reads in genus 3 (different species): the genus, 2/3.
        XCTAssertEqual(vote([5, 6, 7], nil, 0.5)?.0, 3)
        XCTAssertEqual(vote([5, 6, 7], nil, 0.5)?.1 ?? 0, 2.0 / 3, accuracy: 1e-12)
        // More than 2/3 asked: only the family holds them all.
        XCTAssertEqual(vote([5, 6, 7], nil, 0.7)?.0, 2)
        // Weights turn it: species 7 weighs 3 of 5.
        XCTAssertEqual(vote([5, 6, 7], [1, 1, 3], 0.5)?.0, 7)
        // A read placed only at the family neither agrees nor disagrees at the genus:
        // support 2/3, agreement 2/2.
        let placed = vote([5, 5, 2], nil, 0.5)
        XCTAssertEqual(placed?.0, 5)
        XCTAssertEqual(placed?.2 ?? 0, 1, accuracy: 1e-12)
        // A tie at the deepest level is no answer there: 5 and 7 weigh the same; the family holds both.
        XCTAssertEqual(vote([5, 7], nil, 0.4)?.0, 2)
    }
}
