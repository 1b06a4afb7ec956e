import Foundation
import STOLModel
import STOLPipeline
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// One definition of a comparison: on a random NCBI-like tree of every kind of
/// rank (strains under subspecies, clades, species groups, nodes of no rank above
/// the domains), `compare` in both views, `compare_batch` in both views and the
/// plain `lca_batch` in both views give the same common ancestor and the same
/// `distance_main` and `distance_all` as a plain computation over the answers of
/// `lineage_batch`: `distance_all` from the lineages on the whole tree
/// (`RANK_VIEW_ALL`), `distance_main` and the common ancestor on the main ranks from
/// the main lineages (protocol/PROTOCOL.md, `compare`). Random ranks make rank
/// inversions (a genus under a genus), where the view skips an ancestor.
final class CompareAgreementTests: XCTestCase {
    /// NCBI's spellings, main ranks and not; a node's rank is drawn from these.
    private static let ranks = ["no rank", "clade", "superkingdom", "domain", "acellular root", "kingdom", "phylum",
                                "subphylum", "class", "order", "suborder", "family", "subfamily", "tribe", "genus",
                                "subgenus", "species group", "species", "species", "subspecies", "strain", "serotype",
                                "isolate", "varietas"]

    /// A random taxdump: root 1, "cellular organisms" under it, then each node under a
    /// random earlier one, ids ascending with gaps. Returns the ids in order.
    private func writeRandomTaxdump(to directory: String, nodes: Int, random: inout SplitMix64) throws -> [Int64] {
        var ids: [Int64] = [1, 131567]
        var rows = [dumpRow("1", "1", "no rank", "", "8", "0", "1", "0", "0", "0", "0", "0", ""),
                    dumpRow("131567", "1", "no rank", "", "8", "1", "1", "1", "0", "1", "1", "0", "")]
        var next: Int64 = 200_000
        for index in 0..<nodes {
            next += Int64.random(in: 1...7, using: &random)
            // The first few hang under the top so that several domains meet above every main rank:
            // the first two under "cellular organisms" always (some seeds hung all four under the
            // root, and no pair met at 131567), the next two under either.
            let parent = index < 2 ? ids[1]
                : index < 4 ? ids[Int.random(in: 0...1, using: &random)] : ids[Int.random(in: 1..<ids.count, using: &random)]
            let rank = Self.ranks.randomElement(using: &random)!
            rows.append(dumpRow(String(next), String(parent), rank, "", "0", "1", "1", "1", "0", "1", "1", "0", ""))
            ids.append(next)
        }
        try writeTSV(directory, "nodes.dmp", rows)
        try writeTSV(directory, "names.dmp", ids.map { dumpRow(String($0), "Taxon \($0)", "", "scientific name") })
        try writeTSV(directory, "merged.dmp", [])
        try writeTSV(directory, "delnodes.dmp", [])
        return ids
    }

    /// A node's two lineages as `lineage_batch` answers them: on the whole tree (ids
    /// and NCBI's ranks, root first, the node last) and its main lineage (the view's
    /// ancestors, and the node itself when it is of a main rank).
    private struct Lineages {
        var all: [Int64]
        var main: [Int64]
        var mainAncestors: [Int64]
    }

    /// What a pair's answers must be, from the two nodes' lineages alone.
    private struct Expected: Equatable, CustomStringConvertible {
        var lca: Int64
        var mainLCA: Int64
        var distanceAll: Int
        var distanceMain: Int
        var pathA: [Int64]  // main view, the taxon up to the shown ancestor
        var pathB: [Int64]
        var description: String { "lca \(lca) main \(mainLCA) all \(distanceAll) main \(distanceMain) \(pathA) \(pathB)" }
    }

    private static func shared(_ a: [Int64], _ b: [Int64]) -> Int {
        var count = 0
        while count < min(a.count, b.count) && a[count] == b[count] { count += 1 }
        return count
    }

    private func expected(_ a: Lineages, _ b: Lineages) -> Expected {
        let sharedAll = Self.shared(a.all, b.all), sharedMain = Self.shared(a.main, b.main)
        let lca = a.all[sharedAll - 1]
        let mainLCA = sharedMain > 0 ? a.main[sharedMain - 1] : lca
        func mainPath(_ lineages: Lineages) -> [Int64] {
            // The taxon, then its main-rank ancestors up to the shown ancestor (reached from the top when on none).
            var path = [lineages.all.last!]
            for id in lineages.mainAncestors.reversed() where path.last != mainLCA { path.append(id) }
            if path.last != mainLCA { path.append(mainLCA) }
            return path
        }
        return Expected(lca: lca, mainLCA: mainLCA, distanceAll: a.all.count + b.all.count - 2 * sharedAll,
                        distanceMain: a.main.count + b.main.count - 2 * sharedMain, pathA: mainPath(a), pathB: mainPath(b))
    }

