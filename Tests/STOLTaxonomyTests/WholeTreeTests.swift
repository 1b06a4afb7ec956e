import STOLModel
import STOLTestFixtures
import XCTest

/// ``TaxonomyTree`` on trees with the source's own ranks (most nodes outside the
/// eight-rank view) against a plain parent-pointer computation on random trees:
/// ancestors, depths, lowest common ancestors and the view derived from the ranks
/// must be the same for every node and pair asked, and names and ranks must come
/// back as appended.
final class WholeTreeTests: XCTestCase {
    /// A random forest: node i (ids ascending with gaps) hangs under a random earlier node, or is a root.
    private func randomTree(nodes: Int, roots: Int, seed: UInt64) throws -> (TaxonomyTree, parent: [Int64: Int64], ids: [Int64]) {
        var random = SplitMix64(seed: seed)
        var ids: [Int64] = []
        var next: Int64 = 1
        for _ in 0..<nodes {
            next += Int64.random(in: 1...5, using: &random)
            ids.append(next)
        }
        // Parents are chosen among other nodes in a random order, so that parents are not always smaller ids.
        let order = ids.shuffled(using: &random)
        var parent: [Int64: Int64] = [:]
        for (position, id) in order.enumerated() where position >= roots {
            parent[id] = order[Int.random(in: 0..<position, using: &random)]
        }
        let ranks = ["no rank", "clade", "species", "genus", "superkingdom", "strain"]
        var builder = TaxonomyTree.Builder()
        for id in ids {
            try builder.append(id: id, parentID: parent[id], rank: ranks[Int(id) % ranks.count], name: "Taxon \(id) é".utf8)
        }
        return (try builder.build(), parent, ids)
    }

    private func plainAncestors(_ id: Int64, _ parent: [Int64: Int64]) -> [Int64] {
        var result: [Int64] = []
        var current = parent[id]
        while let node = current {
            result.append(node)
            current = parent[node]
        }
        return result.reversed()
    }

    func testAncestorsDepthsAndLCA_equalAParentPointerWalk_onRandomForests() throws {
        var seeds = SplitMix64(for: self)
        for round in 0..<3 {
            let seed = seeds.next()
            let (tree, parent, ids) = try randomTree(nodes: 3000, roots: round == 0 ? 1 : 4, seed: seed)
            XCTAssertEqual(tree.count, ids.count)
            var random = SplitMix64(seed: seed &+ 100)
            for id in ids {
                let node = try XCTUnwrap(tree.index(of: id))
                XCTAssertEqual(tree.id(at: node), id)
                let expected = plainAncestors(id, parent)
                XCTAssertEqual(tree.ancestors(of: node).map(tree.id(at:)), expected, "seed \(seed), id \(id)")
                XCTAssertEqual(tree.depth(of: node), expected.count)
                XCTAssertEqual(tree.name(of: node), "Taxon \(id) é")
            }
            for _ in 0..<3000 {
                let a = ids.randomElement(using: &random)!, b = ids.randomElement(using: &random)!
                let pathA = plainAncestors(a, parent) + [a], pathB = Set(plainAncestors(b, parent) + [b])
                let expected = pathA.last(where: pathB.contains)
                let lca = tree.lowestCommonAncestor(tree.index(of: a)!, tree.index(of: b)!).map(tree.id(at:))
                XCTAssertEqual(lca, expected, "seed \(seed), pair \(a) \(b)")
            }
        }
    }

    func testRanks_keepTheSourceSpelling_andMapOnlyTheEightMainRanks() throws {
        var builder = TaxonomyTree.Builder()
        try builder.append(id: 1, parentID: 1, rank: "no rank", name: "root".utf8)  // NCBI: the root is its own parent
        try builder.append(id: 2, parentID: 131567, rank: "superkingdom", name: "Bacteria".utf8)
        try builder.append(id: 131567, parentID: 1, rank: "no rank", name: "cellular organisms".utf8)
        let tree = try builder.build()
        XCTAssertEqual(tree.roots().map(tree.id(at:)), [1])
        let bacteria = try XCTUnwrap(tree.index(of: 2))
        XCTAssertEqual(tree.rank(of: bacteria), "superkingdom")
        XCTAssertEqual(tree.mainRank(of: bacteria), .domain)
        XCTAssertNil(tree.mainRank(of: tree.index(of: 131567)!))
        XCTAssertEqual(tree.ancestors(of: bacteria).map(tree.id(at:)), [1, 131567])
    }

