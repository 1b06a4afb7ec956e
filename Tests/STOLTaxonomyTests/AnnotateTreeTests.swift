import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The taxon each node of a user's tree gets (`annotate_tree`, ete4's `annotate_tree`
/// with `ignore_unclassified`): own taxa, inner nodes the common ancestor of their
/// annotated leaves only (not of inner labels, not pulled up by unknown leaves), on
/// the whole tree; a tree sent in parts answered as the whole; typed refusals of
/// malformed trees; over ``DomainRulesFixture``.
final class AnnotateTreeTests: XCTestCase {
    /// A tree written as nested arrays: a leaf is its taxon (0: none), an inner node
    /// `(own taxon, children)`.
    indirect enum Node {
        case leaf(Int64)
        case inner(Int64, [Node])

        /// Preorder depths and taxa.
        func flattened(depth: UInt32 = 0, into out: inout (depths: [UInt32], ids: [Int64])) {
            switch self {
            case .leaf(let id):
                out.depths.append(depth)
                out.ids.append(id)
            case .inner(let id, let children):
                out.depths.append(depth)
                out.ids.append(id)
                for child in children { child.flattened(depth: depth + 1, into: &out) }
            }
        }

        var flat: (depths: [UInt32], ids: [Int64]) {
            var out: (depths: [UInt32], ids: [Int64]) = ([], [])
            flattened(into: &out)
            return out
        }
    }

    private func annotate(_ harness: ServiceHarness, depths: [UInt32], ids: [Int64]) async -> Stol_V1_TaxonomyResponse {
        await harness.send(.annotateTree(.with { $0.depths = depths; $0.taxonIds = ids }))
    }

    private func annotate(_ harness: ServiceHarness, _ tree: Node) async throws -> Stol_V1_AnnotateTreeResponse {
        let flat = tree.flat
        let response = await annotate(harness, depths: flat.depths, ids: flat.ids)
        guard case .annotateTree(let answer)? = response.result else { throw TestSupportError("expected an annotation, got \(response)") }
        return answer
    }

