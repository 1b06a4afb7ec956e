import STOLModel
import STOLTestFixtures
import XCTest

final class TaxonTreeTests: XCTestCase {
    private func node(_ id: TaxonID, _ parent: TaxonID?, _ rank: TaxonRank, _ name: String) -> TaxonTree.Node {
        .init(id: id, parentID: parent, rank: rank, scientificName: name)
    }

    // MARK: Layout

    func testInit_whenInputIsShuffled_producesPreorderWithContiguousSubtreesAndSortedChildren() throws {
        let input = randomTaxonomy(count: 300, extraRoots: 2, seed: TestSeed.make(for: self))
        let tree = try TaxonTree(nodes: input)
        let naive = NaiveTree(input)
        XCTAssertEqual(tree.count, input.count)
        XCTAssertEqual(Set(tree.nodes.map(\.id)), Set(input.map(\.id)))
        for index in 0..<tree.count {
            let node = tree.nodes[index]
            XCTAssertEqual(tree.index(of: node.id), index)
            XCTAssertEqual(Int(tree.depth[index]), naive.depth(node.id), "depth of \(node.id)")
            let parent = Int(tree.parentIndex[index])
            if let parentID = node.parentID {
                XCTAssertGreaterThanOrEqual(parent, 0)
                XCTAssertEqual(tree.nodes[parent].id, parentID)
                XCTAssertLessThan(parent, index, "parents precede children in preorder")
            } else {
                XCTAssertEqual(parent, -1)
            }
            // The subtree interval holds exactly the nodes whose path to the root passes here.
            let members = Set((index..<Int(tree.subtreeEnd[index])).map { tree.nodes[$0].id })
            let expected = Set(input.filter { naive.pathToRoot($0.id).contains(node.id) }.map(\.id))
            XCTAssertEqual(members, expected, "subtree of \(node.id)")
        }
        // Siblings appear in (scientific name, id) order.
        var childrenOf: [Int: [Int]] = [:]
        for index in 0..<tree.count { childrenOf[Int(tree.parentIndex[index]), default: []].append(index) }
        for (_, children) in childrenOf {
            let keys = children.map { (tree.nodes[$0].scientificName, tree.nodes[$0].id) }
            XCTAssertEqual(keys.map(\.0), keys.sorted { $0 < $1 }.map(\.0))
            XCTAssertEqual(keys.map(\.1), keys.sorted { $0 < $1 }.map(\.1))
        }
    }

    func testIsAncestor_agreesWithPathToRoot() throws {
        let input = randomTaxonomy(count: 120, extraRoots: 1, seed: TestSeed.make(for: self))
        let tree = try TaxonTree(nodes: input)
        let naive = NaiveTree(input)
        for a in 0..<tree.count {
            for b in 0..<tree.count {
                XCTAssertEqual(tree.isAncestor(a, of: b), naive.pathToRoot(tree.nodes[b].id).contains(tree.nodes[a].id))
            }
        }
    }

    // MARK: Lowest common ancestor

    func testLowestCommonAncestor_agreesWithNaivePathToRootForAllPairs() throws {
        var seeds = SplitMix64(for: self)
        for seed in (0..<3).map({ _ in seeds.next() }) {
            let input = randomTaxonomy(count: 300, extraRoots: 2, seed: seed)
            let tree = try TaxonTree(nodes: input)
            let naive = NaiveTree(input)
            XCTAssertGreaterThan(Set(tree.nodes.filter { $0.rank == .species }.map { naive.depth($0.id) }).count, 3,
                                 "species must sit at varying depths for this test to mean something")
            var crossTreePairs = 0
            for a in 0..<tree.count {
                for b in 0..<tree.count {
                    let expected = naive.lca(tree.nodes[a].id, tree.nodes[b].id)
                    let actual = tree.lowestCommonAncestor(a, b).map { tree.nodes[$0].id }
                    if expected == nil { crossTreePairs += 1 }
                    if actual != expected {
                        XCTFail("seed \(seed): LCA(\(tree.nodes[a].id), \(tree.nodes[b].id)) = \(String(describing: actual)), expected \(String(describing: expected))")
                        return
                    }
                }
            }
            XCTAssertGreaterThan(crossTreePairs, 0, "nodes of different root trees have no common ancestor")
        }
    }

