import STOLModel
import STOLTestFixtures
import XCTest

/// ``TaxonomyTree`` on trees of the eight ranks (both views are then the same
/// tree) against ``NaiveTree``'s path-to-root computations, which share no code
/// with it: children, lowest common ancestors, the Euler tour, closest relatives.
final class TaxonomyTreeTests: XCTestCase {
    private func node(_ id: TaxonID, _ parent: TaxonID?, _ rank: TaxonRank, _ name: String) -> TreeNode {
        .init(id: id, parentID: parent, rank: rank, scientificName: name)
    }

    // MARK: Layout

    func testInit_whenInputIsShuffled_keepsEveryNodeWithItsParentDepthAndChildrenInNameOrder() throws {
        let input = randomTaxonomy(count: 300, extraRoots: 2, seed: TestSeed.make(for: self))
        let tree = try TaxonomyTree(testNodes: input)
        let naive = NaiveTree(input)
        XCTAssertEqual(tree.count, input.count)
        for node in input {
            let index = try XCTUnwrap(tree.index(of: node.id))
            XCTAssertEqual(tree.id(at: index), node.id)
            XCTAssertEqual(tree.name(of: index), node.scientificName)
            XCTAssertEqual(tree.mainRank(of: index), node.rank)
            for view in [TaxonomyTree.View.main, .all] {
                XCTAssertEqual(tree.depth(of: index, in: view), naive.depth(node.id), "depth of \(node.id)")
                XCTAssertEqual(tree.parent(of: index, in: view).map(tree.id(at:)), node.parentID)
                XCTAssertEqual(tree.ancestors(of: index, in: view).map(tree.id(at:)), naive.pathToRoot(node.id).dropFirst().reversed())
                // Children in (name bytes, id) order, paged.
                let expected = input.filter { $0.parentID == node.id }.sorted {
                    Array($0.scientificName.utf8) != Array($1.scientificName.utf8)
                        ? Array($0.scientificName.utf8).lexicographicallyPrecedes(Array($1.scientificName.utf8)) : $0.id < $1.id
                }.map(\.id)
                XCTAssertEqual(tree.children(of: index, in: view).map(tree.id(at:)), expected)
                XCTAssertEqual(tree.childCount(of: index, in: view), expected.count)
                let page = tree.children(of: index, in: view, offset: 1, limit: 2)
                XCTAssertEqual(page.page.map(tree.id(at:)), Array(expected.dropFirst().prefix(2)))
                XCTAssertEqual(page.total, expected.count)
            }
            // The subtree is every node whose path to the root passes here, each at its depth below.
            let subtree = try XCTUnwrap(tree.subtree(of: index, limit: input.count))
            let members = input.filter { naive.pathToRoot($0.id).contains(node.id) }
            XCTAssertEqual(Set(subtree.nodes.map(tree.id(at:))), Set(members.map(\.id)))
            XCTAssertEqual(subtree.nodes.count, members.count)
            for (member, depth) in zip(subtree.nodes, subtree.depths) {
                XCTAssertEqual(depth, naive.depth(tree.id(at: member)) - naive.depth(node.id))
            }
            if members.count > 1 { XCTAssertNil(tree.subtree(of: index, limit: members.count - 1), "over the limit: refused") }
        }
        XCTAssertEqual(Set(tree.roots().map(tree.id(at:))), Set(input.filter { $0.parentID == nil }.map(\.id)))
    }

    /// `descendants` (issue 34) is a range of the tree's preorder: here against a walk of
    /// the input, children in id order, for every node, every rank and pages of it.
    func testDescendants_areThePreorderByIDOfTheSubtree_atARank_paged() throws {
        let input = randomTaxonomy(count: 300, extraRoots: 2, seed: TestSeed.make(for: self))
        let tree = try TaxonomyTree(testNodes: input)
        var children: [TaxonID: [TaxonID]] = [:]
        for node in input { if let parent = node.parentID { children[parent, default: []].append(node.id) } }
        let rankOf = Dictionary(uniqueKeysWithValues: input.map { ($0.id, $0.rank.rawValue) })
        func below(_ id: TaxonID) -> [TaxonID] {
            (children[id] ?? []).sorted().flatMap { [$0] + below($0) }
        }
        var nonEmpty = 0
        for node in input {
            let index = try XCTUnwrap(tree.index(of: node.id))
            let all = below(node.id)
            let every = tree.descendants(of: index, ranks: nil, offset: 0, limit: .max)
            XCTAssertEqual(every.page.map(tree.id(at:)), all, "\(node.id)")
            XCTAssertEqual(every.total, all.count)
            for rank in ["species", "genus", "Family "] {
                let codes = try XCTUnwrap(tree.codes(ofRank: rank), rank)
                let wanted = all.filter { rankOf[$0] == rank.trimmingCharacters(in: .whitespaces).lowercased() }
                let answer = tree.descendants(of: index, ranks: codes, offset: 0, limit: .max)
                XCTAssertEqual(answer.page.map(tree.id(at:)), wanted, "\(node.id) \(rank)")
                XCTAssertEqual(answer.total, wanted.count)
                let page = tree.descendants(of: index, ranks: codes, offset: 1, limit: 2)
                XCTAssertEqual(page.page.map(tree.id(at:)), Array(wanted.dropFirst().prefix(2)))
                XCTAssertEqual(page.total, wanted.count)
                if !wanted.isEmpty { nonEmpty += 1 }
            }
        }
        XCTAssertGreaterThan(nonEmpty, 50)
        XCTAssertNil(tree.codes(ofRank: "genuss"), "a rank neither the tree nor the order knows")
        XCTAssertEqual(tree.codes(ofRank: "strain"), [], "a rank of the order the tree lacks: none of its nodes")
    }