    func testBadInput_isATypedError() {
        var unknown = TaxonomyTree.Builder()
        XCTAssertNoThrow(try unknown.append(id: 5, parentID: 7, rank: "genus", name: "A".utf8))
        XCTAssertThrowsError(try unknown.build()) { XCTAssertEqual($0 as? TaxonomyTree.BuildError, .unknownParent(child: 5, parent: 7)) }
        var cycle = TaxonomyTree.Builder()
        XCTAssertNoThrow(try cycle.append(id: 1, parentID: 2, rank: "genus", name: "A".utf8))
        XCTAssertNoThrow(try cycle.append(id: 2, parentID: 1, rank: "genus", name: "B".utf8))
        XCTAssertThrowsError(try cycle.build()) { error in
            guard case .cycle = error as? TaxonomyTree.BuildError else { return XCTFail("\(error)") }
        }
        var order = TaxonomyTree.Builder()
        XCTAssertNoThrow(try order.append(id: 3, parentID: nil, rank: "genus", name: "A".utf8))
        XCTAssertThrowsError(try order.append(id: 3, parentID: nil, rank: "genus", name: "B".utf8)) {
            XCTAssertEqual($0 as? TaxonomyTree.BuildError, .idsNotAscending(3))
        }
    }
}

extension WholeTreeTests {
    func testNodesNamed_findsEveryNodeOfAName_andOnlyThose() throws {
        var builder = TaxonomyTree.Builder()
        let names = ["Panthera", "Pantheidae", "Panthera", "Panther", "Panthera leo", "", "Zz", "panthera", "Panthera"]
        for (offset, name) in names.enumerated() {
            try builder.append(id: Int64(offset + 1), parentID: offset == 0 ? nil : 1, rank: "genus", name: name.utf8)
        }
        let tree = try builder.build()
        XCTAssertEqual(tree.nodes(named: "Panthera").map(tree.id(at:)), [1, 3, 9])
        XCTAssertEqual(tree.nodes(named: "Panther").map(tree.id(at:)), [4], "a prefix is not the name")
        XCTAssertEqual(tree.nodes(named: "panthera").map(tree.id(at:)), [8], "case matters, as in NCBI")
        XCTAssertEqual(tree.nodes(named: "Panthera leo").map(tree.id(at:)), [5])
        XCTAssertEqual(tree.nodes(named: "Nothing"), [])
        XCTAssertEqual(tree.nodes(named: "").map(tree.id(at:)), [6])
        XCTAssertEqual(tree.nodes(named: "Zz").map(tree.id(at:)), [7])
    }
}

extension WholeTreeTests {
    func testNodesNamed_equalsALinearScan_withManySharedNames() throws {
        var random = SplitMix64(for: self)
        let vocabulary = (0..<300).map { "name \($0 % 97) \($0 % 5 == 0 ? "é" : "")" } + ["", "environmental samples"]
        var builder = TaxonomyTree.Builder()
        var names: [String] = []
        for id in 1...5000 {
            let name = vocabulary.randomElement(using: &random)!
            names.append(name)
            try builder.append(id: Int64(id), parentID: id == 1 ? nil : 1, rank: "no rank", name: name.utf8)
        }
        let tree = try builder.build()
        for name in Set(vocabulary + ["missing", "name 1", "name 96 é"]) {
            let expected = names.indices.filter { names[$0] == name }.map { Int64($0 + 1) }
            XCTAssertEqual(tree.nodes(named: name).map(tree.id(at:)), expected, name)
        }
    }