    func testLowestCommonAncestor_whenOneIsAncestorOfTheOther_returnsTheAncestor() throws {
        let tree = try TaxonTree(nodes: [
            node(1, nil, .domain, "D"), node(2, 1, .kingdom, "K"), node(3, 2, .genus, "G"), node(4, 3, .species, "G s"),
        ])
        let d = try XCTUnwrap(tree.index(of: 1)), g = try XCTUnwrap(tree.index(of: 3)), s = try XCTUnwrap(tree.index(of: 4))
        XCTAssertEqual(tree.lowestCommonAncestor(s, g), g)
        XCTAssertEqual(tree.lowestCommonAncestor(d, s), d)
        XCTAssertEqual(tree.lowestCommonAncestor(s, s), s)
    }

    // MARK: Euler tour

    func testEulerTour_forOneTree_has2NMinus1EntriesStartsAndEndsAtRootAndStepsByOneLevel() throws {
        let input = randomTaxonomy(count: 300, seed: TestSeed.make(for: self))
        let tree = try TaxonTree(nodes: input)
        let tour = tree.eulerTour()
        XCTAssertEqual(tour.count, 2 * tree.count - 1)
        let root = try XCTUnwrap(input.first { $0.parentID == nil })
        XCTAssertEqual(tree.nodes[try XCTUnwrap(tour.first).node].id, root.id)
        XCTAssertEqual(tree.nodes[try XCTUnwrap(tour.last).node].id, root.id)
        for (position, entry) in tour.enumerated() {
            XCTAssertEqual(entry.depth, tree.depth[entry.node], "entry \(position) carries its node's depth")
            if position > 0 {
                XCTAssertEqual(abs(entry.depth - tour[position - 1].depth), 1, "step \(position)")
                // Consecutive entries are parent and child.
                let previous = tour[position - 1].node
                XCTAssertTrue(Int(tree.parentIndex[entry.node]) == previous || Int(tree.parentIndex[previous]) == entry.node)
            }
        }
        // Each node is recorded on entry and after each of its children.
        var childCount = [Int](repeating: 0, count: tree.count)
        for index in 0..<tree.count where tree.parentIndex[index] >= 0 { childCount[Int(tree.parentIndex[index])] += 1 }
        var occurrences = [Int](repeating: 0, count: tree.count)
        for entry in tour { occurrences[entry.node] += 1 }
        XCTAssertEqual(occurrences, childCount.map { $0 + 1 })
    }

    func testEulerTour_minimumDepthBetweenFirstOccurrencesIsTheLowestCommonAncestor() throws {
        let input = randomTaxonomy(count: 150, seed: TestSeed.make(for: self))
        let tree = try TaxonTree(nodes: input)
        let tour = tree.eulerTour()
        var first = [Int](repeating: -1, count: tree.count)
        for (position, entry) in tour.enumerated() where first[entry.node] < 0 { first[entry.node] = position }
        XCTAssertFalse(first.contains(-1))
        for a in 0..<tree.count {
            for b in a..<tree.count {
                let range = min(first[a], first[b])...max(first[a], first[b])
                let shallowest = tour[range].min { $0.depth < $1.depth }!
                XCTAssertEqual(shallowest.node, tree.lowestCommonAncestor(a, b))
            }
        }
    }

    func testEulerTour_forAForest_hasOneTourPerTree() throws {
        let input = randomTaxonomy(count: 60, extraRoots: 3, seed: TestSeed.make(for: self))
        let tree = try TaxonTree(nodes: input)
        let roots = input.filter { $0.parentID == nil }.count
        XCTAssertEqual(roots, 4)
        let tour = tree.eulerTour()
        XCTAssertEqual(tour.count, 2 * tree.count - roots)
        // The per-tree tours follow one another: each starts where the previous one ended,
        // at a root, and within a tree consecutive depths differ by exactly one.
        var trees = 0
        for (position, entry) in tour.enumerated() {
            let startsTree = position == 0 || (entry.depth == 0 && tour[position - 1].depth == 0)
            if startsTree {
                trees += 1
                XCTAssertEqual(tree.parentIndex[entry.node], -1)
            } else {
                XCTAssertEqual(abs(entry.depth - tour[position - 1].depth), 1)
            }
        }
        XCTAssertEqual(trees, roots)
    }

    // MARK: Closest relatives

