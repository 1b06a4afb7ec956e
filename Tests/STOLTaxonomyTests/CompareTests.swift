import Foundation
import GRDB
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

final class CompareTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
    }

    private func comparison(_ a: Int64, _ b: Int64, file: StaticString = #filePath, line: UInt = #line) async throws -> Stol_V1_CompareResponse {
        let response = await harness.compare(a, b)
        guard case .compare(let result)? = response.result else {
            XCTFail("expected a comparison, got \(String(describing: response.result))", file: file, line: line)
            throw POSIXError(.EINVAL)
        }
        return result
    }

    func testCompare_lionAndTiger_shareGenusPantheraAtDistanceTwo() async throws {
        let result = try await comparison(9689, 9694)
        XCTAssertEqual(result.lca.id, 9688)
        XCTAssertEqual(result.lca.scientificName, "Panthera")
        XCTAssertEqual(result.distance, 2)
        XCTAssertEqual(result.relation, .related)
        XCTAssertEqual(result.pathA.map(\.id), [9689, 9688], "A → LCA, both included")
        XCTAssertEqual(result.pathB.map(\.id), [9694, 9688])
        XCTAssertEqual(result.sharedClade, "Both are in genus Panthera")
        XCTAssertEqual(result.lcaDepth, 6, "Eukaryota › Metazoa › Chordata › Mammalia › Carnivora › Felidae › Panthera")
    }

    func testCompare_lionAndDog_shareOrderCarnivora() async throws {
        let result = try await comparison(9689, 9612)
        XCTAssertEqual(result.lca.id, 33554)
        XCTAssertEqual(result.sharedClade, "Both are in order Carnivora")
        XCTAssertEqual(result.distance, 6)
        XCTAssertEqual(result.pathA.map(\.scientificName), ["Panthera leo", "Panthera", "Felidae", "Carnivora"])
    }

    func testCompare_whenOneIsAncestorOfOther_returnsTheAncestorAsLCA() async throws {
        let down = try await comparison(9681, 9689)
        XCTAssertEqual(down.lca.id, 9681)
        XCTAssertEqual(down.relation, .aAncestorOfB)
        XCTAssertEqual(down.distance, 2)
        XCTAssertEqual(down.pathA.map(\.id), [9681])
        XCTAssertEqual(down.pathB.map(\.id), [9689, 9688, 9681])
        let up = try await comparison(9689, 9688)
        XCTAssertEqual(up.relation, .bAncestorOfA)
        XCTAssertEqual(up.lca.id, 9688)
        XCTAssertEqual(up.distance, 1)
    }

    func testCompare_identicalTaxa_areTheirOwnLCAAtDistanceZero() async throws {
        let result = try await comparison(9689, 9689)
        XCTAssertEqual(result.relation, .same)
        XCTAssertEqual(result.lca.id, 9689)
        XCTAssertEqual(result.distance, 0)
        XCTAssertEqual(result.pathA.map(\.id), [9689])
        XCTAssertEqual(result.traitSimilarity, 1, "a taxon's traits are identical to its own")
    }

    func testCompare_differentRoots_areUnrelatedWithoutLCAOrDistance() async throws {
        let result = try await comparison(9689, 562)
        XCTAssertEqual(result.relation, .unrelated)
        XCTAssertFalse(result.hasLca)
        XCTAssertFalse(result.hasDistance)
        XCTAssertTrue(result.sharedClade.contains("Eukaryota") && result.sharedClade.contains("Bacteria"), result.sharedClade)
    }

    func testCompare_unknownID_answersNotFoundNamingTheID() async {
        let response = await harness.compare(9689, 424_242)
        guard case .error(let error)? = response.result else { return XCTFail("expected an error") }
        XCTAssertEqual(error.code, .notFound)
        XCTAssertEqual(error.details["taxon_id"], "424242")
        let compare1 = await harness.compare(424_243, 9689)
        XCTAssertEqual(errorCode(compare1), .notFound)
        let compare2 = await harness.compare(0, 9689)
        XCTAssertEqual(errorCode(compare2), .invalidRequest)
    }

    func testCompare_traitSimilarity_isTheJaccardIndexOfKeyValuePairs() async throws {
        let harness = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        let traits = try DatabaseQueue(path: harness.bundledPath).read { db in
            try Row.fetchAll(db, sql: "SELECT taxon_id, trait_key, trait_value FROM traits")
        }
        var sets: [Int64: Set<String>] = [:]
        for row in traits { sets[row["taxon_id"], default: []].insert("\(row["trait_key"] as String)=\(row["trait_value"] as String)") }
        let withTraits = Array(sets.keys.sorted().prefix(25))
        XCTAssertGreaterThanOrEqual(withTraits.count, 2, "the fixture has traits for several taxa")
        for a in withTraits {
            for b in withTraits {
                let expected = Double(sets[a]!.intersection(sets[b]!).count) / Double(sets[a]!.union(sets[b]!).count)
                guard case .compare(let result)? = await harness.compare(a, b).result else { return XCTFail("\(a) vs \(b)") }
                XCTAssertEqual(result.traitSimilarity, expected, accuracy: 1e-12, "\(a) vs \(b)")
            }
        }
        let without = try await DatabaseQueue(path: harness.bundledPath).read { db in
            try Int64.fetchOne(db, sql: "SELECT id FROM taxa WHERE id NOT IN (SELECT taxon_id FROM traits) LIMIT 1")
        }!
        guard case .compare(let result)? = await harness.compare(withTraits[0], without).result else { return XCTFail("no answer") }
        XCTAssertFalse(result.hasTraitSimilarity, "no similarity without traits on both")
    }

    /// The server's LCA and distance agree with a parent-pointer walk written here,
    /// independently of the server's code, for random pairs of the curated tree: every
    /// node, those outside the eight ranks on their main-rank lineage (`main_parent_id`),
    /// where the common ancestor is of a main rank and the distance counts the taxa of a
    /// main rank below it. (Seed 1495982123 drew a subspecies twice.)
    func testCompare_randomPairs_agreeWithAnIndependentParentPointerWalk() async throws {
        let curated = try ServiceHarness(self, bundledSource: curatedSourceDirectory)
        let rows = try await DatabaseQueue(path: curated.bundledPath).read { db in
            try Row.fetchAll(db, sql: "SELECT id, main_parent_id AS parent_id, main_rank IS NOT NULL AS is_main FROM taxa").map {
                ($0["id"] as Int64, $0["parent_id"] as Int64?, $0["is_main"] as Bool)
            }
        }
        let parents = Dictionary(uniqueKeysWithValues: rows.map { ($0.0, $0.1) })
        let isMain = Dictionary(uniqueKeysWithValues: rows.map { ($0.0, $0.2) })
        XCTAssertTrue(isMain.values.contains(false), "the curated tree has nodes outside the eight ranks")
        func pathToRoot(_ id: Int64) -> [Int64] {
            var path = [id]
            while let parent = parents[path.last!] ?? nil { path.append(parent) }
            return path
        }
        let ids = parents.keys.sorted()
        var generator = SplitMix64(for: self)
        for _ in 0..<400 {
            let a = ids[Int.random(in: 0..<ids.count, using: &generator)]
            let b = ids[Int.random(in: 0..<ids.count, using: &generator)]
            let pathA = pathToRoot(a), pathB = Set(pathToRoot(b))
            // On the main ranks the common ancestor is the deepest shared taxon of a main
            // rank (a subspecies compared with itself or its own strain shows its species),
            // or the shared node above every main rank when there is none.
            let shared = pathA.filter { pathB.contains($0) }
            let lca = shared.first { isMain[$0]! } ?? shared.first
            guard case .compare(let result)? = await curated.compare(a, b).result else { return XCTFail("no answer for \(a), \(b)") }
            if let lca {
                XCTAssertEqual(result.lca.id, lca, "\(a) vs \(b)")
                let below = { (id: Int64) in pathToRoot(id).prefix { $0 != lca }.filter { isMain[$0]! }.count }
                XCTAssertEqual(Int(result.distance), below(a) + below(b), "\(a) vs \(b)")
                XCTAssertEqual(result.distanceMain, result.distance, "\(a) vs \(b)")
            } else {
                XCTAssertEqual(result.relation, .unrelated, "\(a) vs \(b)")
            }
        }
    }
}