    func testNodes_getTheirOwnTaxon_innerNodesTheirAnnotatedLeavesAncestor_unknownLeavesPullNothingUp() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        // ((lion, tiger), (cat, unknown), K-12, ())
        let tree = Node.inner(0, [.inner(0, [.leaf(9689), .leaf(9694)]), .inner(0, [.leaf(9685), .leaf(0)]), .leaf(83333),
                                  .inner(0, [])])
        let answer = try await annotate(harness, tree)
        XCTAssertEqual(answer.taxonIds, [131567, 9688, 9689, 9694, 9685, 9685, 0, 83333, 0])
        XCTAssertEqual(answer.leavesAncestor, 131567, "cellular organisms: a bacterium and the cats")
    }

    func testAnInnerNodesOwnTaxon_isItsAnswer_butItsParentCountsOnlyLeaves() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        // ((lion, tiger)Felis, cat): the root is Felidae (lion, tiger, cat), not Felis (Felis, cat).
        let answer = try await annotate(harness, .inner(0, [.inner(9682, [.leaf(9689), .leaf(9694)]), .leaf(9685)]))
        XCTAssertEqual(answer.taxonIds, [9681, 9682, 9689, 9694, 9685])
        XCTAssertEqual(answer.leavesAncestor, 9681)
        let named = try await annotate(harness, .inner(2759, [.leaf(9689), .leaf(9694)]))
        XCTAssertEqual(named.taxonIds, [2759, 9689, 9694])
        XCTAssertEqual(named.leavesAncestor, 9688, "the root's own taxon stays out of what its subtree counts as")
    }

    func testAncestors_areTheWholeTrees_acrossDomainsUpToTheRoot() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let answer = try await annotate(harness, .inner(0, [.leaf(2697049), .leaf(511145), .inner(0, [.leaf(9695), .leaf(9689)])]))
        XCTAssertEqual(answer.taxonIds, [1, 2697049, 511145, 9689, 9695, 9689], "a virus and a bacterium meet at the root")
        let lone = try await annotate(harness, .leaf(562))
        XCTAssertEqual(lone.taxonIds, [562])
        XCTAssertEqual(lone.leavesAncestor, 562)
        let nothing = try await annotate(harness, .inner(0, [.leaf(0), .inner(0, [.leaf(0)])]))
        XCTAssertEqual(nothing.taxonIds, [0, 0, 0, 0])
        XCTAssertEqual(nothing.leavesAncestor, 0)
    }

    /// A source with several roots (the Felidae fixture: Eukaryota and Bacteria): leaves
    /// under different roots have no common ancestor, nor has any node above them, also
    /// when their subtree stands as one leaf (-1) in a larger request.
    func testLeavesUnderDifferentRoots_giveNoAncestor_upToTheRoot_alsoSentInParts() async throws {
        let harness = try ServiceHarness(self)
        await harness.waitForTreeLoaded()
        let whole = try await annotate(harness, .inner(0, [.inner(0, [.leaf(9689), .leaf(562)]), .inner(0, [.leaf(9694), .leaf(9689)])]))
        XCTAssertEqual(whole.taxonIds, [0, 0, 9689, 562, 9688, 9694, 9689])
        XCTAssertEqual(whole.leavesAncestor, -1)
        let part = try await annotate(harness, .inner(0, [.leaf(9689), .leaf(562)]))
        XCTAssertEqual(part.leavesAncestor, -1)
        let rest = try await annotate(harness, .inner(0, [.leaf(part.leavesAncestor), .inner(0, [.leaf(9694), .leaf(9689)])]))
        XCTAssertEqual(rest.taxonIds, [0, 0, 9688, 9694, 9689])
        XCTAssertEqual(rest.leavesAncestor, -1)
        let inner = await annotate(harness, depths: [0, 1, 2], ids: [0, -1, 9689])
        XCTAssertEqual(errorCode(inner), .invalidRequest, "-1 stands for leaves, on a leaf only")
    }

    /// Random trees over every node of the fixture: the answer of the whole equals the
    /// answer of the tree sent in parts (each part's subtrees answered first and sent
    /// as one leaf carrying their `leaves_ancestor`), and each inner node's taxon is the
    /// deepest node on every annotated leaf's whole-tree lineage (from lineage_batch).
    func testATreeSentInParts_isAnsweredAsTheWhole_andAsTheLeavesLineagesSay() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        var random = SplitMix64(for: self)
        let ids: [Int64] = RankRulesTests.queries.map { Int64($0)! } + [9694, 9690, 9685, 9682, 33554, 7711, 40674, 0, 0, 0]
        var lineages: [Int64: [Int64]] = [:]
        let batch = await harness.send(.lineageBatch(.with { $0.queries = ids.filter { $0 != 0 }.map(String.init); $0.ranks = .all; $0.form = .ids }))
        guard case .lineageBatch(let found)? = batch.result else { return XCTFail("\(batch)") }
        for result in found.results { lineages[result.taxon.id] = result.lineageIds + [result.taxon.id] }
        for round in 0..<30 {
            let tree = randomTree(&random, ids: ids, size: 5 + round * 3)
            let whole = try await annotate(harness, tree)
            let parts = try await annotateInParts(harness, tree, random: &random)
            XCTAssertEqual(parts, whole.taxonIds, "round \(round)")
            // The reference: the deepest id on every annotated leaf's lineage.
            var index = 0
            func check(_ node: Node) -> [Int64] {  // the annotated leaves' taxa below `node`
                let position = index
                index += 1
                switch node {
                case .leaf(let id):
                    return id == 0 ? [] : [id]
                case .inner(let own, let children):
                    let leaves = children.flatMap(check)
                    let expected: Int64
                    if own != 0 {
                        expected = own
                    } else if leaves.isEmpty {
                        expected = 0
                    } else {
                        let paths = leaves.map { lineages[$0] ?? [] }
                        expected = paths[0].last { id in paths.allSatisfy { $0.contains(id) } } ?? -1
                    }
                    XCTAssertEqual(whole.taxonIds[position], expected, "round \(round), node \(position)")
                    return leaves
                }
            }
            _ = check(tree)
        }
    }

    private func randomTree(_ random: inout SplitMix64, ids: [Int64], size: Int) -> Node {
        var nodes: [Node] = (0..<size).map { _ in .leaf(ids.randomElement(using: &random)!) }
        while nodes.count > 1 {
            nodes.shuffle(using: &random)
            let take = min(nodes.count, Int.random(in: 1...3, using: &random))
            let own = Bool.random(using: &random) && Bool.random(using: &random) ? ids.randomElement(using: &random)! : 0
            nodes = [.inner(own, Array(nodes.prefix(take)))] + nodes.dropFirst(take)
        }
        return nodes[0]
    }

    /// The whole tree's answer, obtained in parts: random subtrees are sent first, each
    /// answered and then replaced in the tree by one leaf carrying its `leaves_ancestor`,
    /// until the rest is sent. Each node's answer comes from the part that held it.
    private func annotateInParts(_ harness: ServiceHarness, _ tree: Node, random: inout SplitMix64) async throws -> [Int64] {
        let flat = tree.flat
        var depths = flat.depths, ids = flat.ids
        var original = Array(ids.indices)          // working position -> the node it is (or stands for)
        var standIn = [Bool](repeating: false, count: ids.count)
        var answers = [Int64?](repeating: nil, count: ids.count)
        func end(of index: Int) -> Int {
            var next = index + 1
            while next < depths.count && depths[next] > depths[index] { next += 1 }
            return next
        }
        func record(_ range: Range<Int>, _ answer: Stol_V1_AnnotateTreeResponse) {
            for (offset, position) in range.enumerated() where !standIn[position] {
                answers[original[position]] = answer.taxonIds[offset]
            }
        }
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let inner = depths.indices.filter { $0 > 0 && end(of: $0) > $0 + 1 }
            guard let cut = inner.randomElement(using: &random) else { break }
            let range = cut..<end(of: cut)
            let response = await annotate(harness, depths: depths[range].map { $0 - depths[cut] }, ids: Array(ids[range]))
            guard case .annotateTree(let part)? = response.result else { throw TestSupportError("\(response)") }
            record(range, part)
            depths.replaceSubrange(range, with: [depths[cut]])
            ids.replaceSubrange(range, with: [part.leavesAncestor])
            original.replaceSubrange(range, with: [original[cut]])
            standIn.replaceSubrange(range, with: [true])
        }
        let response = await annotate(harness, depths: depths, ids: ids)
        guard case .annotateTree(let rest)? = response.result else { throw TestSupportError("\(response)") }
        record(0..<depths.count, rest)
        return answers.map { $0 ?? -1 }
    }

    func testMalformedTrees_andUnknownTaxa_areRefused_typed() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let cases: [([UInt32], [Int64], Stol_V1_ErrorCode, String)] = [
            ([], [], .invalidRequest, "at least one node"),
            ([0, 1], [9689], .invalidRequest, "one of each per node"),
            ([1, 2], [0, 0], .invalidRequest, "the first node is the root"),
            ([0, 1, 3], [0, 0, 0], .invalidRequest, "one level at a time"),
            ([0, 1, 0], [0, 0, 0], .invalidRequest, "one level at a time"),
            ([0, 1], [0, -5], .invalidRequest, "positive"),
            ([0, 1], [0, 424242], .notFound, "424242"),
        ]
        for (depths, ids, code, message) in cases {
            let response = await annotate(harness, depths: depths, ids: ids)
            guard case .error(let error)? = response.result else { XCTFail("\(depths) \(ids): answered"); continue }
            XCTAssertEqual(error.code, code, message)
            XCTAssertTrue(error.message.contains(message), error.message)
        }
        let many = ComparisonQueries.maximumAnnotatedNodes + 1
        let tooMany = await annotate(harness, depths: [0] + Array(repeating: 1, count: many - 1), ids: Array(repeating: 0, count: many))
        XCTAssertEqual(errorCode(tooMany), .invalidRequest)
        let mainOnly = try await DomainRulesFixture.harness(self, fullTree: false)
        let refused = await annotate(mainOnly, depths: [0, 1], ids: [0, 9689])
        guard case .error(let error)? = refused.result else { return XCTFail("\(refused)") }
        XCTAssertEqual(error.details["ranks"], "main")
    }
}