    /// A batch may ask a thousand times for a name thousands of nodes share: the lookup
    /// lists the first few in id order and counts the rest without listing them.
    func testNodesNamed_withALimit_listsTheFirstInIDOrder_andCountsEveryNode() throws {
        var random = SplitMix64(for: self)
        let vocabulary = ["environmental samples", "unclassified", "Bacillus", "a", ""] + (0..<40).map { "rare \($0)" }
        var builder = TaxonomyTree.Builder()
        var names: [String] = []
        for id in 1...6000 {
            // Most nodes share the first names: runs of hundreds to thousands.
            let name = Bool.random(using: &random) ? vocabulary[Int.random(in: 0..<3, using: &random)] : vocabulary.randomElement(using: &random)!
            names.append(name)
            try builder.append(id: Int64(id), parentID: id == 1 ? nil : 1, rank: "no rank", name: name.utf8)
        }
        let tree = try builder.build()
        for name in vocabulary + ["missing", "environmental sample", "environmental samples "] {
            let expected = names.indices.filter { names[$0] == name }.map { Int64($0 + 1) }
            for limit in [0, 1, 16, 100, expected.count, expected.count + 1, .max] {
                let found = tree.nodes(named: name, limit: limit)
                XCTAssertEqual(found.nodes.map(tree.id(at:)), Array(expected.prefix(limit)), "\(name), limit \(limit)")
                XCTAssertEqual(found.total, expected.count, "\(name): every node counted")
            }
        }
    }
}

extension WholeTreeTests {
    /// A name order handed to the builder (as `idx_taxa_name` gives it) builds the
    /// same tree as the builder's own sort: the same order, the same lookups; an
    /// order that misses or repeats a node is a typed error.
    func testANameOrderGivenToTheBuilder_equalsItsOwnSort_andAnIncompleteOneIsRefused() throws {
        var random = SplitMix64(for: self)
        let vocabulary = ["Panthera", "Panthera leo", "panthera", "Pan", "", "Ärger", "environmental samples", "Z"]
        var entries: [(id: Int64, name: String)] = []
        var sorting = TaxonomyTree.Builder(), given = TaxonomyTree.Builder()
        for id in Int64(1)...2000 {
            let name = vocabulary.randomElement(using: &random)! + (Bool.random(using: &random) ? "" : " \(id % 13)")
            entries.append((id, name))
            try sorting.append(id: id, parentID: id == 1 ? nil : 1, rank: "no rank", name: name.utf8)
            try given.append(id: id, parentID: id == 1 ? nil : 1, rank: "no rank", name: name.utf8)
        }
        // SQLite's BINARY order: the bytes, a prefix first, then the id.
        let byName = entries.sorted { a, b in
            Array(a.name.utf8) != Array(b.name.utf8) ? Array(a.name.utf8).lexicographicallyPrecedes(Array(b.name.utf8)) : a.id < b.id
        }.map(\.id)
        try given.setNameOrder(byName)
        let sorted = try sorting.build(), handed = try given.build()
        var orderA: [Int64] = [], orderB: [Int64] = []
        sorted.forEachInNameOrder { orderA.append(sorted.id(at: $0)) }
        handed.forEachInNameOrder { orderB.append(handed.id(at: $0)) }
        XCTAssertEqual(orderA, byName)
        XCTAssertEqual(orderB, byName)
        for name in Set(entries.map(\.name)) {
            XCTAssertEqual(handed.nodes(named: name), sorted.nodes(named: name), name)
        }
        var incomplete = TaxonomyTree.Builder()
        try incomplete.append(id: 1, parentID: nil, rank: "no rank", name: "a".utf8)
        try incomplete.append(id: 2, parentID: 1, rank: "no rank", name: "b".utf8)
        XCTAssertThrowsError(try incomplete.setNameOrder([1, 1])) { XCTAssertEqual($0 as? TaxonomyTree.BuildError, .nameOrderIncomplete) }
        XCTAssertThrowsError(try incomplete.setNameOrder([2])) { XCTAssertEqual($0 as? TaxonomyTree.BuildError, .nameOrderIncomplete) }
    }

