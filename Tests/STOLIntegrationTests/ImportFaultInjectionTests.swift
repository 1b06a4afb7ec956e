import Foundation
import Glibc
import STOLFormat
import STOLTestFixtures
import XCTest

/// "Kill the verifier in the middle of an import, and nothing changes": SIGKILL
/// of the verifier at each stage and at random moments, of `stol-importd` between
/// staging and rename and right after the rename, a client that leaves, and a
/// full disk. Every time `reference.sqlite` and the activation state are byte
/// for byte what they were (or, once the rename has happened, the complete new
/// file), no staging file remains, and the next import succeeds.
///
/// A test-only switch (`STOL_TEST_PAUSE_AT`) stops a daemon at a named stage, so
/// that a kill lands exactly there; the random kills need no switch.
/// `make fault` runs the random kills 1,000 times (`STOL_FAULT_KILLS`).
final class ImportFaultInjectionTests: XCTestCase {
    var stack: StackHarness!
    var pauseFile: String { stack.root + "/paused" }

    override func setUpWithError() throws {
        stack = try StackHarness()
    }

    override func tearDown() {
        stack = nil
    }

    /// Restarts the verifier's activator with `stages` armed (none: disarmed).
    private func armVerifier(_ stages: [String]) throws {
        try StackHarness.requireTestHooks()
        stack.stop(.verify)
        unlink(stack.socketPath(.verify))
        stack.environment["STOL_TEST_PAUSE_AT"] = stages.isEmpty ? nil : stages.joined(separator: ",")
        stack.environment["STOL_TEST_PAUSE_FILE"] = stages.isEmpty ? nil : pauseFile
        try stack.start(.verify)
    }

    /// Restarts importd (after a crash, or to arm it) with `stages` armed.
    private func restartImportd(_ stages: [String]) throws {
        try StackHarness.requireTestHooks()
        stack.crash(.import)
        stack.environment["STOL_TEST_PAUSE_AT"] = stages.isEmpty ? nil : stages.joined(separator: ",")
        stack.environment["STOL_TEST_PAUSE_FILE"] = stages.isEmpty ? nil : pauseFile
        try stack.start(.import)
        stack.environment["STOL_TEST_PAUSE_AT"] = nil
        stack.environment["STOL_TEST_PAUSE_FILE"] = nil
    }

    /// The pid that paused at `stage`, once it has.
    private func pausedPID(_ stage: String) -> pid_t? {
        var found: pid_t?
        waitUntil {
            let lines = (try? String(contentsOfFile: pauseFile, encoding: .utf8))?.split(separator: "\n") ?? []
            found = lines.last { $0.hasPrefix(stage + " ") }.flatMap { pid_t($0.split(separator: " ")[1]) }
            return found != nil
        }
        return found
    }

    /// An active reference database, so that "nothing changed" is about real files.
    private func installBaseline() throws -> [String: String] {
        let (file, _) = try stack.signedDatabase(name: "baseline", builtAt: "2026-01-01T00:00:00Z")
        let result = try stack.client(["db", "import", "--activate", file])
        XCTAssertEqual(result.status, 0, result.stderr)
        return stack.stateSnapshot()
    }

    private func clientDirectory() throws -> String {
        let directory = try StackHarness.makeDirectory(prefix: "stolcl")
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        return directory
    }

