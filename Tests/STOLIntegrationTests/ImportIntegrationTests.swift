import Foundation
import Glibc
import STOLFormat
import STOLModel
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest

/// The reference database's life through the real client and daemons, as an
/// administrator lives it: import (with progress), status, activate, the
/// taxonomy answers switching, deactivate, delete, import again.
final class ImportIntegrationTests: XCTestCase {
    var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
    }

    override func tearDown() {
        stack = nil
    }

    private func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    private func taxonomyStatus() throws -> [String: Any] {
        let result = try stack.client(["status", "--json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        return json(result.stdout)
    }

    func testImportActivateDeactivateDeleteReimport_asAnAdministratorDoesIt() throws {
        try stack.startImportStack()
        let (file, sqlite) = try stack.signedDatabase(name: "reference", builtAt: "2026-11-01T12:00:00Z")

        let imported = try stack.client(["db", "import", file])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        // Not a terminal: one plain line per stage, in order.
        let stages = imported.stderr.split(separator: "\n").map { String($0.split(separator: ":")[0]) }
        XCTAssertEqual(stages, ["received", "checking header", "verifying checksum", "verifying signature",
                                "decompressing", "checking database", "installing"], imported.stderr)
        XCTAssertTrue(imported.stdout.contains("release unknown is installed") && imported.stdout.contains("not the default"),
                      imported.stdout)
        XCTAssertEqual(fileDigest(stack.referencePath), SHA256.hash(sqlite).hexString, "installed byte for byte")
        XCTAssertEqual(stack.stagingFiles, [])

        var status = try stack.importStatus()
        XCTAssertEqual(status["reference_present"] as? Bool, true)
        XCTAssertEqual(status["reference_active"] as? Bool, false)
        XCTAssertEqual(status["reference_build_time"] as? String, "2026-11-01T12:00:00Z")
        XCTAssertEqual(status["reference_schema_version"] as? Int, TaxonomySchema.currentVersion)
        XCTAssertEqual(status["reference_size_bytes"] as? Int, sqlite.count)
        XCTAssertEqual(status["import_running"] as? Bool, false)
        let text = try stack.client(["db", "status"])
        XCTAssertTrue(text.stdout.contains("built:            2026-11-01T12:00:00Z"), text.stdout)
        XCTAssertEqual((try taxonomyStatus()["active"] as? [String: Any])?["kind"] as? String, "DATABASE_KIND_BUNDLED")

        let activated = try stack.client(["db", "activate"])
        XCTAssertEqual(activated.status, 0, activated.stderr)
        let active = try XCTUnwrap(try taxonomyStatus()["active"] as? [String: Any])
        XCTAssertEqual(active["kind"] as? String, "DATABASE_KIND_REFERENCE")
        status = try stack.importStatus()
        XCTAssertEqual(status["reference_active"] as? Bool, true)
        XCTAssertEqual(active["fingerprint"] as? String, status["reference_fingerprint"] as? String,
                       "db status names the file every taxonomy answer names")
        let lion = try stack.client(["taxon", "9689", "--json"])
        XCTAssertEqual(lion.status, 0, lion.stderr)

        XCTAssertEqual(try stack.client(["db", "deactivate"]).status, 0)
        XCTAssertEqual((try taxonomyStatus()["active"] as? [String: Any])?["kind"] as? String, "DATABASE_KIND_BUNDLED")
        XCTAssertEqual(try stack.importStatus()["reference_present"] as? Bool, true, "deactivating keeps the file")

        // Deleting asks; without a terminal and without --yes it refuses and changes nothing.
        let before = stack.stateSnapshot()
        let refused = try stack.client(["db", "delete"])
        XCTAssertEqual(refused.status, 64, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("--yes"), refused.stderr)
        XCTAssertEqual(stack.stateSnapshot(), before)
        XCTAssertEqual(try stack.client(["db", "activate"]).status, 0)
        let deleted = try stack.client(["db", "delete", "--yes"])
        XCTAssertEqual(deleted.status, 0, deleted.stderr)
        status = try stack.importStatus()
        XCTAssertEqual(status["reference_present"] as? Bool, false)
        XCTAssertEqual(status["reference_active"] as? Bool, false)
        XCTAssertNil(fileDigest(stack.referencePath))
        XCTAssertEqual((try taxonomyStatus()["active"] as? [String: Any])?["kind"] as? String, "DATABASE_KIND_BUNDLED")
        XCTAssertEqual(try stack.client(["db", "activate"]).status, 3, "nothing to activate: not found")

        let again = try stack.client(["db", "import", "--activate", file])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stdout.contains("it is the default"), again.stdout)
        XCTAssertEqual((try taxonomyStatus()["active"] as? [String: Any])?["kind"] as? String, "DATABASE_KIND_REFERENCE")
    }

    /// The import coordinator asks the taxonomy server about a release it installed
    /// (``TaxonomyWarmUp``): the server opens it and writes its tree's image, so that the
    /// release's first real start reads its tree instead of building it.
    func testAnInstalledRelease_hasItsTreeImaged_beforeAnyoneAsksForIt() throws {
        try stack.startImportStack()
        let (file, _) = try stack.signedDatabase(name: "reference", builtAt: "2026-11-01T12:00:00Z")
        let imported = try stack.client(["db", "import", file])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        let images = stack.treeImageDirectory
        func imagedDatabases() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: images)) ?? []).filter { $0.hasSuffix(".tree") }.compactMap { name in
                let descriptor = open(images + "/" + name, O_RDONLY)
                defer { if descriptor >= 0 { close(descriptor) } }
                return (try? TaxonomyTree.readImageKey(from: descriptor))?.split(separator: "\n").first.map(String.init)
            }
        }
        // No client has asked the taxonomy server anything: the coordinator did, after the install.
        XCTAssertTrue(waitUntil(seconds: 60) { imagedDatabases().contains(stack.referencePath) },
                      "no image of \(stack.referencePath) in \(images): \(imagedDatabases())")
    }

    func testDeleteOnATerminal_asksAndDeletesOnlyAfterYes() throws {
        try stack.startImportStack()
        let (file, _) = try stack.signedDatabase(name: "reference")
        XCTAssertEqual(try stack.client(["db", "import", file]).status, 0)
        let declined = try stack.clientOnTerminal(["db", "delete"], input: "no\n")
        XCTAssertEqual(declined.status, 64, declined.stderr)
        XCTAssertTrue(declined.stderr.contains("Delete release unknown"), declined.stderr)
        XCTAssertNotNil(fileDigest(stack.referencePath))
        let accepted = try stack.clientOnTerminal(["db", "delete"], input: "yes\n")
        XCTAssertEqual(accepted.status, 0, accepted.stderr)
        XCTAssertNil(fileDigest(stack.referencePath))
    }

    func testImportAtATerminal_showsOneLiveLinePerStage_withPercentRateAndTimeLeft() throws {
        try requireExecutable("/usr/bin/script", debianPackage: "bsdutils")
        try stack.startImportStack()
        let (file, _) = try stack.signedDatabase(name: "reference", paddingMegabytes: 24)
        // script(1) gives the client a real terminal and copies what it draws.
        let command = "STOL_RUNTIME_DIR=\(stack.runtimeDirectory) \(StackHarness.binDirectory)/stol-client db import \(file)"
        let result = try StackHarness.run("/usr/bin/script", ["-qefc", command, "/dev/null"])
        XCTAssertEqual(result.status, 0, result.stdout)
        let lines = result.stdout.components(separatedBy: "\r\n").filter { $0.contains("\u{1B}[K") }
        let stages = lines.compactMap { line in
            line.components(separatedBy: "\r\u{1B}[K").last?.trimmingCharacters(in: .whitespaces)
                .components(separatedBy: "  ").first
        }
        XCTAssertEqual(stages, ["received", "checking header", "verifying checksum", "verifying signature",
                                "decompressing", "checking database", "installing"], result.stdout)
        XCTAssertTrue(lines.allSatisfy { $0.hasSuffix("100%") || $0.contains("100%  ") }, "each stage's line ends at 100%: \(lines)")
        let redraws = result.stdout.components(separatedBy: "\r\u{1B}[K").count - 1
        XCTAssertGreaterThan(redraws, lines.count, "lines are redrawn in place while a stage runs")
        XCTAssertTrue(result.stdout.contains("MB/s"), "a rate is shown: \(result.stdout)")
        XCTAssertTrue(result.stdout.contains(" left"), "time left is shown: \(result.stdout)")
    }

    func testImportWithJSON_printsOneProgressObjectPerFrame_thenTheFinalState() throws {
        try stack.startImportStack()
        let (file, sqlite) = try stack.signedDatabase(name: "reference")
        let result = try stack.client(["db", "import", "--json", file])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map { json(String($0)) }
        let progress = lines.dropLast().compactMap { $0["progress"] as? [String: Any] }
        XCTAssertEqual(progress.count, lines.count - 1, "every line but the last is a progress object")
        let stages = progress.compactMap { $0["stage"] as? String }
        XCTAssertEqual(stages.first, "IMPORT_STAGE_RECEIVED")
        XCTAssertTrue(stages.contains("IMPORT_STAGE_DECOMPRESSING"))
        XCTAssertTrue(stages.contains("IMPORT_STAGE_CHECKING_DATABASE"))
        for object in progress {
            XCTAssertNotNil(object["fraction"] as? Double)
            XCTAssertNotNil(object["bytes_total"] as? Int)
        }
        XCTAssertEqual(lines.last?["reference_present"] as? Bool, true)
        XCTAssertEqual(lines.last?["reference_size_bytes"] as? Int, sqlite.count)
    }

    func testImportOfAnOlderBuild_isRefusedAsDowngrade_unlessAllowed() throws {
        try stack.startImportStack()
        let newer = try stack.signedDatabase(name: "newer", builtAt: "2026-10-01T00:00:00Z")
        let older = try stack.signedDatabase(name: "older", builtAt: "2025-10-01T00:00:00Z")
        XCTAssertEqual(try stack.client(["db", "import", newer.stol]).status, 0)
        let before = stack.stateSnapshot()
        let refused = try stack.client(["db", "import", "--json", older.stol])
        XCTAssertEqual(refused.status, 7, "every refusal of a file exits 7: \(refused.stderr)")
        XCTAssertEqual(StackHarness.errorCode(refused), "DOWNGRADE_REFUSED", refused.stdout)
        XCTAssertEqual(stack.stateSnapshot(), before)
        let allowed = try stack.client(["db", "import", "--allow-downgrade", older.stol])
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
        XCTAssertEqual(fileDigest(stack.referencePath), SHA256.hash(older.sqlite).hexString)
    }

    func testASecondImportWhileOneRuns_isBusy_andTheFirstStillSucceeds() throws {
        try StackHarness.requireTestHooks()
        let pauseFile = stack.root + "/paused"
        stack.environment["STOL_TEST_PAUSE_AT"] = "verify:decompressing"
        stack.environment["STOL_TEST_PAUSE_FILE"] = pauseFile
        try stack.startImportStack()
        let (file, _) = try stack.signedDatabase(name: "reference")
        let directory = try StackHarness.makeDirectory(prefix: "stolcl")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try stack.startClient(["db", "import", file], directory: directory)
        XCTAssertTrue(waitUntil { (try? String(contentsOfFile: pauseFile, encoding: .utf8))?.contains("verify:") ?? false })
        let status = try stack.importStatus()
        XCTAssertEqual(status["import_running"] as? Bool, true)
        XCTAssertEqual(status["import_stage"] as? String, "IMPORT_STAGE_DECOMPRESSING")
        let second = try stack.client(["db", "import", file])
        XCTAssertEqual(second.status, 5, second.stderr)
        XCTAssertTrue(second.stderr.contains("BUSY"), second.stderr)
        stack.verifierPIDs().forEach { kill($0, SIGKILL) }
        XCTAssertNotEqual(first.wait(timeoutSeconds: 30), 0, "the first import's verifier was killed")
        XCTAssertNil(fileDigest(stack.referencePath))
    }

    /// A file that is no `.stol` file is refused by the coordinator's own reading of the
    /// header: no verifier is started for it.
    func testWrongMagic_isRefusedByTheCoordinatorsHeaderCheck_withoutAVerifier_andNothingChanges() throws {
        try stack.startImportStack()
        let file = try stack.writeFile(Array("definitely not a stol file".utf8), name: "bad.stol")
        XCTAssertEqual(try stack.client(["db", "status"]).status, 0)  // importd starts on its first connection
        let before = stack.stateSnapshot()
        let result = try stack.client(["db", "import", file])
        XCTAssertEqual(result.status, 7, result.stderr)
        XCTAssertTrue(result.stderr.contains("the magic check failed"), result.stderr)
        XCTAssertTrue(result.stderr.contains("NOT_A_STOL_FILE"), result.stderr)
        XCTAssertEqual(stack.stateSnapshot(), before)
        XCTAssertFalse(stack.log(.verify).contains("serving one activated connection"), stack.log(.verify))
    }

    /// A damaged payload under a good header is refused by the coordinator's own checksum
    /// (the format's check order: `CHECKSUM_MISMATCH`, as `stol-pipeline verify` says), before
    /// any verifier runs. A file that passes the coordinator's checks and yields something
    /// other than its signed content reaches a verifier: a fresh one per import.
    func testADamagedPayload_isRefusedBeforeAnyVerifier_andWrongContent_byAFreshVerifierPerImport() throws {
        try stack.startImportStack()
        let (good, sqlite) = try stack.signedDatabase(name: "good")
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: good)))
        bytes[bytes.count - 10] ^= 0x40
        let file = try stack.writeFile(bytes, name: "damaged.stol")
        XCTAssertEqual(try stack.client(["db", "status"]).status, 0)
        let before = stack.stateSnapshot()
        let result = try stack.client(["db", "import", file])
        XCTAssertEqual(result.status, 7, result.stderr)
        XCTAssertTrue(result.stderr.contains("CHECKSUM_MISMATCH"), result.stderr)
        XCTAssertEqual(stack.stateSnapshot(), before)
        XCTAssertFalse(stack.log(.verify).contains("serving one activated connection"), stack.log(.verify))

        let wrongContent = try stack.writeFile(StolCorpus.sign(sqlite, key: StackHarness.signingKey) { $0.contentSHA256[0] ^= 1 },
                                               name: "wrong-content.stol")
        let refused = try stack.client(["db", "import", wrongContent])
        XCTAssertEqual(refused.status, 7, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("CONTENT_HASH_MISMATCH"), refused.stderr)
        XCTAssertEqual(stack.stateSnapshot(), before)
        XCTAssertTrue(stack.log(.verify).contains("serving one activated connection"), stack.log(.verify))
        XCTAssertEqual(try stack.client(["db", "import", wrongContent]).status, 7)
        XCTAssertEqual(stack.log(.verify).components(separatedBy: "serving one activated connection").count - 1, 2)
    }

    func testImport_whenNoKeyIsTrusted_saysWhichFileIsMissing() throws {
        stack.environment["STOL_TRUSTED_KEY"] = stack.root + "/no-such-key.pub"
        try stack.start(.import)
        try stack.start(.verify)
        let (file, _) = try stack.signedDatabase(name: "reference")
        let result = try stack.client(["db", "import", file])
        XCTAssertEqual(result.status, 5, result.stderr)
        XCTAssertTrue(result.stderr.contains("no-such-key.pub"), result.stderr)
    }

    func testImport_whenCallerIsNotAdmin_getsPermissionDenied() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run clients as other uids with setpriv")
        try stack.start(.import)
        // Open the socket to everyone so the daemon's own SO_PEERCRED check is what refuses.
        chmod(stack.socketPath(.import), 0o666)
        for command in [["db", "status"], ["db", "activate"], ["db", "deactivate"], ["db", "delete", "--yes"]] {
            let refused = try stack.client(command, uid: 60003)
            XCTAssertEqual(refused.status, 4, "\(command): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("PERMISSION_DENIED"), refused.stderr)
        }
        XCTAssertEqual(try stack.client(["db", "status"]).status, 0)  // root is an administrator
        // The four refusals: the first logged at once, the other three summed up when the
        // daemon stops (a restart loses no count).
        XCTAssertFalse(stack.log(.import).contains("more import requests refused"), stack.log(.import))
        XCTAssertEqual(stack.stop(.import), 0)
        let log = stack.log(.import)
        XCTAssertTrue(log.contains("import request refused"), log)
        XCTAssertTrue(log.contains("more import requests refused") && log.contains("count=3") && log.contains("PERMISSION_DENIED=3"), log)
    }

    func testImport_whenSocketModeExcludesCaller_clientSaysPermissionDenied() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run clients as other uids with setpriv")
        try stack.start(.import)  // mode 0660, owned by root: uid 60003 cannot connect at all
        let refused = try stack.client(["db", "status"], uid: 60003)
        XCTAssertEqual(refused.status, 4, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("stol-admin"), refused.stderr)
    }

    func testImport_adminGroupMember_isAccepted() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run clients as other uids with setpriv")
        let users = try XCTUnwrap(STOLTransport.groupID(named: "users"), "Debian's base-passwd makes the group users")
        try stack.start(.import, extraArguments: ["--admin-group", "users"])
        chmod(stack.socketPath(.import), 0o666)
        XCTAssertEqual(try stack.client(["db", "status"], uid: 60004, groups: [users]).status, 0)
        XCTAssertEqual(try stack.client(["db", "status"], uid: 60004).status, 4)
    }

    func testImport_fileTheCallerCannotRead_isRefusedByTheClientItself() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run clients as other uids with setpriv")
        try stack.start(.import)
        chmod(stack.socketPath(.import), 0o666)
        let file = stack.root + "/private.stol"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("STOL".utf8), attributes: [.posixPermissions: 0o600]))
        let result = try stack.client(["db", "import", file], uid: 60005)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("cannot open"), result.stderr)
    }
}

func fileDigest(_ path: String) -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    return SHA256.hash([UInt8](data)).hexString
}
