import Foundation
import STOLFormat
import STOLTestFixtures
import XCTest

/// `systemd/install-release-key.sh`, what `make install` runs for the trusted key:
/// installing (again, to upgrade) never weakens trust.
final class InstallKeyTests: XCTestCase {
    private static let script = Workspace.repositoryRoot + "/systemd/install-release-key.sh"
    private var directory = ""
    private var installed: String { directory + "/keys/release.pub" }
    private var developmentKey: String { directory + "/dev.pub" }
    private var releaseKey: String { directory + "/release.pub" }

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        try FileManager.default.createDirectory(atPath: directory + "/keys", withIntermediateDirectories: true)
        try Data("development key".utf8).write(to: URL(fileURLWithPath: developmentKey))
        try Data("release key".utf8).write(to: URL(fileURLWithPath: releaseKey))
    }

    private func install(releaseKey: String = "", installDevKey: String = "") throws -> String {
        let result = try ChildProcess.run("/bin/bash", [Self.script, installed, releaseKey, developmentKey, installDevKey])
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdout
    }

    private var installedText: String? { try? String(contentsOfFile: installed, encoding: .utf8) }

    func testAnUpgradeWithoutAKeyGiven_keepsTheInstalledKey_evenWhenTheDevelopmentKeyIsAsked() throws {
        let first = try install(releaseKey: releaseKey)
        XCTAssertTrue(first.contains("release key: \(releaseKey) installed"), first)
        XCTAssertEqual(installedText, "release key")
        for flag in ["", "1"] {
            let again = try install(installDevKey: flag)
            XCTAssertTrue(again.contains("the installed one is kept"), again)
            XCTAssertEqual(installedText, "release key", "INSTALL_DEV_KEY=\(flag) replaced the installed key")
            XCTAssertTrue(again.contains("SHA-256 " + SHA256.hash(Array("release key".utf8)).hexString), "it names the trusted key: \(again)")
        }
    }

    func testTheDevelopmentKey_isInstalledOnlyWhenAskedFor_onAMachineWithoutAKey() throws {
        let refused = try install()
        XCTAssertTrue(refused.contains("no release key installed"), refused)
        XCTAssertNil(installedText)
        let asked = try install(installDevKey: "1")
        XCTAssertTrue(asked.contains("DEVELOPMENT key"), asked)
        XCTAssertEqual(installedText, "development key")
        // An explicit release key replaces it.
        _ = try install(releaseKey: releaseKey)
        XCTAssertEqual(installedText, "release key")
    }
}
