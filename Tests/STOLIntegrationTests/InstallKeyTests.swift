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

    private var operatorKeys: String { directory + "/etc-stol-keys" }

    private func install(releaseKey: String = "", installDevKey: String = "") throws -> String {
        let result = try ChildProcess.run("/bin/bash", [Self.script, installed, releaseKey, developmentKey, installDevKey, operatorKeys])
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

    /// The install names every trusted key by its id (what errors name), in both
    /// directories, with its not-after and the revoked ids; and the development key
    /// does not join an operator's keys even when asked for.
    func testTheInstallNamesEveryTrustedKeyByItsID_andTheDevelopmentKeyNeverJoinsAnOperatorsKeys() throws {
        let shipped = Ed25519.PrivateKey.generate(), operators = Ed25519.PrivateKey.generate(), revoked = Ed25519.PrivateKey.generate()
        try FileManager.default.createDirectory(atPath: operatorKeys, withIntermediateDirectories: true)
        try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(operators.publicKey, notAfter: "2027-06-30"),
                                              to: operatorKeys + "/release-2027.pub", overwrite: false)
        try Data("\(revoked.publicKey.keyID)\n".utf8).write(to: URL(fileURLWithPath: operatorKeys + "/revoked"))
        let asked = try install(installDevKey: "1")
        XCTAssertNil(installedText, "the development key joined the operator's keys")
        XCTAssertTrue(asked.contains("does not join"), asked)
        XCTAssertTrue(asked.contains("trusted: key \(operators.publicKey.keyID) \(operatorKeys)/release-2027.pub"), asked)
        XCTAssertTrue(asked.contains("not after 2027-06-30"), asked)
        XCTAssertTrue(asked.contains("revoked (\(operatorKeys)/revoked): \(revoked.publicKey.keyID)"), asked)
        try SigningKeyFile.writePublicKey(shipped.publicKey, to: directory + "/shipped.pub", overwrite: false)
        let released = try install(releaseKey: directory + "/shipped.pub")
        XCTAssertTrue(released.contains("trusted: key \(shipped.publicKey.keyID) "), released)
        XCTAssertTrue(released.contains("trusted: key \(operators.publicKey.keyID) "), released)
    }
}