    func testCompareBatchAndLca_agreeWithLineagesOnNCBIsTree_forRandomPairsOfEveryRank() async throws {
        var random = SplitMix64(for: self)
        let source = try makeTemporaryDirectory(self)
        let ids = try writeRandomTaxdump(to: source, nodes: 4000, random: &random)
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        let harness = try ServiceHarness(self, bundledSource: source, options: options)
        await harness.waitForTreeLoaded()

        // Every node's lineages, from lineage_batch in both views.
        var lineage: [Int64: Lineages] = [:]
        for chunk in stride(from: 0, to: ids.count, by: 1000) {
            let queries = ids[chunk..<min(chunk + 1000, ids.count)].map(String.init)
            let all = await harness.send(.lineageBatch(.with { $0.queries = queries; $0.ranks = .all; $0.form = .compact }))
            let main = await harness.send(.lineageBatch(.with { $0.queries = queries; $0.ranks = .main; $0.form = .ids }))
            guard case .lineageBatch(let whole)? = all.result, case .lineageBatch(let view)? = main.result else {
                return XCTFail("\(all) \(main)")
            }
            for (result, viewResult) in zip(whole.results, view.results) {
                XCTAssertFalse(result.hasError || viewResult.hasError, "\(result) \(viewResult)")
                XCTAssertEqual(result.taxon.id, viewResult.taxon.id)
                let isMain = viewResult.taxon.rank != .unspecified
                XCTAssertEqual(isMain, TaxonRank(sourceRank: result.taxon.sourceRank) != nil, "\(viewResult.taxon)")
                lineage[result.taxon.id] = Lineages(all: result.lineageIds + [result.taxon.id],
                                                    main: viewResult.lineageIds + (isMain ? [viewResult.taxon.id] : []),
                                                    mainAncestors: viewResult.lineageIds)
            }
        }
        XCTAssertEqual(lineage.count, ids.count)

        // Pairs: random nodes, siblings and cousins, a node and its ancestor, a node and itself.
        var pairs: [(Int64, Int64)] = []
        for round in 0..<2000 {
            let a = ids.randomElement(using: &random)!
            let path = lineage[a]!.all
            switch round % 4 {
            case 0: pairs.append((a, ids.randomElement(using: &random)!))
            case 1: pairs.append((a, path[Int.random(in: 0..<path.count, using: &random)]))
            case 2:
                let up = path[max(0, path.count - Int.random(in: 2...4, using: &random))]
                let below = ids.filter { id in lineage[id]!.all.contains(up) }
                pairs.append((a, below.randomElement(using: &random)!))
            default: pairs.append(round % 40 == 3 ? (a, a) : (ids.randomElement(using: &random)!, a))
            }
        }
        let expected = pairs.map { self.expected(lineage[$0.0]!, lineage[$0.1]!) }
        XCTAssertGreaterThan(Set(expected.map(\.mainLCA)).count, 100, "the pairs meet at many ancestors")
        XCTAssertTrue(expected.contains { $0.mainLCA == 131567 }, "some pairs meet above every domain")
        XCTAssertTrue(expected.contains { $0.lca != $0.mainLCA }, "some pairs meet outside the main ranks")
        XCTAssertTrue(expected.contains { lineage[$0.mainLCA]!.all.count + 1 < lineage[$0.lca]!.all.count },
                      "some pairs meet on the main ranks above a main-rank node over their common ancestor (rank inversions)")
        XCTAssertTrue(expected.contains { $0.distanceMain == 0 && $0.distanceAll > 0 }, "some pairs differ only outside the main ranks")

        for view in [Stol_V1_RankView.main, .all] {
            // compare, one pair at a time.
            for ((a, b), want) in zip(pairs, expected) {
                let response = await harness.send(.compare(.with { $0.taxonA = a; $0.taxonB = b; $0.ranks = view }))
                guard case .compare(let got)? = response.result else { return XCTFail("\(a) \(b): \(response)") }
                let context = "compare \(a) \(b) \(view): \(want)"
                XCTAssertEqual(got.lca.id, view == .main ? want.mainLCA : want.lca, context)
                XCTAssertEqual(got.distanceMain, UInt32(want.distanceMain), context)
                XCTAssertEqual(got.distanceAll, UInt32(want.distanceAll), context)
                XCTAssertEqual(got.distance, UInt32(view == .main ? want.distanceMain : want.distanceAll), context)
                if view == .main {
                    XCTAssertEqual(got.pathA.map(\.id), want.pathA, context)
                    XCTAssertEqual(got.pathB.map(\.id), want.pathB, context)
                } else {
                    XCTAssertEqual(got.pathA.map(\.id), lineage[a]!.all.drop { $0 != want.lca }.reversed(), context)
                    XCTAssertEqual(got.pathB.map(\.id), lineage[b]!.all.drop { $0 != want.lca }.reversed(), context)
                }
                let relation: Stol_V1_Relation = a == b ? .same : (want.lca == a ? .aAncestorOfB : (want.lca == b ? .bAncestorOfA : .related))
                XCTAssertEqual(got.relation, relation, context)
            }
            // compare_batch and the plain lca_batch, a thousand at a time.
            for chunk in stride(from: 0, to: pairs.count, by: 1000) {
                let part = Array(pairs[chunk..<min(chunk + 1000, pairs.count)])
                let batch = await harness.send(.compareBatch(.with {
                    $0.ranks = view
                    $0.pairs = part.map { pair in .with { $0.a = String(pair.0); $0.b = String(pair.1) } }
                }))
                guard case .compareBatch(let compared)? = batch.result else { return XCTFail("\(batch)") }
                let sets = await harness.send(.lcaBatch(.with {
                    $0.ranks = view
                    $0.sets = part.enumerated().map { index, pair in .with { $0.key = String(index); $0.members = [String(pair.0), String(pair.1)] } }
                }))
                guard case .lcaBatch(let lcas)? = sets.result else { return XCTFail("\(sets)") }
                for (offset, (result, lca)) in zip(compared.results, lcas.results).enumerated() {
                    let want = expected[chunk + offset], pair = part[offset]
                    let context = "batch \(pair.0) \(pair.1) \(view): \(want)"
                    XCTAssertEqual(result.lcaID, view == .main ? want.mainLCA : want.lca, context)
                    XCTAssertEqual(result.distanceMain, UInt32(want.distanceMain), context)
                    XCTAssertEqual(result.distanceAll, UInt32(want.distanceAll), context)
                    XCTAssertEqual(lca.taxonID, result.lcaID, "lca \(context)")
                    XCTAssertEqual(lca.rank, result.lcaRank, "lca \(context)")
                }
            }
        }
    }
}
