import Foundation
import STOLTestFixtures
import XCTest

/// `stol-client search --within TAXON` (issue 24) through the real client and
/// `stol-taxonomyd`: only taxa under the given one answer, found by their own words
/// even where the words' other matches are many; a `within` that names nothing is
/// NOT_FOUND, never a silent search of everything.
final class SearchWithinIntegrationTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.start(.taxonomy)
    }

    override func tearDown() {
        stack = nil
    }

    private func hits(_ arguments: [String]) throws -> [(id: Int64, name: String)] {
        let result = try stack.client(["search", "--json"] + arguments)
        XCTAssertEqual(result.status, 0, result.stderr)
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return (object?["hits"] as? [[String: Any]] ?? []).compactMap { hit in
            guard let taxon = hit["taxon"] as? [String: Any], let id = (taxon["id"] as? NSNumber)?.int64Value else { return nil }
            return (id, taxon["scientific_name"] as? String ?? "")
        }
    }

    private func lineageIDs(_ id: Int64) throws -> [Int64] {
        let result = try stack.client(["lineage", "--ranks", "all", "--ids", "--no-header"], input: "\(id)\n")
        let last = result.stdout.trimmingCharacters(in: .newlines).split(separator: "\t", omittingEmptySubsequences: false).last ?? ""
        return last.split(separator: ";").compactMap { Int64($0) }
    }

    func testWithin_keepsOnlyTaxaUnderIt_forEveryHit() throws {
        for (words, within) in [(["lion"], "Felidae"), (["lion"], "Pterois"), (["Danaus"], "13036"), (["Mus"], "862507"),
                                (["a"], "9681")] {
            let arguments = words + ["--within", within, "--limit", "50"]
            let found = try hits(arguments + (words == ["a"] ? ["--prefix"] : []))
            XCTAssertFalse(found.isEmpty, "\(arguments)")
            let named = try hits([within, "--limit", "1"]).first?.id
            let top = try XCTUnwrap(Int64(within) ?? named)
            for hit in found {
                XCTAssertTrue(try lineageIDs(hit.id).contains(top), "\(hit) is not under \(within)")
            }
        }
    }

    func testWithin_findsWhatAnUnlimitedSearchRanksBelowOthers() throws {
        let everywhere = try hits(["lion", "--limit", "1"])
        XCTAssertEqual(everywhere.first?.id, 9689, "the lion first without a limit to a clade")
        let fish = try hits(["lion", "--within", "Pterois", "--limit", "1"])
        XCTAssertEqual(fish.first?.id, 185886, "the red lionfish, by its common name, under its genus")
        let subgenus = try hits(["Mus", "--within", "862507", "--rank", "species"])
        XCTAssertFalse(subgenus.isEmpty)
        XCTAssertFalse(subgenus.contains { $0.id == 10088 }, "the genus Mus is above the subgenus Mus")
    }

    func testWithin_thatNamesNothing_isNotFound() throws {
        let result = try stack.client(["search", "lion", "--within", "no such taxon"])
        XCTAssertEqual(result.status, 3, result.stderr)
        XCTAssertTrue(result.stderr.contains("within"), result.stderr)
        XCTAssertEqual(result.stdout, "")
    }
}
