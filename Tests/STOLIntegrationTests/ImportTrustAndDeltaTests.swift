import Foundation
import GRDB
import Glibc
import STOLContainer
import STOLFileSystem
import STOLFormat
import STOLTestFixtures
import XCTest

/// Issue 22 through the real client, `stol-importd` and fresh sandboxed verifiers:
/// a key rotation carried out as an operator would (key files and a revocation list
/// changed between imports, no restart), and deltas between releases — applied,
/// applied twice, against another base, and damaged — each refusal leaving the
/// state directory byte for byte.
final class ImportTrustAndDeltaTests: XCTestCase {
    var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
    }

    override func tearDown() {
        stack = nil
    }

    private func importing(_ bytes: [UInt8], name: String) throws -> StackHarness.Result {
        let file = try stack.writeFile(bytes, name: name + ".stol")
        defer { unlink(file) }
        return try stack.client(["db", "import", "--json", file])
    }

    /// A database of the harness with `release` in its provenance.
    private func database(release: String, builtAt: String = "2026-03-01T00:00:00Z",
                          edit: ((Database) throws -> Void)? = nil) throws -> [UInt8] {
        try stack.signedDatabase(name: "db-\(release)-\(builtAt.prefix(10))", builtAt: builtAt, release: release, edit: edit).sqlite
    }

    // MARK: Rotation

    func testAKeyRotation_bothKeysImportDuringTheOverlap_thenTheOldOneIsRefused_andNothingChanges() throws {
        let old = Ed25519.PrivateKey.generate(), new = Ed25519.PrivateKey.generate()
        let keys = stack.root + "/etc-stol-keys"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try SigningKeyFile.writePublicKey(old.publicKey, to: keys + "/release-2026.pub", overwrite: false)
        try FileManager.default.createDirectory(atPath: stack.root + "/tmp", withIntermediateDirectories: true)
        stack.environment["STOL_TRUSTED_KEY"] = keys
        stack.environment["TMPDIR"] = stack.root + "/tmp"
        // Version 1 files too, as an operator may allow them (the default refuses them).
        stack.environment["STOL_ALLOW_FORMAT_1"] = "yes"
        try stack.start(.taxonomy)
        try stack.start(.import)
        try stack.start(.verify)

        func release(_ name: String) throws -> [UInt8] { try database(release: name) }
        XCTAssertEqual(try importing(StolCorpus.sign(try release("2026.1.1"), key: old), name: "a").status, 0)
        // The new key is not trusted yet: refused, naming it.
        var before = stack.stateSnapshot()
        let early = try importing(StolCorpus.sign(try release("2026.2.1"), key: new), name: "b")
        XCTAssertEqual(StackHarness.errorCode(early), "UNKNOWN_KEY", early.stdout)
        XCTAssertTrue(early.stderr.contains(new.publicKey.keyID.description) && early.stderr.contains(old.publicKey.keyID.description),
                      "the error names the key found and the key trusted: \(early.stderr)")
        XCTAssertEqual(stack.stateSnapshot(), before)
        // Overlap: the operator installs the new key beside the old one, which gets a not-after. No restart.
        try SigningKeyFile.writePublicKey(new.publicKey, to: keys + "/release-2027.pub", overwrite: false)
        try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(old.publicKey, notAfter: "2099-12-31"),
                                              to: keys + "/release-2026.pub", overwrite: true)
        XCTAssertEqual(try importing(StolCorpus.sign(try release("2026.2.1"), key: new), name: "c").status, 0)
        XCTAssertEqual(try importing(StolCorpus.sign(try release("2026.3.1"), key: old), name: "d").status, 0)
        XCTAssertEqual(try importing(StolCorpus.signVersion1(try release("2026.4.1"), key: old), name: "e").status, 0,
                       "version 1 files import while the key that signed them is trusted")
        // The end of the overlap: the old id on the revocation list, its file still there.
        try Data("# rotated 2027\n\(old.publicKey.keyID)\n".utf8).write(to: URL(fileURLWithPath: keys + "/revoked"))
        before = stack.stateSnapshot()
        for (name, file) in [("v2", StolCorpus.sign(try release("2026.5.1"), key: old)),
                             ("v1", StolCorpus.signVersion1(try release("2026.5.1"), key: old))] {
            let refused = try importing(file, name: "f-\(name)")
            XCTAssertEqual(StackHarness.errorCode(refused), "KEY_REVOKED", "\(name): \(refused.stdout)")
            XCTAssertEqual(refused.status, 7)
            XCTAssertEqual(stack.stateSnapshot(), before, name)
        }
        XCTAssertEqual(try importing(StolCorpus.sign(try release("2026.5.1"), key: new), name: "g").status, 0)
        // An expired key (its not-after in the past), once the list no longer names it.
        unlink(keys + "/revoked")
        try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(old.publicKey, notAfter: "2020-01-01"),
                                              to: keys + "/release-2026.pub", overwrite: true)
        before = stack.stateSnapshot()
        let expired = try importing(StolCorpus.sign(try release("2026.6.1"), key: old), name: "h")
        XCTAssertEqual(StackHarness.errorCode(expired), "KEY_EXPIRED", expired.stdout)
        XCTAssertEqual(stack.stateSnapshot(), before)
        let status = try stack.importStatus()
        XCTAssertEqual(status["releases"] as? [String], ["2026.1.1", "2026.2.1", "2026.3.1", "2026.4.1", "2026.5.1"])
    }

    /// Format version 1 signs no content the coordinator can check: the stack as installed
    /// refuses a correctly signed one before any verifier runs (exit 7), and `db status`
    /// says so. A copy of the trusted key under another name with a past `not-after` is
    /// listed by `db status`, and the more restrictive copy decides: the key is expired.
    func testAVersion1File_isRefusedByDefault_andDbStatusNamesTrustProblems() throws {
        try stack.startImportStack()
        let key = StackHarness.signingKey
        XCTAssertEqual(try importing(StolCorpus.sign(try database(release: "2026.7.1"), key: key), name: "a").status, 0)
        let before = stack.stateSnapshot()
        let refused = try importing(StolCorpus.signVersion1(try database(release: "2026.7.2"), key: key), name: "v1")
        XCTAssertEqual(StackHarness.errorCode(refused), "FORMAT_VERSION_NOT_ALLOWED", refused.stderr)
        XCTAssertEqual(refused.status, 7)
        XCTAssertEqual(stack.stateSnapshot(), before)
        var status = try stack.importStatus()
        XCTAssertEqual(status["format_version_1_allowed"] as? Bool, false)
        XCTAssertEqual(status["trust_problems"] as? [String], [])

        try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(key.publicKey, notAfter: "2020-01-01"),
                                              to: stack.keysDirectory + "/zz-copy.pub", overwrite: false)
        status = try stack.importStatus()
        let problems = status["trust_problems"] as? [String] ?? []
        XCTAssertEqual(problems.count, 1, problems.description)
        XCTAssertTrue(problems.first?.contains("zz-copy.pub") == true && problems.first?.contains(key.publicKey.keyID.description) == true,
                      problems.description)
        let text = try stack.client(["db", "status"])
        XCTAssertTrue(text.stdout.contains("format version 1:   refused"), text.stdout)
        XCTAssertTrue(text.stdout.contains("trusted keys:       1 problem"), text.stdout)
        let overall = try stack.client(["status"])
        XCTAssertEqual(overall.status, 0, overall.stderr)
        XCTAssertTrue(overall.stdout.contains("trusted keys:     1 problem (stol-client db status lists them)"), overall.stdout)
        let expired = try importing(StolCorpus.sign(try database(release: "2026.7.3"), key: key), name: "b")
        XCTAssertEqual(StackHarness.errorCode(expired), "KEY_EXPIRED", "the copy with the past not-after decides: \(expired.stderr)")
        XCTAssertEqual(stack.stateSnapshot(), before)
    }

    // MARK: Deltas

    /// The import stack with release 2023.11.4 installed as a delta's base, and the database
    /// of 2024.9.7 a delta turns it into (every `every`th taxon renamed).
    private func installedBase(renamingEvery every: Int) throws -> (base: [UInt8], next: [UInt8]) {
        try stack.startImportStack()
        let base = try database(release: "2023.11.4", builtAt: "2026-01-01T00:00:00Z")
        let next = try database(release: "2024.9.7", builtAt: "2026-02-01T00:00:00Z") { db in
            try db.execute(sql: "UPDATE taxa SET scientific_name = scientific_name || ' x' WHERE id % \(every) = 0")
        }
        XCTAssertEqual(try importing(StolCorpus.sign(base, key: StackHarness.signingKey), name: "base").status, 0)
        return (base, next)
    }

    func testADelta_installsTheNewRelease_twiceChangesNothing_andAnotherBaseIsRefused() throws {
        let (base, next) = try installedBase(renamingEvery: 7)
        let delta = try StolCorpus.signDelta(base: base, to: next, key: StackHarness.signingKey)
        XCTAssertLessThan(delta.count, StolCorpus.sign(next, key: StackHarness.signingKey).count)

        let applied = try importing(delta, name: "delta")
        XCTAssertEqual(applied.status, 0, applied.stderr)
        let last = try XCTUnwrap(applied.stdout.split(separator: "\n").last)
        let imported = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])?["imported"] as? [String: Any])
        XCTAssertEqual(imported["release"] as? String, "2024.9.7")
        XCTAssertEqual(imported["already_installed"] as? Bool, false)
        XCTAssertEqual(imported["key_id"] as? String, StackHarness.signingKey.publicKey.keyID.description)
        try assertInstalledByteForByte(delta, next: next, base: base)

        // Against another build of the base release, and against a release not installed.
        let otherBase = try database(release: "2023.11.4", builtAt: "2026-01-02T00:00:00Z")
        let next2 = try database(release: "2025.1.1", builtAt: "2026-04-01T00:00:00Z")
        let before = stack.stateSnapshot()
        for (name, file) in [("another build of the base", try StolCorpus.signDelta(base: otherBase, to: next2, key: StackHarness.signingKey)),
                             ("a base not installed", try StolCorpus.signDelta(base: try database(release: "2022.1.1"), to: next2,
                                                                                key: StackHarness.signingKey))] {
            let refused = try importing(file, name: "other")
            XCTAssertEqual(StackHarness.errorCode(refused), "DELTA_BASE_MISMATCH", "\(name): \(refused.stdout)")
            XCTAssertEqual(refused.status, 7, name)
            XCTAssertEqual(stack.stateSnapshot(), before, name)
        }
    }

    /// An install records the release's SHA-256 beside it (digest and file fingerprint),
    /// and the coordinator checks a delta's base by that record instead of reading the
    /// base again: the verifier's own check of the base is then the one hash of it. A
    /// base changed in place behind an unchanged fingerprint (size and mtime put back)
    /// passes the coordinator by its record and is still refused, by the verifier; one
    /// whose fingerprint changed is hashed and refused by the coordinator itself.
    func testAnInstall_recordsTheReleasesSHA256_andADeltaChecksItsBaseByTheRecordOnce() throws {
        let (base, next) = try installedBase(renamingEvery: 5)
        let installed = stack.stateDirectory + "/databases/releases/2023.11.4.sqlite"
        let recordPath = stack.stateDirectory + "/databases/releases/.2023.11.4.sha256"
        let record = try String(contentsOfFile: recordPath, encoding: .utf8).split(separator: " ")
        let file = try XCTUnwrap(FileStat(path: installed))
        XCTAssertEqual(record.first.map(String.init), SHA256.hash(base).hexString)
        XCTAssertEqual(record.last?.trimmingCharacters(in: .whitespacesAndNewlines), file.fingerprint)

        // One byte of the base changed in place, its size and mtime put back: the record
        // still names this file, so the coordinator hands it over unread; the verifier's
        // hash of the base refuses it.
        let delta = try StolCorpus.signDelta(base: base, to: next, key: StackHarness.signingKey)
        var info = stat()
        XCTAssertEqual(stat(installed, &info), 0)
        let fd = open(installed, O_WRONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var byte: UInt8 = base[base.count - 1] ^ 0x01
        XCTAssertEqual(pwrite(fd, &byte, 1, off_t(base.count - 1)), 1)
        var times = [info.st_atim, info.st_mtim]
        XCTAssertEqual(futimens(fd, &times), 0)
        close(fd)
        XCTAssertEqual(FileStat(path: installed)?.fingerprint, file.fingerprint)
        let before = stack.stateSnapshot()
        let byVerifier = try importing(delta, name: "delta-1")
        XCTAssertEqual(StackHarness.errorCode(byVerifier), "DELTA_BASE_MISMATCH", byVerifier.stdout)
        XCTAssertTrue(byVerifier.stderr.contains("the base given has SHA-256"),
                      "refused by the verifier's check, the coordinator having trusted the record: \(byVerifier.stderr)")
        XCTAssertEqual(stack.stateSnapshot(), before)

        // The same change with a new mtime: the record is not this file's any more, and the
        // coordinator hashes the base and refuses it itself, naming the installed digest.
        let fd2 = open(installed, O_WRONLY)
        XCTAssertEqual(pwrite(fd2, &byte, 1, off_t(base.count - 1)), 1)
        close(fd2)
        XCTAssertNotEqual(FileStat(path: installed)?.fingerprint, file.fingerprint)
        let byCoordinator = try importing(delta, name: "delta-2")
        XCTAssertEqual(StackHarness.errorCode(byCoordinator), "DELTA_BASE_MISMATCH", byCoordinator.stdout)
        XCTAssertFalse(byCoordinator.stderr.contains("the base given has SHA-256"), byCoordinator.stderr)
        let changed = SHA256.hash(try Array(Data(contentsOf: URL(fileURLWithPath: installed)))).hexString
        XCTAssertTrue(byCoordinator.stderr.contains(String(changed.prefix(16))),
                      "the coordinator's refusal names the digest it computed, \(changed): \(byCoordinator.stderr)")

        // Deleting the release removes its record with it.
        XCTAssertEqual(try stack.client(["db", "delete", "--yes", "2023.11.4"]).status, 0)
        XCTAssertNil(FileStat(path: recordPath))
    }

    /// A row delta (kind 3, STOL-FORMAT.md §10.2) through the real client, coordinator and
    /// sandboxed verifier: the base's rows changed (renamed, deleted and added taxa) and laid
    /// out again are the new release byte for byte, applied twice it changes nothing; one
    /// whose rows were taken against another build of the base release, one whose frame is
    /// damaged and one whose new database was not laid out as the pipeline lays one out are
    /// each refused with their typed error, the state directory unchanged.
    func testARowDelta_installsTheNewReleaseByteForByte_andOnesThatCannotYieldItAreRefused() throws {
        try stack.startImportStack()
        let key = StackHarness.signingKey
        let base = try StolCorpus.laidOut(try database(release: "2023.11.4", builtAt: "2026-01-01T00:00:00Z"))
        func nextRelease(_ db: Database) throws {
            try db.execute(sql: "UPDATE taxa SET scientific_name = scientific_name || ' x' WHERE id % 7 = 0")
            try db.execute(sql: "DELETE FROM taxa WHERE id % 101 = 3 AND id NOT IN (SELECT parent_id FROM taxa WHERE parent_id IS NOT NULL)")
            try db.execute(sql: """
                INSERT INTO taxa (id, parent_id, rank, main_rank, main_parent_id, scientific_name, status)
                SELECT id + 90000000, parent_id, rank, main_rank, main_parent_id, scientific_name || ' nova', status
                FROM taxa WHERE id % 53 = 0 AND main_rank = 'species'
                """)
        }
        let unlaid = try database(release: "2024.9.7", builtAt: "2026-02-01T00:00:00Z", edit: nextRelease)
        let next = try StolCorpus.laidOut(unlaid)
        XCTAssertEqual(try importing(StolCorpus.sign(base, key: key), name: "base").status, 0)
        let delta = try StolCorpus.signRowDelta(base: base, to: next, key: key)
        XCTAssertEqual(delta[12], StolHeader.Kind.rowDelta.rawValue)

        // Refused first, each leaving the state as it was.
        let otherBuild = try StolCorpus.laidOut(try database(release: "2023.11.4", builtAt: "2026-01-02T00:00:00Z") { db in
            try db.execute(sql: "DELETE FROM taxa WHERE id % 5 = 0 AND id NOT IN (SELECT parent_id FROM taxa WHERE parent_id IS NOT NULL)")
        })
        let payload = Array(delta.dropFirst(StolHeader.version2Size))
        var damaged = payload
        damaged[payload.count / 2] ^= 0xff
        var header = try StolHeader(parsing: Array(delta.prefix(StolHeader.version2Size)))
        header.payloadSHA256 = SHA256.hash(damaged)
        header.signature = key.sign(header.signedMessage)
        let cases: [(String, [UInt8], String)] = [
            ("rows taken against another build of the base release (taxa it lacks are inserted, the base has them)",
             try StolCorpus.signRowDelta(base: base, to: next, key: key, rowsBase: otherBuild), "DATABASE_CORRUPT"),
            ("a byte of the frame changed, re-signed", header.serialized() + damaged, "DATABASE_CORRUPT"),
            ("a new database the pipeline did not lay out", try StolCorpus.signRowDelta(base: base, to: unlaid, key: key),
             "CONTENT_HASH_MISMATCH"),
        ]
        try assertEachIsRefused(cases)

        let applied = try importing(delta, name: "rows")
        XCTAssertEqual(applied.status, 0, applied.stderr)
        try assertInstalledByteForByte(delta, next: next, base: base)
    }

    /// After `delta` was imported: release 2024.9.7 is `next` byte for byte beside the base
    /// 2023.11.4, unchanged; imported again, it says "already installed" and changes nothing.
    private func assertInstalledByteForByte(_ delta: [UInt8], next: [UInt8], base: [UInt8]) throws {
        XCTAssertEqual(fileDigest(stack.stateDirectory + "/databases/releases/2024.9.7.sqlite"), SHA256.hash(next).hexString,
                       "the delta applied to the installed base is the new release byte for byte")
        XCTAssertEqual(fileDigest(stack.stateDirectory + "/databases/releases/2023.11.4.sqlite"), SHA256.hash(base).hexString)
        let before = stack.stateSnapshot()
        let again = try stack.client(["db", "import", try stack.writeFile(delta, name: "again.stol")])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stdout.contains("already installed"), again.stdout)
        XCTAssertEqual(stack.stateSnapshot(), before)
    }

    /// Imports each (name, file, code) through the real client: each ends with its typed
    /// error (exit 7) and leaves the state directory and the staging area as they were.
    private func assertEachIsRefused(_ cases: [(String, [UInt8], String)]) throws {
        let before = stack.stateSnapshot()
        for (name, file, code) in cases {
            let refused = try importing(file, name: "bad")
            XCTAssertEqual(StackHarness.errorCode(refused), code, "\(name): \(refused.stdout) \(refused.stderr)")
            XCTAssertEqual(refused.status, 7, name)
            XCTAssertEqual(stack.stateSnapshot(), before, "\(name) changed the state directory")
        }
        XCTAssertEqual(stack.stagingFiles, [])
    }

    /// Damaged deltas, each with its typed error and the state directory unchanged
    /// (the whole-file bad corpus is `ImportBadFileTests`; these are the delta kinds).
    func testEveryBadDelta_endsWithItsTypedError_andChangesNothing() throws {
        try stack.startImportStack()
        let base = try database(release: "2023.11.4", builtAt: "2026-01-01T00:00:00Z")
        let next = try database(release: "2024.9.7", builtAt: "2026-02-01T00:00:00Z")
        XCTAssertEqual(try importing(StolCorpus.sign(base, key: StackHarness.signingKey), name: "base").status, 0)
        let key = StackHarness.signingKey
        let valid = try StolCorpus.signDelta(base: base, to: next, key: key)
        let payload = Array(valid.dropFirst(StolHeader.version2Size))
        func resigned(_ payload: [UInt8]) throws -> [UInt8] {
            var header = try StolHeader(parsing: Array(valid.prefix(StolHeader.version2Size)))
            header.payloadSHA256 = SHA256.hash(payload)
            header.signature = key.sign(header.signedMessage)
            return header.serialized() + payload
        }
        var corruptBlock = payload
        corruptBlock[payload.count / 2] ^= 0xff
        let cases: [(String, [UInt8], String)] = [
            ("truncated delta", Array(valid.dropLast(100)), "CHECKSUM_MISMATCH"),
            ("truncated delta, re-signed", try resigned(Array(payload.dropLast(100))), "DATABASE_CORRUPT"),
            ("a byte of the frame changed, re-signed", try resigned(corruptBlock), "DATABASE_CORRUPT"),
            ("trailing bytes after the frame, re-signed", try resigned(payload + [0, 0, 0, 0]), "DATABASE_CORRUPT"),
            ("a gzip member instead of a zstd frame, re-signed", try resigned(Gzip.compress(next)), "DATABASE_CORRUPT"),
            ("signed content digest of the base", try StolCorpus.signDelta(base: base, to: next, key: key) { $0.contentSHA256 = SHA256.hash(base) },
             "CONTENT_HASH_MISMATCH"),
            ("signed by a key trusted nowhere", try StolCorpus.signDelta(base: base, to: next, key: CorpusKeys.untrusted), "UNKNOWN_KEY"),
            ("signed by a revoked key", try StolCorpus.signDelta(base: base, to: next, key: CorpusKeys.revokedAbsent), "KEY_REVOKED"),
            ("a delta without a base release", try StolCorpus.signDelta(base: base, to: next, key: key) {
                $0.baseReleaseField = [UInt8](repeating: 0, count: 32) }, "DATABASE_CORRUPT"),
            ("the base digest of another database", try StolCorpus.signDelta(base: base, to: next, key: key) { $0.baseSHA256 = SHA256.hash(next) },
             "DELTA_BASE_MISMATCH"),
        ]
        try assertEachIsRefused(cases)
        XCTAssertEqual(try importing(valid, name: "valid").status, 0, "the undamaged delta still applies")
        print("bad deltas: \(cases.count) refused through the real client and daemons; state unchanged")
    }
}