    // MARK: Lowest common ancestor

    func testLowestCommonAncestor_agreesWithNaivePathToRootForAllPairs() throws {
        var seeds = SplitMix64(for: self)
        for seed in (0..<3).map({ _ in seeds.next() }) {
            let input = randomTaxonomy(count: 300, extraRoots: 2, seed: seed)
            let tree = try TaxonomyTree(testNodes: input)
            let naive = NaiveTree(input)
            XCTAssertGreaterThan(Set((0..<tree.count).filter { tree.mainRank(of: $0) == .species }.map { naive.depth(tree.id(at: $0)) }).count, 3,
                                 "species must sit at varying depths for this test to mean something")
            var crossTreePairs = 0
            for a in 0..<tree.count {
                for b in 0..<tree.count {
                    let expected = naive.lca(tree.id(at: a), tree.id(at: b))
                    let actual = tree.lowestCommonAncestor(a, b).map { tree.id(at: $0) }
                    if expected == nil { crossTreePairs += 1 }
                    if actual != expected {
                        XCTFail("seed \(seed): LCA(\(tree.id(at: a)), \(tree.id(at: b))) = \(String(describing: actual)), expected \(String(describing: expected))")
                        return
                    }
                }
            }
            XCTAssertGreaterThan(crossTreePairs, 0, "nodes of different root trees have no common ancestor")
        }
    }

