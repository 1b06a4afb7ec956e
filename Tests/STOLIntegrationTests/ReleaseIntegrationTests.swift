import Foundation
import GRDB
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
        // JSON lines stay JSON: the header goes to standard error.
        let jsonl = try stack.client(["lineage", "--jsonl", "--release", "2023.11.4"])
        XCTAssertEqual(jsonl.stdout, "")
        XCTAssertEqual(jsonl.stderr, "# release 2023.11.4 · Catalogue of Life · ids col-id\n")
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

    /// A user's favourites through a change of the default release: the next
    /// `fav list` says what happened to them, `fav check` lists it with the taxon each
    /// is now, and nothing is dropped.
    func testAfterTheDefaultChanges_aUsersNextFavList_saysWhatChanged_andFavCheckListsIt() throws {
        try stack.start(.favorites)
        // 2025.1.1: the lion renamed, the tiger (9694) gone, the leopard (9691) moved to the genus of the cat.
        let (file, _) = try stack.signedDatabase(name: "2025.1.1", builtAt: "2027-01-01T00:00:00Z", release: "2025.1.1") { db in
            try db.execute(sql: "UPDATE taxa SET scientific_name = 'Panthera leo leo' WHERE id = 9689")
            try db.execute(sql: "DELETE FROM names WHERE taxon_id = 9694")
            try db.execute(sql: "DELETE FROM taxa WHERE id = 9694")
            try db.execute(sql: "UPDATE taxa SET parent_id = (SELECT parent_id FROM taxa WHERE id = 9685) WHERE id = 9691")
        }
        XCTAssertEqual(try stack.client(["db", "import", file]).status, 0)
        let state = try StackHarness.makeDirectory(prefix: "stolxdg")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: state) }
        chmod(state, 0o777)
        let user = ["XDG_STATE_HOME": state]
        for id in ["9689", "9694", "9691", "9685"] {
            XCTAssertEqual(try stack.client(["fav", "add", id], uid: 1000, environment: user).status, 0)
        }
        let first = try stack.client(["fav", "list"], uid: 1000, environment: user)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertFalse(first.stderr.contains("release changed"), "nothing to tell the first time: \(first.stderr)")
        // The client's record of what the user saw: replaced whole (AtomicFile), private, nothing left beside it.
        func recorded() throws -> String { try String(contentsOfFile: state + "/stol/favorites-release", encoding: .utf8) }
        XCTAssertEqual(try recorded(), "2024.9.7\n")
        // Listed in the release that answers now, in no other before: nothing to compare, and that is no error.
        let unchanged = try stack.client(["fav", "check"], uid: 1000, environment: user)
        XCTAssertEqual(unchanged.status, 0, unchanged.stderr)
        XCTAssertTrue(unchanged.stdout.hasPrefix("your favourites were last listed in 2024.9.7, the release that answers now"),
                      unchanged.stdout)
        let unchangedJSON = try stack.client(["fav", "check", "--json"], uid: 1000, environment: user)
        XCTAssertEqual(unchangedJSON.status, 0, unchangedJSON.stderr)
        XCTAssertEqual(unchangedJSON.stdout, "", "no change, no JSON line")
        // A user who never listed theirs is told how to record a release, or to name one.
        let never = try stack.client(["fav", "check"], uid: 1001, environment: user)
        XCTAssertEqual(never.status, 64)
        XCTAssertTrue(never.stderr.contains("no release is recorded for your favourites yet"), never.stderr)
        let attributes = try FileManager.default.attributesOfItem(atPath: state + "/stol/favorites-release")
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        XCTAssertEqual((attributes[.ownerAccountID] as? NSNumber)?.intValue, 1000)

        XCTAssertEqual(try stack.client(["db", "activate", "2025.1.1"]).status, 0)
        let next = try stack.client(["fav", "list"], uid: 1000, environment: user)
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertTrue(next.stderr.contains("the release changed from 2024.9.7 to 2025.1.1: of your favourites "
                                           + "1 deleted, 1 renamed, 1 moved"), next.stderr)
        XCTAssertTrue(next.stdout.contains("9694"), "the deleted favourite is still listed: \(next.stdout)")

        let check = try stack.client(["fav", "check"], uid: 1000, environment: user)
        XCTAssertEqual(check.status, 0, check.stderr)
        let lines = check.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "from 2024.9.7 to 2025.1.1: 1 deleted, 1 renamed, 1 moved", check.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("renamed\t9689\tPanthera leo\tnow named Panthera leo leo") }, check.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("deleted\t9694\t") }, check.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("moved\t9691\t") }, check.stdout)
        XCTAssertEqual(lines.count, 4, check.stdout)

        XCTAssertEqual(try recorded(), "2025.1.1\n2024.9.7\n", "the release seen last, then the one before")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: state + "/stol"), ["favorites-release"])
        let again = try stack.client(["fav", "list"], uid: 1000, environment: user)
        XCTAssertFalse(again.stderr.contains("release changed"), "told once: \(again.stderr)")
        XCTAssertEqual(try stack.client(["fav", "count"], uid: 1000, environment: user).stdout, "4 species saved\n", "none dropped")
        // Another user, who never listed theirs, is told nothing and loses nothing.
        XCTAssertEqual(try stack.client(["fav", "check", "--since", "2024.9.7"], uid: 1001, environment: user).stdout,
                       "none of your 0 favourites changed from 2024.9.7 to 2025.1.1\n")
    }

    func testDiffAndHistory_throughTheClient_asTSVJSONAndSummary() throws {
        let (file, _) = try stack.signedDatabase(name: "2025.1.1", builtAt: "2027-01-01T00:00:00Z", release: "2025.1.1") { db in
            try db.execute(sql: "UPDATE taxa SET scientific_name = 'Panthera leo leo' WHERE id = 9689")
            try db.execute(sql: "DELETE FROM taxa WHERE id = 9694")
        }
        XCTAssertEqual(try stack.client(["db", "import", file]).status, 0)
        let diff = try stack.client(["diff", "2024.9.7", "2025.1.1"], uid: 1000)
        XCTAssertEqual(diff.status, 0, diff.stderr)
        XCTAssertEqual(diff.stdout.split(separator: "\n").map(String.init), [
            "# diff 2024.9.7 → 2025.1.1",
            "renamed\t9689\tspecies\tPanthera leo leo\tPanthera leo\tPanthera leo leo",
            "deleted\t9694\tspecies\tPanthera tigris\t\t",
        ])
        XCTAssertTrue(diff.stderr.contains("2024.9.7 → 2025.1.1: 2 changes"), diff.stderr)
        let summary = try stack.client(["diff", "2024.9.7", "2025.1.1", "--summary", "--json"])
        let counts = json(summary.stdout)
        XCTAssertEqual(counts["total"] as? Int, 2)
        XCTAssertEqual(counts["by_kind"] as? [String: Int], ["renamed": 1, "deleted": 1])
        XCTAssertEqual((counts["by_kind_and_rank"] as? [String: [String: Int]])?["deleted"], ["species": 1])
        let lines = try stack.client(["diff", "2024.9.7", "2025.1.1", "--jsonl"]).stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(json(String(lines[0]))["kind"] as? String, "CHANGE_KIND_RENAMED")

        let history = try stack.client(["history", "9694"])
        XCTAssertEqual(history.status, 0, history.stderr)
        let rows = history.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(rows.map { $0.split(separator: " ").first.map(String.init) }, ["bundled", "2023.11.4", "2024.9.7", "2025.1.1"])
        XCTAssertTrue(rows[2].contains("Panthera tigris (species)"), history.stdout)
        XCTAssertTrue(rows[3].hasSuffix("absent"), history.stdout)
        XCTAssertEqual(try stack.client(["diff", "2024.9.7", "1999.1.1"]).status, 3)
    }
}
