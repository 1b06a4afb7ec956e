import STOLModel
import STOLTestFixtures
import XCTest

/// ``TaxonomyTree/inducedTree(of:in:keepSingleChildren:)`` on random trees against ete4's
/// `get_topology` written out as ete4 writes it (a tree of every lineage node from the
/// root, one-child nodes not asked for deleted but the root, then the root's only child
/// detached, unless the root was asked for), compared as sets of (node, parent) edges:
/// the order of children is each side's own.
final class TaxonomyTreeInducedTreeTests: XCTestCase {
    /// ete4 0.x `NCBITaxa.get_topology(taxids, intermediate_nodes:)`, for one root.
    private func ete4Topology(_ taxa: Set<TaxonID>, _ naive: NaiveTree, root: TaxonID,
                              intermediateNodes: Bool) -> (top: TaxonID, edges: Set<[TaxonID]>) {
        var children: [TaxonID: [TaxonID]] = [:]
        var parent: [TaxonID: TaxonID] = [:]
        for taxon in taxa {
            let lineage = Array(naive.pathToRoot(taxon).reversed())
            for (upper, lower) in zip(lineage, lineage.dropFirst()) where parent[lower] == nil {
                parent[lower] = upper
                children[upper, default: []].append(lower)
            }
        }
        if !intermediateNodes {
            // root.descendants(): every node below the root, each deleted when it has one child
            // left at its turn (a deletion hands its child to its parent).
            var order: [TaxonID] = []
            var stack = children[root] ?? []
            while let node = stack.popLast() {
                order.append(node)
                stack.append(contentsOf: children[node] ?? [])
            }
            for node in order where (children[node] ?? []).count == 1 && !taxa.contains(node) {
                let child = children[node]![0], up = parent[node]!
                children[up] = children[up]!.filter { $0 != node } + [child]
                parent[child] = up
                children[node] = nil
                parent[node] = nil
            }
        }
        // ete4 detaches the root's only child even when the root itself was asked for;
        // STOL never leaves out a taxon asked for (docs/usage.md, `tree --taxa`): the one
        // place the two differ, kept out of the comparison here.
        var top = root
        if (children[root] ?? []).count == 1 && !taxa.contains(root) { top = children[root]![0] }
        var edges: Set<[TaxonID]> = []
        var stack = [top]
        while let node = stack.popLast() {
            for child in children[node] ?? [] {
                edges.insert([child, node])
                stack.append(child)
            }
        }
        return (top, edges)
    }

    private func edges(_ induced: TaxonomyTree.InducedTree, _ tree: TaxonomyTree) -> (top: TaxonID?, edges: Set<[TaxonID]>) {
        var result: Set<[TaxonID]> = []
        var path: [TaxonID] = []
        for (index, node) in induced.nodes.enumerated() {
            let id = node.map(tree.id(at:)) ?? 0
            path.removeLast(max(0, path.count - induced.depths[index]))
            if let parent = path.last { result.insert([id, parent]) }
            path.append(id)
        }
        return (induced.nodes.first.flatMap { $0 }.map(tree.id(at:)), result)
    }

    func testInducedTree_isEte4sGetTopology_onRandomSets_withAndWithoutIntermediateNodes() throws {
        let seed = TestSeed.make(for: self)
        var rng = SplitMix64(seed: seed)
        let input = randomTaxonomy(count: 500, seed: seed)
        let tree = try TaxonomyTree(testNodes: input)
        let naive = NaiveTree(input)
        let root = try XCTUnwrap(input.first { $0.parentID == nil }).id
        for round in 0..<300 {
            let taxa = Set((0..<Int.random(in: 2...40, using: &rng)).map { _ in input.randomElement(using: &rng)!.id })
            let keep = round % 3 == 0
            let expected = ete4Topology(taxa, naive, root: root, intermediateNodes: keep)
            let induced = tree.inducedTree(of: try taxa.map { try XCTUnwrap(tree.index(of: $0)) }, keepSingleChildren: keep)
            let got = edges(induced, tree)
            XCTAssertEqual(got.top, expected.top, "taxa \(taxa.sorted()), keep \(keep) (seed \(seed))")
            XCTAssertEqual(got.edges, expected.edges, "taxa \(taxa.sorted()), keep \(keep) (seed \(seed))")
            // Every taxon asked for is in the tree, marked; nothing else is marked.
            let marked = Set(zip(induced.nodes, induced.requested).compactMap { $0.1 ? $0.0.map(tree.id(at:)) : nil })
            XCTAssertEqual(marked, taxa)
        }
    }

    func testTaxaUnderSeveralRoots_hangFromAnUnnamedTop() throws {
        let tree = try TaxonomyTree(testNodes: [
            .init(id: 1, parentID: nil, rank: .domain, scientificName: "A"),
            .init(id: 2, parentID: nil, rank: .domain, scientificName: "B"),
            .init(id: 3, parentID: 1, rank: .species, scientificName: "A a"),
            .init(id: 4, parentID: 2, rank: .species, scientificName: "B b"),
        ])
        let induced = tree.inducedTree(of: [3, 4].map { tree.index(of: $0)! })
        XCTAssertEqual(induced.nodes.map { $0.map(tree.id(at:)) }, [nil, 3, 4], "the domains with one child each give way")
        XCTAssertEqual(induced.depths, [0, 1, 1])
        XCTAssertEqual(tree.inducedTree(of: []).nodes, [])
        XCTAssertEqual(tree.inducedTree(of: [tree.index(of: 3)!]).nodes.map { $0.map(tree.id(at:)) }, [3])
    }
}
