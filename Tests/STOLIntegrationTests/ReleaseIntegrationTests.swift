import Foundation
import Glibc
import STOLTestFixtures
import XCTest

/// Several releases through the real client and daemons, as a lab lives them: an
/// administrator imports two, makes one the default, and any user pins either from a
/// script (--release, STOL_RELEASE), lists them and cites them; every answer names
/// its release.
final class ReleaseIntegrationTests: XCTestCase {
    var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
        try stack.startImportStack()
        for (release, built) in [("2023.11.4", "2025-11-04T00:00:00Z"), ("2024.9.7", "2026-09-07T00:00:00Z")] {
            let (file, _) = try stack.signedDatabase(name: release, builtAt: built, release: release)
            let imported = try stack.client(["db", "import", file])
            XCTAssertEqual(imported.status, 0, imported.stderr)
            XCTAssertTrue(imported.stdout.contains("release \(release) is installed"), imported.stdout)
        }
        let activated = try stack.client(["db", "activate", "2024.9.7"])
        XCTAssertEqual(activated.status, 0, activated.stderr)
        XCTAssertTrue(activated.stdout.contains("release 2024.9.7 is the default"), activated.stdout)
    }

    override func tearDown() {
        stack = nil
    }

    private func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    private func release(ofJSON text: String) -> String? {
        (json(text)["database"] as? [String: Any])?["release"] as? String
    }

    func testEveryTaxonomyCommand_answersFromTheReleaseItPins_byOptionOrEnvironment_andSaysWhich() throws {
        let unpinned = try stack.client(["taxon", "9689", "--json"])
        XCTAssertEqual(unpinned.status, 0, unpinned.stderr)
        XCTAssertEqual(release(ofJSON: unpinned.stdout), "2024.9.7")
        XCTAssertEqual(json(unpinned.stdout)["id"] as? Int, 9689, "the answer's own fields are still there")

        let pinned = try stack.client(["taxon", "9689", "--json", "--release", "2023.11.4"])
        XCTAssertEqual(release(ofJSON: pinned.stdout), "2023.11.4", pinned.stderr)
        let fromEnvironment = try stack.client(["children", "9688", "--json"], environment: ["STOL_RELEASE": "2023.11.4"])
        XCTAssertEqual(release(ofJSON: fromEnvironment.stdout), "2023.11.4", fromEnvironment.stderr)
        let optionWins = try stack.client(["search", "lion", "--json", "--release", "bundled"], environment: ["STOL_RELEASE": "2023.11.4"])
        XCTAssertEqual(release(ofJSON: optionWins.stdout), "bundled", optionWins.stderr)

        // A batch: its first line names the release that answered all of it.
        let batch = try stack.client(["lineage", "--release", "2023.11.4"])
        XCTAssertEqual(batch.stdout, "# release 2023.11.4 · Catalogue of Life · ids col-id\n", "a header even for an empty batch")
        let status = try stack.client(["status"], environment: ["STOL_RELEASE": "2023.11.4"])
        XCTAssertTrue(status.stdout.contains("release:          2023.11.4 (pinned)"), status.stdout)

        let missing = try stack.client(["taxon", "9689", "--release", "1999.1.1"])
        XCTAssertEqual(missing.status, 3, "not found: \(missing.stderr)")
        XCTAssertTrue(missing.stderr.contains("the release 1999.1.1 is not installed (installed: bundled, 2023.11.4, 2024.9.7)"),
                      missing.stderr)
    }

    func testDbList_showsEveryRelease_toAnyUser_withDefaultAndLoaded() throws {
        _ = try stack.client(["taxon", "9689", "--release", "2023.11.4"])  // opens it
        let list = try stack.client(["db", "list", "--json"], uid: 1000)
        XCTAssertEqual(list.status, 0, "any user: \(list.stderr)")
        let releases = (json(list.stdout)["releases"] as? [[String: Any]]) ?? []
        XCTAssertEqual(releases.map { $0["release"] as? String }, ["bundled", "2023.11.4", "2024.9.7"])
        XCTAssertEqual(releases.map { $0["is_default"] as? Bool ?? false }, [false, false, true])
        XCTAssertEqual(releases.map { $0["loaded"] as? Bool ?? false }, [true, true, true])
        XCTAssertEqual((releases[1]["provenance"] as? [String: Any])?["id_namespace"] as? String, "col-id")
        XCTAssertEqual(releases[2]["build_time"] as? String, "2026-09-07T00:00:00Z")
        XCTAssertEqual(json(list.stdout)["default_release"] as? String, "2024.9.7")

        let table = try stack.client(["db", "list"])
        let rows = table.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(rows.first?.split(separator: " ", omittingEmptySubsequences: true).map(String.init),
                       ["RELEASE", "SOURCE", "IDS", "SIZE", "BUILT", "FINGERPRINT", "DEFAULT", "LOADED"], table.stdout)
        XCTAssertTrue(rows.contains { $0.hasPrefix("2024.9.7 ") && $0.contains("2026-09-07T00:00:00Z") && $0.contains(" yes ") },
                      table.stdout)
    }

    func testCite_printsTheCitationOfTheDefaultOrPinnedRelease() throws {
        let cite = try stack.client(["cite", "--release", "2023.11.4"])
        XCTAssertEqual(cite.status, 0, cite.stderr)
        let first = cite.stdout.split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertTrue(first.contains("Catalogue of Life"), cite.stdout)
        XCTAssertTrue(cite.stdout.contains("source:       Catalogue of Life, release 2023.11.4 (ids: col-id)"), cite.stdout)
        let asJSON = try stack.client(["cite", "--json"])
        XCTAssertEqual(json(asJSON.stdout)["release"] as? String, "2024.9.7")
        XCTAssertEqual(json(asJSON.stdout)["licence"] as? String, "CC BY 4.0")
    }

    func testDeletingAPinnedRelease_answersReleaseNotInstalled_andTheDefaultGoesOn() throws {
        XCTAssertEqual(try stack.client(["taxon", "9689", "--release", "2023.11.4"]).status, 0)
        let deleted = try stack.client(["db", "delete", "2023.11.4", "--yes"])
        XCTAssertEqual(deleted.status, 0, deleted.stderr)
        XCTAssertEqual(try stack.client(["taxon", "9689", "--release", "2023.11.4"]).status, 3)
        let unpinned = try stack.client(["taxon", "9689", "--json"])
        XCTAssertEqual(release(ofJSON: unpinned.stdout), "2024.9.7")
        XCTAssertEqual(try stack.client(["db", "delete", "bundled", "--yes"]).status, 64, "the bundled database is never deleted")
    }
}
