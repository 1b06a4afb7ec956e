import STOLModel
import STOLTestFixtures
import XCTest

final class CompactTaxonTreeTests: XCTestCase {
    /// A random eight-rank forest with some ranks skipped and names that collide.
    private func randomTree(_ generator: inout SplitMix64, size: Int) throws -> TaxonTree {
        var nodes: [TaxonTree.Node] = []
        var byLevel: [[TaxonTree.Node]] = Array(repeating: [], count: 8)
        var nextID: Int64 = 1
        for _ in 0..<3 {
            let root = TaxonTree.Node(id: nextID, parentID: nil, rank: .domain, scientificName: "Root\(nextID)")
            nextID += 1
            nodes.append(root)
            byLevel[0].append(root)
        }
        while nodes.count < size {
            let level = Int.random(in: 1...7, using: &generator)
            let parentLevel = max(0, level - Int.random(in: 1...2, using: &generator))
            guard let parent = byLevel[parentLevel].randomElement(using: &generator) else { continue }
            let name = "N\(Int.random(in: 0..<(size / 3), using: &generator))"
            let node = TaxonTree.Node(id: nextID * 7 + Int64.random(in: 0..<7, using: &generator), parentID: parent.id,
                                      rank: TaxonRank.allCases[level], scientificName: name)
            nextID += 1
            nodes.append(node)
            byLevel[level].append(node)
        }
        return try TaxonTree(nodes: nodes.shuffled(using: &generator))
    }

    func testClosestRelatives_agreeWithTaxonTreeOnRandomTrees() throws {
        var generator = SplitMix64(for: self)
        for _ in 0..<20 {
            let tree = try randomTree(&generator, size: 400)
            let compact = try CompactTaxonTree(tree)
            XCTAssertEqual(compact.count, tree.count)
            for index in tree.nodes.indices where tree.nodes[index].rank == .species {
                let id = tree.nodes[index].id
                for n in [1, 4, 30] {
                    let expected = tree.closestRelatives(of: index, n: n).map {
                        [tree.nodes[$0.node].id, tree.nodes[$0.lca].id, Int64($0.distance)]
                    }
                    let answer = compact.closestRelatives(of: compact.index(of: id)!, n: n)
                    XCTAssertFalse(answer.truncated)
                    XCTAssertEqual(answer.relatives.map { [compact.id(at: $0.node), compact.id(at: $0.lca), Int64($0.distance)] },
                                   expected, "species \(id), n \(n)")
                }
            }
        }
    }

    func testChildren_comeInNameThenIDOrder_andLCAMatchesTaxonTree() throws {
        var generator = SplitMix64(for: self)
        let tree = try randomTree(&generator, size: 300)
        let compact = try CompactTaxonTree(tree)
        for index in tree.nodes.indices {
            let id = tree.nodes[index].id
            let expected = tree.nodes.filter { $0.parentID == id }
                .sorted { ($0.scientificName, $0.id) < ($1.scientificName, $1.id) }.map(\.id)
            let (page, total) = compact.children(of: compact.index(of: id)!, offset: 0, limit: 1000)
            XCTAssertEqual(page.map(compact.id(at:)), expected)
            XCTAssertEqual(total, expected.count)
            XCTAssertEqual(compact.childCount(of: compact.index(of: id)!), expected.count)
            let (second, _) = compact.children(of: compact.index(of: id)!, offset: 1, limit: 2)
            XCTAssertEqual(second.map(compact.id(at:)), Array(expected.dropFirst().prefix(2)))
        }
        for _ in 0..<500 {
            let a = Int.random(in: 0..<tree.count, using: &generator), b = Int.random(in: 0..<tree.count, using: &generator)
            let expected = tree.lowestCommonAncestor(a, b).map { tree.nodes[$0].id }
            let found = compact.lowestCommonAncestor(compact.index(of: tree.nodes[a].id)!, compact.index(of: tree.nodes[b].id)!)
            XCTAssertEqual(found.map(compact.id(at:)), expected)
        }
        XCTAssertNil(compact.index(of: -5))
    }

    func testInit_withAnUnknownParent_throws() {
        XCTAssertThrowsError(try CompactTaxonTree(ids: [1, 2], parentIDs: [0, 9], rankLevels: [0, 1], nameOrder: [0, 1])) {
            XCTAssertEqual($0 as? CompactTaxonTree.BuildError, .unknownParent(child: 2, parent: 9))
        }
    }
}