    /// The closest species equal a brute force over every species of the tree
    /// (distance, then name, then id), for random targets and n.
    func testClosestSpecies_equalABruteForceOverEverySpecies() throws {
        var random = SplitMix64(for: self)
        let (tree, _, ids) = try randomTree(nodes: 1500, roots: 1, seed: random.next())
        let species = ids.compactMap { tree.index(of: $0) }.filter { tree.rank(of: $0) == "species" }
        XCTAssertGreaterThan(species.count, 100)
        for _ in 0..<60 {
            let target = species.randomElement(using: &random)!
            let n = Int.random(in: 1...12, using: &random)
            let expected = species.filter { $0 != target }.map { other -> (Int, Int, String, Int64) in
                let lca = tree.lowestCommonAncestor(target, other)!
                return (other, tree.depth(of: target) + tree.depth(of: other) - 2 * tree.depth(of: lca), tree.name(of: other), tree.id(at: other))
            }.sorted { ($0.1, $0.2, $0.3) < ($1.1, $1.2, $1.3) }.prefix(n)
            let got = tree.closestSpecies(of: target, n: n, in: .all)
            XCTAssertFalse(got.truncated)
            XCTAssertEqual(got.relatives.map(\.node), expected.map(\.0), "target \(tree.id(at: target)), n \(n)")
            XCTAssertEqual(got.relatives.map { Int($0.distance) }, expected.map(\.1))
            for relative in got.relatives {
                XCTAssertEqual(relative.lca, tree.lowestCommonAncestor(target, relative.node))
            }
        }
    }
}