    func testClosestRelatives_equalsBruteForceRankingForEverySpeciesAndSeveralN() throws {
        var seeds = SplitMix64(for: self)
        for seed in (0..<2).map({ _ in seeds.next() }) {
            let input = randomTaxonomy(count: 250, seed: seed)
            let tree = try TaxonTree(nodes: input)
            let naive = NaiveTree(input)
            let species = (0..<tree.count).filter { tree.nodes[$0].rank == .species }
            XCTAssertGreaterThan(species.count, 50)
            for target in species {
                let ranking = naive.ranking(of: tree.nodes[target].id)
                XCTAssertEqual(ranking.count, species.count - 1)
                for n in [1, 2, 3, 10, species.count - 1, species.count + 7] {
                    let relatives = tree.closestRelatives(of: target, n: n)
                    let expected = Array(ranking.prefix(n))
                    XCTAssertEqual(relatives.count, expected.count, "n = \(n)")
                    let actual = relatives.map { (tree.nodes[$0.node].id, tree.nodes[$0.lca].id, Int($0.distance)) }
                    guard actual.map(\.0) == expected.map(\.id),
                          actual.map(\.1) == expected.map(\.lca),
                          actual.map(\.2) == expected.map(\.distance) else {
                        XCTFail("seed \(seed), target \(tree.nodes[target].id), n \(n): \(actual) != \(expected)")
                        return
                    }
                    for relative in relatives {
                        XCTAssertEqual(relative.lcaDepth, tree.depth[relative.lca])
                        XCTAssertEqual(relative.distance, tree.depth[target] + tree.depth[relative.node] - 2 * relative.lcaDepth)
                    }
                }
            }
        }
    }

    func testClosestRelatives_whenNamesTie_breaksTiesByScientificNameThenID() throws {
        let tree = try TaxonTree(nodes: [
            node(1, nil, .domain, "D"), node(2, 1, .genus, "G"),
            node(10, 2, .species, "G target"),
            node(13, 2, .species, "G b"), node(12, 2, .species, "G a"), node(11, 2, .species, "G b"),
            node(3, 1, .genus, "H"), node(14, 3, .species, "A far"),
        ])
        let target = try XCTUnwrap(tree.index(of: 10))
        let ids = tree.closestRelatives(of: target, n: 10).map { tree.nodes[$0.node].id }
        XCTAssertEqual(ids, [12, 11, 13, 14])
        XCTAssertEqual(tree.closestRelatives(of: target, n: 2).map { tree.nodes[$0.node].id }, [12, 11])
        XCTAssertEqual(tree.closestRelatives(of: target, n: 0).count, 0)
    }

    func testClosestRelatives_whenSpeciesIsAloneInItsTree_returnsNothing() throws {
        let tree = try TaxonTree(nodes: [
            node(1, nil, .domain, "D"), node(2, 1, .species, "D s"),
            node(3, nil, .domain, "E"), node(4, 3, .species, "E s"),
        ])
        XCTAssertEqual(tree.closestRelatives(of: try XCTUnwrap(tree.index(of: 2)), n: 5), [])
    }

    // MARK: Errors

    func testInit_whenAnIDRepeats_throwsDuplicateID() {
        do {
            _ = try TaxonTree(nodes: [node(1, nil, .domain, "D"), node(2, 1, .kingdom, "K"), node(2, 1, .kingdom, "L")])
            XCTFail("expected duplicateID")
        } catch {
            XCTAssertEqual(error, .duplicateID(2))
        }
    }

    func testInit_whenAParentIsUnknown_throwsUnknownParentNamingChildAndParent() {
        do {
            _ = try TaxonTree(nodes: [node(1, nil, .domain, "D"), node(5, 99, .genus, "G")])
            XCTFail("expected unknownParent")
        } catch {
            XCTAssertEqual(error, .unknownParent(child: 5, parent: 99))
        }
    }

    func testInit_whenParentsFormACycle_throwsCycle() {
        do {
            _ = try TaxonTree(nodes: [node(1, nil, .domain, "D"), node(2, 3, .genus, "G"), node(3, 2, .family, "F")])
            XCTFail("expected cycle")
        } catch {
            XCTAssertEqual(error, .cycle(involving: 2))
        }
        do {
            _ = try TaxonTree(nodes: [node(1, nil, .domain, "D"), node(4, 4, .genus, "G")])
            XCTFail("expected cycle for a self-parent")
        } catch {
            XCTAssertEqual(error, .cycle(involving: 4))
        }
        do {
            _ = try TaxonTree(nodes: [node(7, 8, .genus, "G"), node(8, 7, .family, "F")])
            XCTFail("expected cycle when there is no root at all")
        } catch {
            XCTAssertEqual(error, .cycle(involving: 7))
        }
    }
}
