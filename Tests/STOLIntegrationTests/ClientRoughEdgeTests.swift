import Foundation
import STOLModel
import STOLTestFixtures
import XCTest

/// The rough edges a new user hit (issue 23), each through the real client against the
/// real `stol-taxonomyd`: what used to happen is in each assertion's message.
final class ClientRoughEdgeTests: XCTestCase {
    private var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.start(.taxonomy)
    }

    override func tearDown() {
        stack = nil
    }

    func testVersion_isPrinted() throws {
        let result = try stack.client(["--version"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "stol-client \(STOLVersion.current)\n", "there was no --version (exit 64)")
    }

    func testStatus_takesOneValue_soTheSearchWordsAreKept() throws {
        let one = try stack.client(["search", "--status", "VU", "lion", "--json"])
        XCTAssertEqual(one.status, 0, "a variadic --status swallowed 'lion': \(one.stderr)")
        XCTAssertTrue(one.stdout.contains("Panthera leo"), one.stdout)
        let other = try stack.client(["search", "--status", "EN", "lion", "--json"])
        XCTAssertEqual(other.status, 0, other.stderr)
        XCTAssertFalse(other.stdout.contains("Panthera leo"), "the lion is VU, not EN: \(other.stdout)")
        let listed = try stack.client(["search", "--status", "en,vu", "lion", "--json"])
        XCTAssertTrue(listed.stdout.contains("Panthera leo"), "comma-separated categories: \(listed.stdout)")
    }

    /// Issue 34: a mistyped command or option is named with what was meant; usage errors honour --json.
    func testAMistypedCommand_isAnsweredWithTheCommandMeant() throws {
        let top = try stack.client(["lineagee"])
        XCTAssertEqual(top.status, 64, top.stderr)
        XCTAssertTrue(top.stderr.contains("did you mean 'lineage'?"), "no 'did you mean': \(top.stderr)")
        let nested = try stack.client(["fav", "lsit"])
        XCTAssertEqual(nested.status, 64, nested.stderr)
        XCTAssertTrue(nested.stderr.contains("not a command of stol-client fav; did you mean 'list'?"), nested.stderr)
        let far = try stack.client(["frobnicate"])
        XCTAssertEqual(far.status, 64)
        XCTAssertFalse(far.stderr.contains("did you mean"), "nothing is close: \(far.stderr)")
        // Arguments that happen to look like commands are left alone: a search word, a name after an option.
        let search = try stack.client(["search", "lineagee"])
        XCTAssertNotEqual(search.status, 64, search.stderr)
    }

    func testAMistypedOption_isNamed_beforeTheArgumentsItLeftBehind() throws {
        let result = try stack.client(["taxon", "--lnag", "es", "9689"])
        XCTAssertEqual(result.status, 64, result.stderr)
        XCTAssertTrue(result.stderr.contains("--lnag") && result.stderr.contains("--lang"),
                      "it said \"'es' is not a taxon id\": \(result.stderr)")
        let negative = try stack.client(["taxon", "-5"])
        XCTAssertEqual(negative.status, 64, negative.stderr)
        XCTAssertTrue(negative.stderr.contains("taxon ids are positive integers"), "it said the argument was missing: \(negative.stderr)")
        // A real mistake in the argument itself is still named as such.
        let name = try stack.client(["taxon", "lion"])
        XCTAssertTrue(name.stderr.contains("'lion' is not a taxon id"), name.stderr)
    }

    func testUsageErrors_withJSON_areAJSONErrorOnStandardError() throws {
        for arguments in [["search", "lion", "--limit", "0", "--json"], ["lineagee", "--json"], ["taxon", "--json"]] {
            let result = try stack.client(arguments)
            XCTAssertEqual(result.status, 64, "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
            let object = try JSONSerialization.jsonObject(with: Data(result.stderr.utf8)) as? [String: Any]
            let message = (object?["error"] as? [String: Any])?["message"] as? String
            XCTAssertFalse(message?.isEmpty ?? true, "\(arguments): not a JSON error: \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("USAGE:"), "\(arguments): the usage text is not JSON")
        }
    }

    func testLimitZero_isAUsageError_notTheDefault() throws {
        let result = try stack.client(["search", "lion", "--limit", "0"])
        XCTAssertEqual(result.status, 64, "--limit 0 silently gave 20 results: \(result.stdout)")
        XCTAssertTrue(result.stderr.contains("--limit must be 1…200"), result.stderr)
    }

    func testANameWhereAnIDIsExpected_pointsToSearch() throws {
        for command in ["detail", "taxon"] {
            let result = try stack.client([command, "lion"])
            XCTAssertEqual(result.status, 64, command)
            XCTAssertTrue(result.stderr.contains("stol-client search lion"), "\(command): no hint to use search: \(result.stderr)")
        }
    }

    func testRelativesOutOfRange_isTheServersInvalidRequest_exit6AsDocumented() throws {
        let result = try stack.client(["relatives", "9689", "-n", "101"])
        XCTAssertEqual(result.status, 6, "it exited 64 where the README says 6: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("INVALID_REQUEST"), result.stderr)
    }

    func testMaxCandidates_showsOneDefault() throws {
        let help = try stack.client(["relatives", "--help"])
        XCTAssertEqual(help.status, 0)
        let text = help.stdout.replacingOccurrences(of: "\n", with: " ")
        let start = try XCTUnwrap(text.range(of: "--max-candidates <max-candidates>", options: .backwards))  // the entry, not the usage line
        let rest = text[start.lowerBound...]
        let entry = rest[..<(rest.range(of: "--help")?.lowerBound ?? rest.endIndex)]
        XCTAssertEqual(entry.components(separatedBy: "default").count - 1, 1, "two defaults were shown: \(entry)")
    }

    func testAnUnknownLanguage_isRefusedWithTheReleasesLanguages_notSilentlyWithoutCommonNames() throws {
        for arguments in [["taxon", "9689"], ["search", "lion"], ["ancestors", "9689"], ["children", "9688"]] {
            let result = try stack.client(arguments + ["--lang", "xx"])
            XCTAssertEqual(result.status, 6, "\(arguments): an unknown --lang answered without common names: \(result.stdout)")
            XCTAssertTrue(result.stderr.contains("no names in language 'xx'"), result.stderr)
            XCTAssertTrue(result.stderr.contains("es"), "the languages the release has are listed: \(result.stderr)")
        }
        let typo = try stack.client(["taxon", "9689", "--lang", "ES"])
        XCTAssertTrue(typo.stderr.contains("did you mean es?"), typo.stderr)
        let spanish = try stack.client(["taxon", "9689", "--lang", "es", "--json"])
        XCTAssertEqual(spanish.status, 0, spanish.stderr)
        XCTAssertTrue(spanish.stdout.contains("le\u{f3}n") || spanish.stdout.contains("león"), "a known language still answers: \(spanish.stdout)")
        XCTAssertEqual(try stack.client(["taxon", "9689", "--lang", "en"]).status, 0, "the default language is always accepted")
    }
}