extension WholeTreeTests {
    /// The eight-rank view derived from the ranks: a node's view parent is its
    /// nearest ancestor of a main rank and its view lineage the main-rank nodes of
    /// its lineage; common ancestors, both distances and the closest species in the
    /// view equal a plain computation over those lineages.
    func testTheView_equalsAPlainComputationOverMainRankAncestors() throws {
        var random = SplitMix64(for: self)
        let seed = random.next()
        let (tree, parent, ids) = try randomTree(nodes: 1500, roots: 1, seed: seed)
        let mainRanks: Set = ["species", "genus", "superkingdom"]
        func rank(_ id: Int64) -> String { tree.rank(of: tree.index(of: id)!) }
        func viewLineage(_ id: Int64) -> [Int64] { plainAncestors(id, parent).filter { mainRanks.contains(rank($0)) } }
        for id in ids {
            let node = try XCTUnwrap(tree.index(of: id))
            XCTAssertEqual(tree.isInView(node), mainRanks.contains(rank(id)))
            XCTAssertEqual(tree.ancestors(of: node, in: .main).map(tree.id(at:)), viewLineage(id), "seed \(seed), id \(id)")
            XCTAssertEqual(tree.parent(of: node, in: .main).map(tree.id(at:)), viewLineage(id).last)
            XCTAssertEqual(tree.depth(of: node, in: .main), viewLineage(id).count)
            if tree.isInView(node) {
                XCTAssertEqual(tree.children(of: node, in: .main).map(tree.id(at:)).sorted(),
                               ids.filter { mainRanks.contains(rank($0)) && viewLineage($0).last == id })
            } else {
                XCTAssertEqual(tree.childCount(of: node, in: .main), 0, "a node outside the view has no children in it")
            }
        }
        // compare: the LCA on the whole tree, its nearest main ancestor, both distances.
        for _ in 0..<2000 {
            let a = ids.randomElement(using: &random)!, b = ids.randomElement(using: &random)!
            let pathA = plainAncestors(a, parent) + [a], pathB = plainAncestors(b, parent) + [b]
            let lca = try XCTUnwrap(pathA.last(where: Set(pathB).contains))
            let comparison = try XCTUnwrap(tree.compare(tree.index(of: a)!, tree.index(of: b)!))
            XCTAssertEqual(tree.id(at: comparison.lca), lca)
            let lcaPath = plainAncestors(lca, parent) + [lca]
            XCTAssertEqual(tree.id(at: comparison.mainLCA), lcaPath.last { mainRanks.contains(rank($0)) } ?? lca)
            let below = Array(pathA.drop { $0 != lca }.dropFirst()) + Array(pathB.drop { $0 != lca }.dropFirst())
            XCTAssertEqual(comparison.distanceAll, below.count, "\(a) \(b)")
            XCTAssertEqual(comparison.distanceMain, below.filter { mainRanks.contains(rank($0)) }.count, "\(a) \(b)")
        }
        // Closest species in the view: every other species by view distance, name bytes, id.
        let species = ids.filter { rank($0) == "species" }
        func viewPath(_ id: Int64) -> [Int64] { viewLineage(id) + [id] }
        for _ in 0..<40 {
            let target = species.randomElement(using: &random)!
            let n = Int.random(in: 1...12, using: &random)
            let targetPath = viewPath(target)
            let expected = species.filter { $0 != target }.compactMap { other -> (Int64, Int, [UInt8])? in
                let otherPath = viewPath(other)
                guard let common = targetPath.last(where: Set(otherPath).contains) else { return nil }
                let distance = targetPath.count + otherPath.count - 2 * (targetPath.firstIndex(of: common)! + 1)
                return (other, distance, Array(tree.name(of: tree.index(of: other)!).utf8))
            }.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : ($0.2 != $1.2 ? $0.2.lexicographicallyPrecedes($1.2) : $0.0 < $1.0) }.prefix(n)
            let got = tree.closestSpecies(of: tree.index(of: target)!, n: n, in: .main)
            XCTAssertFalse(got.truncated)
            XCTAssertEqual(got.relatives.map { tree.id(at: $0.node) }, expected.map(\.0), "seed \(seed), target \(target), n \(n)")
            XCTAssertEqual(got.relatives.map { Int($0.distance) }, expected.map(\.1))
        }
    }

    /// The pipeline's precomputed index answers exactly what the query answers, in
    /// both views, on a tree where species nest under species and most nodes are
    /// outside the view.
    func testRelativesIndex_equalsClosestSpecies_inBothViews() throws {
        var random = SplitMix64(for: self)
        let seed = random.next()
        let (tree, _, _) = try randomTree(nodes: 1200, roots: 2, seed: seed)
        for view in [TaxonomyTree.View.main, .all] {
            let index = TaxonomyTree.RelativesIndex(tree, view: view)
            var checked = 0
            for node in 0..<tree.count where tree.isSpecies(node, in: view) {
                for n in [1, 5, 30] {
                    XCTAssertEqual(index.closestRelatives(of: node, n: n), tree.closestSpecies(of: node, n: n, in: view).relatives,
                                   "seed \(seed), \(view), node \(tree.id(at: node)), n \(n)")
                }
                checked += 1
            }
            XCTAssertGreaterThan(checked, 100)
        }
    }

    /// The guard stops the scan after that many nodes and says the answer may be
    /// incomplete; without it the answer is exact.
    func testClosestSpecies_guard_stopsAfterThatManyNodes() throws {
        var random = SplitMix64(for: self)
        let (tree, _, ids) = try randomTree(nodes: 1500, roots: 1, seed: random.next())
        let target = try XCTUnwrap(ids.compactMap { tree.index(of: $0) }.first { tree.rank(of: $0) == "species" })
        let guarded = tree.closestSpecies(of: target, n: 50, maximumCandidates: 7, in: .all)
        XCTAssertTrue(guarded.truncated)
        XCTAssertEqual(guarded.examined, 7)
        let exact = tree.closestSpecies(of: target, n: 50, in: .all)
        XCTAssertFalse(exact.truncated)
        XCTAssertGreaterThan(exact.examined, 7)
    }
}