    func testLowestCommonAncestor_whenOneIsAncestorOfTheOther_returnsTheAncestor() throws {
        let tree = try TaxonomyTree(testNodes: [
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
        let tree = try TaxonomyTree(testNodes: input)
        let tour = tree.eulerTour(in: .main)
        XCTAssertEqual(tour.count, 2 * tree.count - 1)
        let root = try XCTUnwrap(input.first { $0.parentID == nil })
        XCTAssertEqual(tree.id(at: try XCTUnwrap(tour.first).node), root.id)
        XCTAssertEqual(tree.id(at: try XCTUnwrap(tour.last).node), root.id)
        for (position, entry) in tour.enumerated() {
            XCTAssertEqual(entry.depth, Int32(tree.depth(of: entry.node)), "entry \(position) carries its node's depth")
            if position > 0 {
                XCTAssertEqual(abs(entry.depth - tour[position - 1].depth), 1, "step \(position)")
                // Consecutive entries are parent and child.
                let previous = tour[position - 1].node
                XCTAssertTrue((tree.parent(of: entry.node) ?? -1) == previous || (tree.parent(of: previous) ?? -1) == entry.node)
            }
        }
        // Each node is recorded on entry and after each of its children.
        var childCount = [Int](repeating: 0, count: tree.count)
        for index in 0..<tree.count where (tree.parent(of: index) ?? -1) >= 0 { childCount[(tree.parent(of: index) ?? -1)] += 1 }
        var occurrences = [Int](repeating: 0, count: tree.count)
        for entry in tour { occurrences[entry.node] += 1 }
        XCTAssertEqual(occurrences, childCount.map { $0 + 1 })
    }

    func testEulerTour_minimumDepthBetweenFirstOccurrencesIsTheLowestCommonAncestor() throws {
        let input = randomTaxonomy(count: 150, seed: TestSeed.make(for: self))
        let tree = try TaxonomyTree(testNodes: input)
        let tour = tree.eulerTour(in: .main)
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
        let tree = try TaxonomyTree(testNodes: input)
        let roots = input.filter { $0.parentID == nil }.count
        XCTAssertEqual(roots, 4)
        let tour = tree.eulerTour(in: .main)
        XCTAssertEqual(tour.count, 2 * tree.count - roots)
        // The per-tree tours follow one another: each starts where the previous one ended,
        // at a root, and within a tree consecutive depths differ by exactly one.
        var trees = 0
        for (position, entry) in tour.enumerated() {
            let startsTree = position == 0 || (entry.depth == 0 && tour[position - 1].depth == 0)
            if startsTree {
                trees += 1
                XCTAssertEqual((tree.parent(of: entry.node) ?? -1), -1)
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
            let tree = try TaxonomyTree(testNodes: input)
            let naive = NaiveTree(input)
            let species = (0..<tree.count).filter { tree.mainRank(of: $0) == .species }
            XCTAssertGreaterThan(species.count, 50)
            for target in species {
                let ranking = naive.ranking(of: tree.id(at: target))
                XCTAssertEqual(ranking.count, species.count - 1)
                for n in [1, 2, 3, 10, species.count - 1, species.count + 7] {
                    let relatives = tree.closestSpecies(of: target, n: n, in: .main).relatives
                    let expected = Array(ranking.prefix(n))
                    XCTAssertEqual(relatives.count, expected.count, "n = \(n)")
                    let actual = relatives.map { (tree.id(at: $0.node), tree.id(at: $0.lca), Int($0.distance)) }
                    guard actual.map(\.0) == expected.map(\.id),
                          actual.map(\.1) == expected.map(\.lca),
                          actual.map(\.2) == expected.map(\.distance) else {
                        XCTFail("seed \(seed), target \(tree.id(at: target)), n \(n): \(actual) != \(expected)")
                        return
                    }
                    for relative in relatives {
                        XCTAssertEqual(relative.lcaDepth, Int32(tree.depth(of: relative.lca)))
                        XCTAssertEqual(relative.distance, Int32(tree.depth(of: target)) + Int32(tree.depth(of: relative.node)) - 2 * relative.lcaDepth)
                    }
                }
            }
        }
    }

    func testClosestRelatives_whenNamesTie_breaksTiesByScientificNameThenID() throws {
        let tree = try TaxonomyTree(testNodes: [
            node(1, nil, .domain, "D"), node(2, 1, .genus, "G"),
            node(10, 2, .species, "G target"),
            node(13, 2, .species, "G b"), node(12, 2, .species, "G a"), node(11, 2, .species, "G b"),
            node(3, 1, .genus, "H"), node(14, 3, .species, "A far"),
        ])
        let target = try XCTUnwrap(tree.index(of: 10))
        let ids = tree.closestSpecies(of: target, n: 10, in: .main).relatives.map { tree.id(at: $0.node) }
        XCTAssertEqual(ids, [12, 11, 13, 14])
        XCTAssertEqual(tree.closestSpecies(of: target, n: 2, in: .main).relatives.map { tree.id(at: $0.node) }, [12, 11])
        XCTAssertEqual(tree.closestSpecies(of: target, n: 0, in: .main).relatives.count, 0)
    }

    func testClosestRelatives_whenSpeciesIsAloneInItsTree_returnsNothing() throws {
        let tree = try TaxonomyTree(testNodes: [
            node(1, nil, .domain, "D"), node(2, 1, .species, "D s"),
            node(3, nil, .domain, "E"), node(4, 3, .species, "E s"),
        ])
        XCTAssertEqual(tree.closestSpecies(of: try XCTUnwrap(tree.index(of: 2)), n: 5, in: .main).relatives, [])
    }

    // MARK: Errors

    func testInit_whenAnIDRepeats_throwsIDsNotAscending() {
        XCTAssertThrowsError(try TaxonomyTree(testNodes: [node(1, nil, .domain, "D"), node(2, 1, .kingdom, "K"), node(2, 1, .kingdom, "L")])) {
            XCTAssertEqual($0 as? TaxonomyTree.BuildError, .idsNotAscending(2))
        }
    }

    func testInit_whenAParentIsUnknown_throwsUnknownParentNamingChildAndParent() {
        XCTAssertThrowsError(try TaxonomyTree(testNodes: [node(1, nil, .domain, "D"), node(5, 99, .genus, "G")])) {
            XCTAssertEqual($0 as? TaxonomyTree.BuildError, .unknownParent(child: 5, parent: 99))
        }
    }

    func testInit_whenParentsFormACycle_throwsCycle() {
        XCTAssertThrowsError(try TaxonomyTree(testNodes: [node(1, nil, .domain, "D"), node(2, 3, .genus, "G"), node(3, 2, .family, "F")])) {
            XCTAssertEqual($0 as? TaxonomyTree.BuildError, .cycle(2))
        }
        XCTAssertThrowsError(try TaxonomyTree(testNodes: [node(7, 8, .genus, "G"), node(8, 7, .family, "F")]), "no root at all") {
            XCTAssertEqual($0 as? TaxonomyTree.BuildError, .cycle(7))
        }
    }
}
