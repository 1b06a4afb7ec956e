import Foundation
import STOLModel
import STOLTestFixtures
import XCTest

/// Release names (``ReleaseName``) name files: only one safe path component is a
/// name, and releases sort by their numbers, as people read them.
final class ReleaseNameTests: XCTestCase {
    func testAName_isOneSafePathComponent_neverBundled() {
        // One grammar with the signed header's text field: at most 32 bytes, so every
        // installed release can be signed again.
        for good in ["2024.9.7", "2023-08-28", "unknown", "v2_1+local", "A", String(repeating: "9", count: 32)] {
            XCTAssertTrue(ReleaseName.isValid(good), good)
        }
        for bad in ["", "bundled", "../etc", "a/b", ".hidden", "-flag", "_x", "2024 9 7", "é2024", "a\u{0}b",
                    String(repeating: "9", count: 33), String(repeating: "9", count: 41), "x.sqlite/..", "\n", "+x"] {
            XCTAssertFalse(ReleaseName.isValid(bad), bad.debugDescription)
        }
    }

    func testReleases_sortByTheirNumbers_thenAsText() {
        let sorted = ["2021.3.25", "2021.11.16", "2024.9.7", "2024.9.7a", "2024.10.1", "2025", "unknown"]
        var random = SplitMix64(for: self)
        for _ in 0..<50 {
            XCTAssertEqual(sorted.shuffled(using: &random).sorted(by: ReleaseName.precedes), sorted)
        }
        XCTAssertFalse(ReleaseName.precedes("2024.9.7", "2024.9.7"), "a strict order")
        XCTAssertTrue(ReleaseName.precedes("2024.9", "2024.9.7"), "a prefix first")
        XCTAssertTrue(ReleaseName.precedes("99999999999999999999.1", "99999999999999999999.2"), "numbers beyond 64 bits still compare")
    }

    func testInstalled_listsValidSqliteNames_oldestFirst() throws {
        let directory = try makeTemporaryDirectory(self)
        for name in ["2024.9.7.sqlite", "2021.11.16.sqlite", "2021.3.25.sqlite", "bundled.sqlite", "..sqlite",
                     "notes.txt", "2024.9.7.sqlite-wal", ".2025.1.1.sqlite.tmp-1"] {
            XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data()))
        }
        XCTAssertEqual(ReleaseName.installed(in: directory), ["2021.3.25", "2021.11.16", "2024.9.7"])
        XCTAssertEqual(ReleaseName.installed(in: directory + "/missing"), [])
    }

    func testADatabaseWithoutProvenance_isUnknown() {
        XCTAssertEqual(ReleaseName.of(nil), ReleaseName.unknown)
    }
}
