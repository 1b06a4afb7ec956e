import Foundation
import STOLTestFixtures
import XCTest

/// `stol-client lca` (issue 24) through the real client and `stol-taxonomyd` on the
/// curated database: sets per line and grouped rows, the plain common ancestor and
/// the majority vote, members that name nothing listed while the rest is answered,
/// comments kept in place, one answer per set.
final class LcaIntegrationTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.start(.taxonomy)
    }

    override func tearDown() {
        stack = nil
    }

    private func lca(_ arguments: [String], input: String) throws -> StackHarness.Result {
        try stack.client(["lca", "--no-header"] + arguments, input: input)
    }

    private func rows(_ result: StackHarness.Result) -> [[String]] {
        result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    func testEachLine_isOneSet_answeredWithItsCommonAncestor_commentsKeptInPlace() throws {
        // Lion and tiger: Panthera; lion and human: Mammalia ... up to their class on the main ranks.
        let result = try lca([], input: "9689\t9694\n# a comment\n9689,9606\nPanthera leo\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = rows(result)
        XCTAssertEqual(lines.count, 4, result.stdout)
        XCTAssertEqual(Array(lines[0].prefix(4)), ["1", "9688", "genus", "Panthera"])
        XCTAssertEqual(lines[1], ["# a comment"])
        XCTAssertEqual(lines[2][0], "3", "keys are input line numbers")
        XCTAssertEqual(lines[2][2], "class", result.stdout)
        XCTAssertEqual(Array(lines[3].prefix(4)), ["4", "9689", "species", "Panthera leo"], "a name with a space is one member")
        XCTAssertEqual(lines[0][4...6], ["1.0000", "1.0000", "2"])
    }

    func testAMemberThatNamesNothing_isListed_andTheSetIsAnsweredFromTheOthers() throws {
        let result = try lca([], input: "9689\t424242424\t9694\tNo such name\n")
        XCTAssertEqual(result.status, 3, "a member not found is exit 3: \(result.stderr)")
        let line = try XCTUnwrap(rows(result).first)
        XCTAssertEqual(line[1], "9688", result.stdout)
        XCTAssertEqual(line[6], "2")
        XCTAssertEqual(line[7], "424242424,No such name")
        let nothing = try lca([], input: "424242424\n")
        XCTAssertEqual(rows(nothing).first?[1], "INVALID_REQUEST", nothing.stdout)
    }

    func testKrakensZeroAndNegativeIds_areListedMembers_neverAFailedRequest() throws {
        // A read's hits with Kraken's 0 (unclassified) among them, and a negative id.
        let result = try lca([], input: "9689\t0\t9694\n-5\t9606\n9606\t9598\n")
        XCTAssertEqual(result.status, 3, "members not found are exit 3: \(result.stderr)")
        let lines = rows(result)
        XCTAssertEqual(lines.count, 3, "every set answered: \(result.stdout) \(result.stderr)")
        XCTAssertEqual(lines[0][1], "9688")
        XCTAssertEqual(lines[0][7], "0")
        XCTAssertEqual(lines[1][1], "9606", "the set is answered from its one good member")
        XCTAssertEqual(lines[1][7], "-5")
        XCTAssertEqual(lines[2][7], "")
    }

    func testMajority_isTheDeepestTaxonHoldingMoreThanTheShare_weightsCount() throws {
        let input = "9689,9689,9694\n9689:1,9694:3\n"
        let half = try lca(["--majority", "0.5", "--weighted"], input: input.replacingOccurrences(of: "9689,9689,9694", with: "9689:1,9689:1,9694:1"))
        XCTAssertEqual(half.status, 0, half.stderr)
        let lines = rows(half)
        XCTAssertEqual(lines[0][1], "9689", "two lions of three: the lion")
        XCTAssertEqual(lines[0][4], "0.6667")
        XCTAssertEqual(lines[1][1], "9694", "the tiger weighs 3 of 4")
        let most = try lca(["--majority", "0.7"], input: "9689,9689,9694\n")
        XCTAssertEqual(rows(most).first?[1], "9688", "more than 0.7 asked: only Panthera holds all three")
        XCTAssertEqual(try lca(["--majority", "1"], input: "9689\n").status, 64, "a share of 1 is no majority")
    }

    func testGroupedRows_formOneSetPerRunOfAKey_withWeightsFromAColumn() throws {
        let table = "read1\t9689\t5\nread1\t9694\t1\nread2\t9606\t1\nread2\t9606\t1\nread3\t9694\t2\n"
        let result = try lca(["--majority", "0.5", "--group", "1", "--column", "2", "--weight-column", "3", "--jsonl"], input: table)
        XCTAssertEqual(result.status, 0, result.stderr)
        let objects = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        XCTAssertEqual(objects.map { $0["key"] as? String }, ["read1", "read2", "read3"])
        XCTAssertEqual(objects.map { ($0["taxon_id"] as? NSNumber)?.int64Value }, [9689, 9606, 9694])
        XCTAssertEqual((objects[0]["support"] as? NSNumber)?.doubleValue ?? 0, 5.0 / 6, accuracy: 1e-9)
    }

    func testEveryPair_getsTheCommonAncestorCompareGives_onBothTrees() throws {
        let pairs = [("9689", "9606"), ("9689", "9694"), ("38942", "9606"), ("9606", "9606")]
        let input = pairs.map { "\($0.0)\t\($0.1)\n" }.joined()
        for view in ["main", "all"] {
            let sets = try lca(["--ranks", view], input: input)
            let compared = try stack.client(["compare", "--batch", "--no-header", "--ranks", view], input: input)
            XCTAssertEqual(sets.status, 0, sets.stderr)
            XCTAssertEqual(rows(sets).map { $0[1] }, rows(compared).map { $0[2] }, "--ranks \(view)")
        }
    }

    func testSetsThatTogetherPassTheRequestFrame_areSentInSeveralRequests_andAllAnswered() throws {
        // 700 sets of 20 members: about 84 KB of members, more than one 64 KiB request holds.
        let line = Array(repeating: "9689", count: 19).joined(separator: "\t") + "\t9694\n"
        let result = try lca(["--majority", "0.5"], input: String(repeating: line, count: 700))
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = rows(result)
        XCTAssertEqual(lines.count, 700)
        XCTAssertEqual(Set(lines.map { $0[1] }), ["9689"])
        XCTAssertEqual(lines.last?[0], "700")
    }
}
