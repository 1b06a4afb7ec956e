import Foundation
import STOLTestFixtures
import XCTest

/// `stol-client tree --taxa` (issue 24) through the real client and `stol-taxonomyd`: the
/// smallest tree connecting the taxa of stdin, as Newick and JSON lines; what names
/// nothing is listed and the rest answered.
final class InducedTreeIntegrationTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.start(.taxonomy)
    }

    override func tearDown() {
        stack = nil
    }

    private func tree(_ arguments: [String], input: String) throws -> StackHarness.Result {
        try stack.client(["tree", "--taxa"] + arguments, input: input)
    }

    func testNewick_joinsTheTaxaAtTheirAncestors_andListsWhatNamesNothing() throws {
        let result = try tree(["--format", "newick"], input: "9689\n9694\n# a comment\n\n9606\n424242\nPanthera onca\n")
        XCTAssertEqual(result.status, 3, "a taxon not found is exit 3: \(result.stderr)")
        XCTAssertEqual(result.stdout, "('Homo sapiens',('Panthera leo','Panthera onca','Panthera tigris')Panthera)Mammalia;\n",
                       "Panthera joins the three cats, Mammalia the cats and humans; the chains between are left out")
        XCTAssertTrue(result.stderr.contains("not found (1): 424242"), result.stderr)
    }

    func testKeepSingleChildren_keepsTheNodesBetween() throws {
        let collapsed = try tree(["--format", "jsonl"], input: "9689\n9606\n")
        let kept = try tree(["--format", "jsonl", "--keep-single-children"], input: "9689\n9606\n")
        XCTAssertEqual(collapsed.status, 0, collapsed.stderr)
        func objects(_ result: StackHarness.Result) -> [[String: Any]] {
            result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        let few = objects(collapsed), many = objects(kept)
        XCTAssertEqual(few.count, 3, "Mammalia and its two species: \(collapsed.stdout)")
        XCTAssertGreaterThan(many.count, few.count, "the order, family and genus of the lion stay")
        XCTAssertEqual(few.filter { $0["requested"] as? Bool == true }.compactMap { ($0["id"] as? NSNumber)?.int64Value }.sorted(),
                       [9606, 9689])
        // Each node's parent is the last node before it one level up.
        for list in [few, many] {
            var path: [Int64] = []
            for object in list {
                let depth = (object["depth"] as? NSNumber)?.intValue ?? -1
                path.removeLast(max(0, path.count - depth))
                XCTAssertEqual((object["parent_id"] as? NSNumber)?.int64Value, path.last)
                path.append((object["id"] as? NSNumber)?.int64Value ?? 0)
            }
        }
    }

    func testIdLabels_onNCBIsOwnTree_carryEveryTaxonAskedFor() throws {
        let result = try tree(["--format", "newick", "--ranks", "all", "--label", "id"], input: "9689\n9694\n9606\n38942\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        let labels = Set(result.stdout.split(whereSeparator: { "(),;\n".contains($0) }).map(String.init))
        XCTAssertTrue(["9689", "9694", "9606", "38942"].allSatisfy(labels.contains), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix(";\n"))
    }
}
