import STOLClientKit
import STOLProtocol
import STOLTestFixtures
import XCTest

/// `stol-client annotate` cuts a tree larger than a request into parts
/// (``AnnotateTreeParts``): every node gets what the tree sent whole gives it. The
/// answers of each part come from a reference of the rule on a random taxonomy (the
/// rule itself is the server's, pinned by `AnnotateTreeTests` and the integration
/// tests); what is checked here is the cutting, with budgets small enough to nest it.
final class AnnotateTreePartsTests: XCTestCase {
    /// A random taxonomy: `parent[t]` of taxon t (taxon 1 the root, its own parent).
    private struct Taxonomy {
        var parent: [Int64] = [0, 1]
        func path(_ taxon: Int64) -> [Int64] {
            var path = [taxon], at = taxon
            while at != 1 { at = parent[Int(at)]; path.append(at) }
            return path.reversed()
        }
        func ancestor(_ a: Int64, _ b: Int64) -> Int64 {
            zip(path(a), path(b)).prefix { $0 == $1 }.last!.0
        }
        /// One annotate_tree answer, as PROTOCOL.md §4.2 defines it (one root: no −1 here).
        func answer(depths: [UInt32], ids: [Int64]) -> Stol_V1_AnnotateTreeResponse {
            var children = [[Int]](repeating: [], count: depths.count), path: [Int] = []
            for index in depths.indices {
                while let top = path.last, depths[top] >= depths[index] { path.removeLast() }
                if let top = path.last { children[top].append(index) }
                path.append(index)
            }
            var leaves = [Int64](repeating: 0, count: depths.count), taxa = leaves
            for index in depths.indices.reversed() {
                if children[index].isEmpty {
                    leaves[index] = ids[index]
                } else {
                    leaves[index] = children[index].map { leaves[$0] }.filter { $0 != 0 }.reduce(0) { $0 == 0 ? $1 : ancestor($0, $1) }
                }
                taxa[index] = ids[index] != 0 ? ids[index] : children[index].isEmpty ? 0 : leaves[index]
            }
            // An inner node's own taxon that is not above its leaves' common ancestor.
            let notAncestors = depths.indices.filter { index in
                !children[index].isEmpty && ids[index] > 0 && leaves[index] > 0 && ancestor(ids[index], leaves[index]) != ids[index]
            }
            return .with {
                $0.taxonIds = taxa
                $0.leavesAncestor = leaves.first ?? 0
                $0.notAncestors = notAncestors.map(UInt32.init)
            }
        }
    }

    /// Also the labels that cannot name their clade (`not_ancestors`), mapped back from each part.
    func testATreeInParts_answersAsTheTreeWhole_atEveryBudget() throws {
        var random = SplitMix64(for: self)
        var taxonomy = Taxonomy()
        for taxon in 2...400 { taxonomy.parent.append(Int64.random(in: 1..<Int64(taxon), using: &random)) }
        var flagged = 0
        for round in 0..<200 {
            // A random tree in preorder: each node at most one level below the one before it.
            let count = Int.random(in: 1...300, using: &random)
            var depths = [0]
            for _ in 1..<count { depths.append(Int.random(in: 1...(depths.last! + 1), using: &random)) }
            let own = depths.map { _ in Bool.random(using: &random) ? Int64.random(in: 1...400, using: &random) : 0 }
            var requests = 0
            let whole = try AnnotateTreeParts.annotate(depths: depths, own: own, budget: 1 << 20) { (depths, ids) throws(ClientError) in
                requests += 1
                return taxonomy.answer(depths: depths, ids: ids)
            }
            XCTAssertEqual(requests, 1, "a tree that fits is one request")
            flagged += whole.notAncestors.count
            for (budget, nodes) in [(24, 65_536), (1 << 20, 4), (40, 7)] {
                var sent = 0
                let parts = try AnnotateTreeParts.annotate(depths: depths, own: own, budget: budget,
                                                           maximumNodes: nodes) { (depths, ids) throws(ClientError) in
                    sent += 1
                    return taxonomy.answer(depths: depths, ids: ids)
                }
                XCTAssertEqual(parts, whole, "round \(round), budget \(budget) bytes, \(nodes) nodes")
                if count > 64 { XCTAssertGreaterThan(sent, 1, "round \(round): \(count) nodes do not fit \(budget) bytes, \(nodes) nodes") }
            }
        }
        XCTAssertGreaterThan(flagged, 100, "random labels on inner nodes are often no ancestor of their leaves")
    }

    func testAnAnswerOfTheWrongLength_isRefused() {
        XCTAssertThrowsError(try AnnotateTreeParts.annotate(depths: [0, 1], own: [0, 9606], budget: 100) { (_, _) throws(ClientError) in
            .with { $0.taxonIds = [9606] }
        })
    }
}
