import Foundation
import GRDB
import Glibc
import STOLProtocol
import STOLTransport
import XCTest

/// The whole system through its real parts: socket-activated daemons, the real
/// client, real SQLite files. What each test tries is in its name.
final class StackIntegrationTests: XCTestCase {
    var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
    }

    override func tearDown() {
        stack = nil
    }

    func testStack_answersTaxonomyQueriesThroughTheRealClient() throws {
        try stack.start(.taxonomy)
        let status = try stack.client(["status", "--json"])
        XCTAssertEqual(status.status, 0, status.stderr)
        let statusJSON = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        XCTAssertEqual((statusJSON?["active"] as? [String: Any])?["kind"] as? String, "DATABASE_KIND_BUNDLED")
        XCTAssertGreaterThan(statusJSON?["taxa_count"] as? Int ?? 0, 500)

        let lion = try stack.client(["search", "lion", "--json"])
        XCTAssertEqual(lion.status, 0, lion.stderr)
        XCTAssertTrue(lion.stdout.contains("\"id\":9689"), lion.stdout)
        XCTAssertTrue(lion.stdout.contains("\"matched_name\":\"lion\""), lion.stdout)

        let spanish = try stack.client(["search", "leon"])  // diacritics folded: león
        XCTAssertTrue(spanish.stdout.contains("Panthera leo"), spanish.stdout)

        let genus = try stack.client(["search", "--prefix", "pant", "--rank", "genus"])
        XCTAssertEqual(genus.stdout.split(separator: "\n").count, 1, genus.stdout)
        XCTAssertTrue(genus.stdout.contains("9688\tgenus\tPanthera"), genus.stdout)

        let lineage = try stack.client(["ancestors", "9689"])
        let lineageIDs = lineage.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces).split(separator: "\t")[0] }
        XCTAssertEqual(lineageIDs, ["2759", "33208", "7711", "40674", "33554", "9681", "9688"])

        let children = try stack.client(["children", "9688", "--limit", "2", "--offset", "1"])
        XCTAssertTrue(children.stdout.contains("(2–3 of 5)"), children.stdout)
    }

    func testClient_whenTaxonDoesNotExist_saysNotFoundWithExitCode3() throws {
        try stack.start(.taxonomy)
        let result = try stack.client(["taxon", "999999999"])
        XCTAssertEqual(result.status, 3)
        XCTAssertTrue(result.stderr.contains("NOT_FOUND"), result.stderr)
        let json = try stack.client(["taxon", "999999999", "--json"])
        XCTAssertTrue(json.stderr.contains("\"code\":\"NOT_FOUND\""), json.stderr)
        XCTAssertEqual(json.stdout, "", "a --json error goes to standard error, never among the answers")
    }

    func testClient_whenServiceIsNotRunning_explainsWithExitCode5NotAStackTrace() throws {
        let result = try stack.client(["search", "lion"])
        XCTAssertEqual(result.status, 5)
        XCTAssertTrue(result.stderr.contains("is not running"), result.stderr)
        XCTAssertFalse(result.stderr.contains("Fatal error"), result.stderr)
    }

    func testSearch_withFTS5SyntaxInUserText_isSafe() throws {
        try stack.start(.taxonomy)
        for text in ["\"", "*", "lion*", "(", "NEAR(lion tiger)", "-lion", "scientific_name:lion", "\"panthera leo", "AND OR NOT"] {
            let result = try stack.client(["search", "--", text])  // `--`: "-lion" is a word, not an option
            XCTAssertTrue([0, 6].contains(result.status), "'\(text)' gave \(result.status): \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("INTERNAL"), "'\(text)': \(result.stderr)")
        }
        let phrase = try stack.client(["search", "panthera leo\""])
        XCTAssertTrue(phrase.stdout.contains("9689"), phrase.stdout)
    }

    func testTaxonomyDaemon_whenOneClientSendsGarbage_anotherKeepsBeingServed() throws {
        try stack.start(.taxonomy)
        let good = try FrameSocket.connect(path: stack.socketPath(.taxonomy))
        let bad = try FrameSocket.connect(path: stack.socketPath(.taxonomy))
        try bad.sendRaw([0, 0, 0, 4, 0x07, 0xff, 0xff, 0xff])  // wire type 7 does not exist
        let answer = try bad.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(answer.protocolError?.code, .malformedFrame)
        XCTAssertThrowsError(try bad.receive(Stol_V1_TaxonomyResponse.self))  // closed after the error

        var request = Stol_V1_TaxonomyRequest()
        request.id = 7
        request.status = Stol_V1_StatusRequest()
        try good.send(request)
        let status = try good.receive(Stol_V1_TaxonomyResponse.self).message
        XCTAssertEqual(status.id, 7)
        guard case .status = status.result else { return XCTFail("expected a status answer, got \(status)") }

        let oversized = try FrameSocket.connect(path: stack.socketPath(.taxonomy))
        try oversized.sendRaw([0x7f, 0xff, 0xff, 0xff])  // announces 2 GiB
        XCTAssertEqual(try oversized.receive(Stol_V1_TaxonomyResponse.self).message.protocolError?.code, .frameTooLarge)

        // The daemon survived both and still answers new connections.
        XCTAssertEqual(try stack.client(["taxon", "9689"]).status, 0)
    }

    func testDaemons_onSIGTERM_exitZero() throws {
        try stack.start(.taxonomy)
        try stack.start(.favorites)
        XCTAssertEqual(try stack.client(["status"]).status, 0)  // activates and execs the daemon
        XCTAssertEqual(try stack.client(["fav", "count"]).status, 0)
        XCTAssertEqual(stack.stop(.taxonomy), 0, stack.log(.taxonomy))
        XCTAssertEqual(stack.stop(.favorites), 0, stack.log(.favorites))
        XCTAssertTrue(stack.log(.taxonomy).contains("stopped"), stack.log(.taxonomy))
    }

    func testFavorites_survivesDaemonRestart() throws {
        try stack.start(.favorites)
        XCTAssertEqual(try stack.client(["fav", "add", "9689"]).status, 0)
        XCTAssertEqual(try stack.client(["fav", "add", "38942"]).status, 0)
        stack.stop(.favorites)
        try stack.start(.favorites)
        let list = try stack.client(["fav", "list", "--json"])
        XCTAssertEqual(list.status, 0, list.stderr)
        let entries = (try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])?["entries"] as? [[String: Any]]
        XCTAssertEqual(entries?.compactMap { $0["taxon_id"] as? Int }, [38942, 9689])  // newest first
    }

    func testFavorites_twoUsersSeeOnlyTheirOwn() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run clients as other uids with setpriv")
        try stack.start(.favorites)
        try stack.start(.taxonomy)
        XCTAssertEqual(try stack.client(["fav", "add", "9689"], uid: 60001).status, 0)
        XCTAssertEqual(try stack.client(["fav", "add", "38942"], uid: 60002).status, 0)
        XCTAssertEqual(try stack.client(["fav", "add", "9694"], uid: 60002).status, 0)

        XCTAssertEqual(try stack.client(["fav", "count", "--json"], uid: 60001).stdout.trimmingCharacters(in: .whitespacesAndNewlines), #"{"count":1}"#)
        let second = try stack.client(["fav", "list"], uid: 60002)
        XCTAssertTrue(second.stdout.contains("Quercus robur") && second.stdout.contains("Panthera tigris"), second.stdout)
        XCTAssertFalse(second.stdout.contains("Panthera leo"), second.stdout)

        // Clearing one user's favourites leaves the other's untouched.
        XCTAssertEqual(try stack.client(["fav", "clear", "--yes"], uid: 60002).status, 0)
        XCTAssertEqual(try stack.client(["fav", "is", "9689", "--json"], uid: 60001).stdout.contains(#""is_favorite":true"#), true)

        // One file per uid, mode 0600, exactly the two columns of docs/design/favourites.md §1.
        let files = try FileManager.default.contentsOfDirectory(atPath: stack.stateDirectory + "/favorites")
            .filter { $0.hasSuffix(".sqlite") }.sorted()
        XCTAssertEqual(files, ["60001.sqlite", "60002.sqlite"])
        var info = stat()
        XCTAssertEqual(stat(stack.stateDirectory + "/favorites/60001.sqlite", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        let columns = try DatabaseQueue(path: stack.stateDirectory + "/favorites/60001.sqlite").read { db in
            try Row.fetchAll(db, sql: "PRAGMA table_info(favorites)").map { $0["name"] as String }
        }
        XCTAssertEqual(columns, ["taxon_id", "created_at"])
    }

    func testFavorites_clearWithoutYes_whenNotInteractive_refusesAndKeepsEverything() throws {
        try stack.start(.favorites)
        XCTAssertEqual(try stack.client(["fav", "add", "9689"]).status, 0)
        let refused = try stack.client(["fav", "clear"])
        XCTAssertEqual(refused.status, 64)
        XCTAssertTrue(refused.stderr.contains("--yes"), refused.stderr)
        XCTAssertTrue(try stack.client(["fav", "count"]).stdout.hasPrefix("1 "))
    }
}