    private func output(_ directory: String, _ name: String) -> String {
        (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? ""
    }

    func testKillingTheVerifierAtEachStage_changesNothing_andTheNextImportSucceeds() throws {
        try stack.startImportStack()
        _ = try installBaseline()
        try killAtEachStage(candidate: try stack.signedDatabase(name: "candidate", builtAt: "2026-02-01T00:00:00Z", paddingMegabytes: 2),
                            installsAt: stack.referencePath)
    }

    /// With one release installed and the default, a second release is imported: every
    /// kill leaves the installed release, the activation state and the releases directory
    /// byte for byte; the next import installs it beside the first.
    func testKillingTheVerifierAtEachStage_ofASecondRelease_leavesEveryReleaseAndTheDefaultAsTheyWere() throws {
        try stack.startImportStack()
        _ = try installBaseline()
        try killAtEachStage(candidate: try stack.signedDatabase(name: "second", builtAt: "2025-02-01T00:00:00Z", release: "2023.11.4",
                                                                paddingMegabytes: 2),
                            installsAt: stack.stateDirectory + "/databases/releases/2023.11.4.sqlite")
        let status = try stack.importStatus()
        XCTAssertEqual(status["releases"] as? [String], ["2023.11.4", "unknown"])
        XCTAssertEqual(status["default_release"] as? String, "unknown", "importing another release changes no default")
    }

    /// A delta from the installed release to a new one: the base (installed, read-only to
    /// the verifier) and the target stay as they were after each kill.
    private func deltaCandidate() throws -> (stol: String, sqlite: [UInt8]) {
        let base = try [UInt8](Data(contentsOf: URL(fileURLWithPath: stack.referencePath)))
        let next = try stack.signedDatabase(name: "next", builtAt: "2026-02-01T00:00:00Z", release: "2024.9.7", paddingMegabytes: 2).sqlite
        let delta = try StolCorpus.signDelta(base: base, to: next, key: StackHarness.signingKey)
        return (try stack.writeFile(delta, name: "next-delta.stol"), next)
    }

    func testKillingTheVerifierAtEachStage_ofADelta_changesNothing_andTheNextImportAppliesIt() throws {
        try stack.startImportStack()
        _ = try installBaseline()
        try killAtEachStage(candidate: try deltaCandidate(), installsAt: stack.stateDirectory + "/databases/releases/2024.9.7.sqlite")
        XCTAssertEqual(try stack.importStatus()["releases"] as? [String], ["2024.9.7", "unknown"])
    }

    /// A row delta (kind 3) from the installed release: the verifier applies its rows to a
    /// copy of the base and lays the result out (STOL-FORMAT.md §10.2); a new release of
    /// renamed, deleted and added taxa. Its result is the same whatever the base's own layout.
    private func rowDeltaCandidate() throws -> (stol: String, sqlite: [UInt8]) {
        let base = try [UInt8](Data(contentsOf: URL(fileURLWithPath: stack.referencePath)))
        let next = try StolCorpus.laidOut(try stack.signedDatabase(name: "next-rows", builtAt: "2026-02-01T00:00:00Z",
                                                                   release: "2024.9.7") { db in
            try db.execute(sql: "UPDATE taxa SET scientific_name = scientific_name || ' x' WHERE id % 3 = 0")
            try db.execute(sql: "DELETE FROM taxa WHERE id % 11 = 5 AND id NOT IN (SELECT parent_id FROM taxa WHERE parent_id IS NOT NULL)")
        }.sqlite)
        let delta = try StolCorpus.signRowDelta(base: base, to: next, key: StackHarness.signingKey)
        return (try stack.writeFile(delta, name: "next-rows.stol"), next)
    }

    func testKillingTheVerifierAtEachStage_ofARowDelta_changesNothing_andTheNextImportAppliesIt() throws {
        try stack.startImportStack()
        _ = try installBaseline()
        try killAtEachStage(candidate: try rowDeltaCandidate(), installsAt: stack.stateDirectory + "/databases/releases/2024.9.7.sqlite")
        XCTAssertEqual(try stack.importStatus()["releases"] as? [String], ["2024.9.7", "unknown"])
    }

    func testKillingTheVerifierAtRandomMoments_ofARowDelta_leavesTheBaseAndNoHalfRelease() throws {
        try stack.startImportStack()
        _ = try installBaseline()
        try killAtRandomMoments(candidate: try rowDeltaCandidate(), what: "a row delta")
    }

    func testKillingTheVerifierAtRandomMoments_ofADelta_leavesTheBaseAndNoHalfRelease() throws {
        try stack.startImportStack()
        _ = try installBaseline()
        try killAtRandomMoments(candidate: try deltaCandidate(), what: "a delta")
    }

    private func killAtRandomMoments(candidate: (stol: String, sqlite: [UInt8]), what: String) throws {
        let rounds = max(10, (Int(ProcessInfo.processInfo.environment["STOL_FAULT_KILLS"] ?? "") ?? 50) / 5)
        let base = fileDigest(stack.referencePath)
        let (file, sqlite) = candidate
        let target = stack.stateDirectory + "/databases/releases/2024.9.7.sqlite"
        let started = Date()
        let probeImport = try stack.client(["db", "import", file])
        XCTAssertEqual(probeImport.status, 0, probeImport.stderr)
        let span = max(0.05, Date().timeIntervalSince(started))
        XCTAssertEqual(try stack.client(["db", "delete", "--yes", "2024.9.7"]).status, 0)
        var generator = SplitMix64(for: self)
        var landed = 0, finished = 0
        for round in 0..<rounds {
            let directory = try clientDirectory()
            let client = try stack.startClient(["db", "import", file], directory: directory)
            waitUntil(seconds: 10) { !stack.verifierPIDs().isEmpty }
            usleep(UInt32(Double(generator.next() % 1000) / 1000 * span * 1_000_000))
            stack.verifierPIDs().forEach { kill($0, SIGKILL) }
            let status = client.wait(timeoutSeconds: 60)
            if status == 0 { finished += 1 } else { landed += 1 }
            XCTAssertEqual(fileDigest(stack.referencePath), base, "round \(round): the base changed")
            let installed = fileDigest(target)
            XCTAssertTrue(installed == nil || installed == SHA256.hash(sqlite).hexString, "round \(round): a half-applied release")
            XCTAssertEqual(stack.stagingFiles, [], "round \(round): a staging file remained")
        }
        XCTAssertGreaterThan(landed, 0, "no kill landed in the middle of \(what)")
        print("fault injection: \(rounds) random SIGKILLs of the verifier during \(what): \(landed) in the middle (nothing changed), \(finished) after it")
    }

    private func killAtEachStage(candidate: (stol: String, sqlite: [UInt8]), installsAt target: String) throws {
        let before = stack.stateSnapshot()
        let (file, sqlite) = candidate
        let stages = ["checking-header", "verifying-checksum", "verifying-signature", "decompressing",
                      "checking-database", "sending"].map { "verify:" + $0 }
        var kills = 0
        for stage in stages {
            try armVerifier([stage])
            let directory = try clientDirectory()
            let client = try stack.startClient(["db", "import", file], directory: directory)
            guard let pid = pausedPID(stage) else {
                XCTFail("\(stage): the verifier never paused there; \(output(directory, "err"))")
                kill(client.pid, SIGKILL)
                continue
            }
            XCTAssertEqual(kill(pid, SIGKILL), 0, stage)
            kills += 1
            let status = client.wait(timeoutSeconds: 30)
            XCTAssertEqual(status, 1, "\(stage): \(output(directory, "err"))")
            XCTAssertTrue(output(directory, "err").contains("the verifier failed"), "\(stage): \(output(directory, "err"))")
            XCTAssertEqual(stack.stateSnapshot(), before, "\(stage): the kill changed the state directory")
            XCTAssertEqual(try stack.importStatus()["import_running"] as? Bool, false, stage)
        }
        try armVerifier([])
        let after = try stack.client(["db", "import", file])
        XCTAssertEqual(after.status, 0, after.stderr)
        XCTAssertEqual(fileDigest(target), SHA256.hash(sqlite).hexString)
        print("fault injection: killed the verifier at \(kills) stages (\(stages.joined(separator: ", "))); nothing changed each time")
    }

    func testKillingTheVerifierAtRandomMoments_changesNothingUnlessTheImportHadFinished() throws {
        let rounds = Int(ProcessInfo.processInfo.environment["STOL_FAULT_KILLS"] ?? "") ?? 50
        try stack.startImportStack()
        _ = try installBaseline()
        let files = [try stack.signedDatabase(name: "a", builtAt: "2026-03-01T00:00:00Z", paddingMegabytes: 8),
                     try stack.signedDatabase(name: "b", builtAt: "2026-04-01T00:00:00Z", paddingMegabytes: 8)]
        // How long one import takes here: the random moments spread over it.
        let started = Date()
        XCTAssertEqual(try stack.client(["db", "import", "--allow-downgrade", files[0].stol]).status, 0)
        let span = max(0.05, Date().timeIntervalSince(started))
        var generator = SplitMix64(for: self)  // the kill moments: printed, replayed with STOL_TEST_SEED
        print("fault injection: one import takes \(String(format: "%.2f", span)) s")
        var installed = fileDigest(stack.referencePath)
        let activation = fileDigest(stack.activationPath)
        var landed = 0, finished = 0
        let probe = TaxonomyProbe(socket: stack.socketPath(.taxonomy))
        for round in 0..<rounds {
            let (file, sqlite) = files[round % 2]
            let directory = try clientDirectory()
            let client = try stack.startClient(["db", "import", "--allow-downgrade", file], directory: directory)
            waitUntil(seconds: 10) { !stack.verifierPIDs().isEmpty }
            usleep(UInt32(Double(generator.next() % 1000) / 1000 * span * 1_000_000))
            let victims = stack.verifierPIDs()
            victims.forEach { kill($0, SIGKILL) }
            let status = client.wait(timeoutSeconds: 60)
            if status == 0 {
                finished += 1
                installed = SHA256.hash(sqlite).hexString
            } else {
                landed += 1
                XCTAssertEqual(status, 1, "round \(round): \(output(directory, "err"))")
            }
            XCTAssertEqual(fileDigest(stack.referencePath), installed, "round \(round): reference.sqlite is neither the old nor the new file")
            XCTAssertEqual(fileDigest(stack.activationPath), activation, "round \(round): the activation state changed")
            XCTAssertEqual(stack.stagingFiles, [], "round \(round): a staging file remained")
            if status != 0 && victims.isEmpty {
                XCTFail("round \(round): the import failed without a kill: \(output(directory, "err"))")
            }
        }
        let answers = probe.stop()
        XCTAssertEqual(answers.errors, [], "the taxonomy server answered throughout")
        XCTAssertTrue(answers.kinds.allSatisfy { $0 == .reference }, "the active reference answered throughout")
        XCTAssertGreaterThan(landed, 0, "no kill landed in the middle of an import")
        let last = try stack.client(["db", "import", "--allow-downgrade", files[1].stol])
        XCTAssertEqual(last.status, 0, last.stderr)
        print("fault injection: \(rounds) random SIGKILLs of the verifier: \(landed) in the middle of an import " +
              "(nothing changed), \(finished) after it had finished (the new file installed whole); \(answers.kinds.count) taxonomy answers meanwhile, 0 errors")
    }

    func testKillingImportdBetweenStagingAndRename_andRightAfterTheRename() throws {
        try stack.startImportStack()
        let before = try installBaseline()
        let (file, sqlite) = try stack.signedDatabase(name: "candidate", builtAt: "2026-05-01T00:00:00Z", paddingMegabytes: 1)

        // Staged and fsynced, not renamed.
        try restartImportd(["import:staged"])
        var directory = try clientDirectory()
        var client = try stack.startClient(["db", "import", file], directory: directory)
        XCTAssertNotNil(pausedPID("import:staged"))
        XCTAssertEqual(stack.stagingFiles.count, 1, "the verified database waits in staging")
        XCTAssertEqual(stack.crash(.import), 128 + SIGKILL)
        XCTAssertNotEqual(client.wait(timeoutSeconds: 30), 0)
        XCTAssertEqual(fileDigest(stack.referencePath), before["databases/releases/unknown.sqlite"])
        try restartImportd([])
        XCTAssertEqual(stack.stagingFiles.count, 1, "until a new importd starts")
        XCTAssertEqual(try stack.client(["db", "status"]).status, 0)  // the first connection starts it
        XCTAssertEqual(stack.stagingFiles, [], "the new importd removed the stale staging file")
        XCTAssertEqual(stack.stateSnapshot(), before)

        // Renamed, not answered: the new file is installed whole, the activation state untouched.
        try restartImportd(["import:installed"])
        directory = try clientDirectory()
        client = try stack.startClient(["db", "import", file], directory: directory)
        XCTAssertNotNil(pausedPID("import:installed"))
        XCTAssertEqual(stack.crash(.import), 128 + SIGKILL)
        XCTAssertNotEqual(client.wait(timeoutSeconds: 30), 0)
        try restartImportd([])
        XCTAssertEqual(try stack.client(["db", "status"]).status, 0)
        XCTAssertEqual(fileDigest(stack.referencePath), SHA256.hash(sqlite).hexString)
        XCTAssertEqual(fileDigest(stack.activationPath), before["databases/activation.json"])
        XCTAssertEqual(stack.stagingFiles, [])

        let (next, nextSQLite) = try stack.signedDatabase(name: "next", builtAt: "2026-06-01T00:00:00Z")
        XCTAssertEqual(try stack.client(["db", "import", next]).status, 0)
        XCTAssertEqual(fileDigest(stack.referencePath), SHA256.hash(nextSQLite).hexString)
        print("fault injection: killed stol-importd twice (staged before the rename; right after it)")
    }

    func testClientLeavingMidImport_endsTheVerifier_andChangesNothing() throws {
        try stack.startImportStack()
        let before = try installBaseline()
        let (file, _) = try stack.signedDatabase(name: "candidate", builtAt: "2026-07-01T00:00:00Z", paddingMegabytes: 32)
        var disconnects = 0
        for stage in ["IMPORT_STAGE_DECOMPRESSING", "IMPORT_STAGE_CHECKING_DATABASE"] {
            let directory = try clientDirectory()
            let client = try stack.startClient(["db", "import", "--json", file], directory: directory)
            guard waitUntil(seconds: 60, { output(directory, "out").contains(stage) }) else {
                XCTFail("never saw \(stage): \(output(directory, "out"))")
                continue
            }
            let verifiers = stack.verifierPIDs()
            kill(client.pid, SIGINT)  // Ctrl-C
            XCTAssertEqual(client.wait(timeoutSeconds: 30), 130)
            XCTAssertTrue(output(directory, "err").contains("import cancelled"), output(directory, "err"))
            disconnects += 1
            if verifiers.isEmpty {
                print("fault injection: the import ended before the client left at \(stage)")
            } else {
                XCTAssertTrue(waitUntil { stack.verifierPIDs().isEmpty }, "\(stage): the verifier kept running")
            }
            XCTAssertTrue(waitUntil { (try? stack.importStatus()["import_running"] as? Bool) == false })
            XCTAssertEqual(stack.stateSnapshot(), before, "\(stage): the cancelled import changed the state directory")
        }
        XCTAssertEqual(try stack.client(["db", "import", file]).status, 0)
        print("fault injection: the client left \(disconnects) times mid-import; the verifier ended each time and nothing changed")
    }

    func testFullDisk_inTheStateDirectory_orTheVerifiersTemporaryDirectory_isNoSpace_andChangesNothing() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to mount a small tmpfs")
        let state = stack.stateDirectory
        let tmp = stack.root + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        for (path, size) in [(state, "4m"), (tmp, "3m")] {
            let mounted = try StackHarness.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0755", "stol-test-full", path])
            try XCTSkipUnless(mounted.status == 0, "cannot mount a tmpfs here: \(mounted.stderr)")
            addTeardownBlock { _ = try? StackHarness.run("/bin/umount", ["-l", path]) }
        }
        try stack.startImportStack()
        let before = try installBaseline()
        let (large, _) = try stack.signedDatabase(name: "large", builtAt: "2026-08-01T00:00:00Z", paddingMegabytes: 6)

        // The verifier's temporary directory (3 MiB) cannot hold the database.
        var result = try stack.client(["db", "import", "--json", large])
        XCTAssertEqual(StackHarness.errorCode(result), "NO_SPACE", result.stdout + result.stderr)
        XCTAssertEqual(stack.stateSnapshot(), before)

        // With room for the verifier, the state directory (4 MiB) cannot hold the staging file.
        _ = try StackHarness.run("/bin/umount", ["-l", tmp])
        result = try stack.client(["db", "import", "--json", large])
        XCTAssertEqual(StackHarness.errorCode(result), "NO_SPACE", result.stdout + result.stderr)
        XCTAssertEqual(stack.stateSnapshot(), before)
        XCTAssertEqual(stack.stagingFiles, [])

        let (small, smallSQLite) = try stack.signedDatabase(name: "small", builtAt: "2026-09-01T00:00:00Z")
        XCTAssertEqual(try stack.client(["db", "import", small]).status, 0, "the next import that fits succeeds")
        XCTAssertEqual(fileDigest(stack.referencePath), SHA256.hash(smallSQLite).hexString)
        print("fault injection: a full disk twice (the verifier's temporary file; the staging file): NO_SPACE, nothing changed")
    }
}

