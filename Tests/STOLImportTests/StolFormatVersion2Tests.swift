import Foundation
import Glibc
import STOLContainer
import STOLFormat
import STOLTestFixtures
import XCTest

/// Format version 2 (`protocol/STOL-FORMAT.md` §1.1, §6, §7, §10) against the vectors
/// the independent Python implementation wrote (`protocol/vectors/stol/v2/`), and the
/// behaviours the vectors cannot show: every header byte tampered, keys rotating,
/// the writer and the delta writer round-tripping through the verifier.
final class StolFormatVersion2Tests: XCTestCase {
    static let directory = StolVectors.directory + "/v2"

    private func manifest(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.directory + "/" + name))
        return try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: Self.directory + "/" + name)))
    }

    private func seed(_ number: Int) -> Ed25519.PrivateKey {
        Ed25519.PrivateKey(seed: Array("STOL-TEST-KEY-DO-NOT-USE-000000\(number)".utf8))!
    }

    // MARK: The vectors

    func testEveryVersion2VectorGivesItsDocumentedResult() throws {
        let manifest = try manifest("vectors.json")
        let now = try XCTUnwrap(PublicKeyFile.parseDate(try XCTUnwrap(manifest["now"] as? String)))
        let trust = TrustedKeys.load(locations: try XCTUnwrap(manifest["trust"] as? [String]).map { Self.directory + "/" + $0 })
        XCTAssertEqual(trust.problems, [])
        let defaults = try XCTUnwrap(manifest["defaults"] as? [String: Any])
        let vectors = try XCTUnwrap(manifest["vectors"] as? [[String: Any]])
        XCTAssertGreaterThanOrEqual(vectors.count, 60)
        var codes = Set<String>()
        for vector in vectors {
            let name = try XCTUnwrap(vector["name"] as? String)
            let file = hexBytes(try String(contentsOfFile: Self.directory + "/" + (vector["file"] as! String), encoding: .utf8))
            let maxVersion = (vector["max_schema_version"] ?? defaults["max_schema_version"]) as? Int ?? 3
            let maxOut = (vector["max_decompressed_bytes"] ?? defaults["max_decompressed_bytes"]) as? Int ?? 0
            let options = StolFile.VerifyOptions(supportedSchemaVersions: 1...UInt32(maxVersion), maximumDecompressedBytes: UInt64(maxOut))
            let delta = try DeltaWorkspace.temporary(basePath: (vector["base_file"] as? String).map { Self.directory + "/" + $0 })
            let expected = try XCTUnwrap(vector["expect"] as? String)
            do {
                let verified = try StolFile.verify(bytes: file, trust: trust, now: now, options: options, delta: delta)
                XCTAssertEqual("OK", expected, name)
                if let digest = vector["content_sha256"] as? String {
                    XCTAssertEqual(verified.sqliteSHA256.hexString, digest, name)
                }
            } catch {
                XCTAssertEqual(error.code.rawValue, expected, "\(name): \(error)")
                if let keyID = vector["key_id"] as? String, error.code != .signatureInvalid {
                    XCTAssertEqual(error.details["key_id"], keyID, name)
                }
            }
            codes.insert(expected)
        }
        // Every error of the version 2 checks is met by at least one vector.
        for code in ["UNKNOWN_KEY", "KEY_EXPIRED", "KEY_REVOKED", "CONTENT_HASH_MISMATCH", "DELTA_BASE_MISMATCH",
                     "DATABASE_CORRUPT", "SIGNATURE_INVALID", "CHECKSUM_MISMATCH", "NOT_A_STOL_FILE", "FILE_TOO_SMALL",
                     "DECOMPRESSION_LIMIT", "INCOMPATIBLE_SCHEMA", "OK"] {
            XCTAssertTrue(codes.contains(code), code)
        }
    }

    /// The independent implementation agrees with its own vectors (it needs the zstd CLI
    /// for the deltas: `make deps` installs it).
    func testThePythonReferenceChecksEveryVersion2Vector() throws {
        try requireExecutable("/usr/bin/zstd", debianPackage: "zstd")
        let result = try StolVectors.python([StolVectors.reference, "check-v2", Self.directory])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertFalse(result.stdout.contains("FAIL"), result.stdout)
    }

    func testEveryKeyFileVectorParsesAsDocumented() throws {
        let manifest = try manifest("key-files.json")
        let now = try XCTUnwrap(PublicKeyFile.parseDate(try XCTUnwrap(manifest["now"] as? String)))
        for entry in try XCTUnwrap(manifest["key_files"] as? [[String: Any]]) {
            let file = try XCTUnwrap(entry["file"] as? String)
            let parsed = try? PublicKeyFile.load(path: Self.directory + "/" + file)
            XCTAssertEqual(parsed != nil, entry["readable"] as? Bool, file)
            guard let parsed else { continue }
            XCTAssertEqual(parsed.key.keyID.description, entry["key_id"] as? String, file)
            let trusted = parsed.notAfter.map { now <= $0 } ?? true
            XCTAssertEqual(trusted, entry["trusted_at_now"] as? Bool, file)
        }
    }

    func testKeyIDs_areTheFirstEightBytesOfTheSHA256OfThePublicKey() throws {
        let keys = try manifest("keys.json")
        XCTAssertFalse(keys.isEmpty)
        XCTAssertEqual(seed(1).publicKey.keyID.description, "ef71aa0204f3c6ec")
        XCTAssertEqual(seed(2).publicKey.keyID.description, "cbf8465f4b099d6e")
        XCTAssertEqual(KeyID(hex: "EF71AA0204F3C6EC"), seed(1).publicKey.keyID)
        XCTAssertNil(KeyID(hex: "ef71aa0204f3c6e"))
        XCTAssertNil(KeyID(hex: "ef71aa0204f3c6eg"))
    }

    // MARK: Tampering

    /// Every byte of a version 2 header, changed: the error names the right check.
    func testEveryHeaderByteChangeIsRefusedWithTheRightError() throws {
        let key = seed(1)
        let body = Array("a body that is not a database, signed as one\n".utf8)
        let content = StolHeader.Content(schemaVersion: 3, size: UInt64(body.count), sha256: SHA256.hash(body),
                                          release: "2024.9.7", idNamespace: "ncbi-taxid")
        let valid = StolFile.assemble(payload: Gzip.compress(body), content: content, signingKey: key)
        let trust = TrustedKeys.trusting(key.publicKey)
        let options = StolFile.VerifyOptions(supportedSchemaVersions: 1...3)
        XCTAssertNoThrow(try StolFile.verify(bytes: valid, trust: trust, options: options))
        for offset in 0..<StolHeader.version2Size {
            let expected: StolFormatError.Code = switch offset {
            case 0..<8: .notAStolFile
            case 16..<24: .unknownKey           // another id: no such key
            case 32..<64: .checksumMismatch     // the payload digest
            default: .signatureInvalid          // every other field is signed
            }
            var bytes = valid
            bytes[offset] ^= 0x01
            XCTAssertThrowsError(try StolFile.verify(bytes: bytes, trust: trust, options: options), "offset \(offset)") { error in
                XCTAssertEqual((error as? StolFormatError)?.code, expected, "offset \(offset)")
            }
        }
    }

    // MARK: Keys

    /// A rotation as an operator does it: old and new key trusted side by side, the old
    /// one given a not-after, then revoked; files of each key at each step.
    func testARotation_bothKeysDuringTheOverlap_thenTheOldOneExpiresAndIsRevoked() throws {
        let old = seed(1), new = seed(2)
        let body = Array("rotation\n".utf8)
        func file(_ key: Ed25519.PrivateKey) -> [UInt8] {
            StolFile.assemble(payload: Gzip.compress(body), content: .init(schemaVersion: 1, size: UInt64(body.count),
                              sha256: SHA256.hash(body), release: "r1", idNamespace: "ncbi-taxid"), signingKey: key)
        }
        let version1 = StolFile.assemble(payload: Gzip.compress(body), schemaVersion: 1, signingKey: old)
        let directory = try makeTemporaryDirectory(self, prefix: "stolrot")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func result(_ bytes: [UInt8], now: Int64 = PublicKeyFile.parseDate("2027-01-01")!) -> String {
            do {
                _ = try StolFile.verify(bytes: bytes, trust: TrustedKeys.load(locations: [directory]), now: now)
                return "OK"
            } catch { return error.code.rawValue }
        }
        try SigningKeyFile.writePublicKey(old.publicKey, to: directory + "/release-2026.pub", overwrite: false)
        XCTAssertEqual(result(file(old)), "OK")
        XCTAssertEqual(result(file(new)), "UNKNOWN_KEY")
        // Overlap: the new key joins, the old one is given an end.
        try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(old.publicKey, notAfter: "2027-06-30"),
                                              to: directory + "/release-2026.pub", overwrite: true)
        try SigningKeyFile.writePublicKey(new.publicKey, to: directory + "/release-2027.pub", overwrite: false)
        XCTAssertEqual(result(file(old)), "OK")
        XCTAssertEqual(result(file(new)), "OK")
        XCTAssertEqual(result(version1), "OK", "version 1 files import while a key that signed them is trusted")
        // After the old key's not-after.
        let july = PublicKeyFile.parseDate("2027-07-01")!
        XCTAssertEqual(result(file(old), now: july), "KEY_EXPIRED")
        XCTAssertEqual(result(version1, now: july), "KEY_EXPIRED")
        XCTAssertEqual(result(file(new), now: july), "OK")
        // Revoked (the list wins even while the file is still there).
        try Data("\(old.publicKey.keyID)\n".utf8).write(to: URL(fileURLWithPath: directory + "/revoked"))
        XCTAssertEqual(result(file(old)), "KEY_REVOKED")
        XCTAssertEqual(result(version1), "KEY_REVOKED")
        XCTAssertEqual(result(file(new)), "OK")
    }

    func testTheOperatorsDirectoryOverridesThePackagesForTheSameKey() throws {
        let key = seed(1)
        let root = try makeTemporaryDirectory(self, prefix: "stolkeys")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/usr", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        try SigningKeyFile.writePublicKey(key.publicKey, to: root + "/usr/release.pub", overwrite: false)
        try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(key.publicKey, notAfter: "2020-01-01"),
                                              to: root + "/etc/release.pub", overwrite: false)
        let keys = TrustedKeys.load(locations: [root + "/usr", root + "/etc"])
        XCTAssertEqual(keys.entries[key.publicKey.keyID]?.notAfter, PublicKeyFile.parseDate("2020-01-01"))
        XCTAssertThrowsError(try keys.key(for: key.publicKey.keyID, now: TrustedKeys.currentTime())) {
            XCTAssertEqual(($0 as? StolFormatError)?.code, .keyExpired)
        }
    }

    /// Two files of one directory holding one key: the more restrictive copy wins whatever
    /// the names (an expired `a.pub` is not overridden by a valid `z.pub`, nor the other way
    /// round), and the problem is reported.
    func testOneKeyInTwoFilesOfADirectory_theMoreRestrictiveWins_andIsReported() throws {
        let key = seed(1)
        for (expiredName, validName) in [("a.pub", "z.pub"), ("z.pub", "a.pub")] {
            let root = try makeTemporaryDirectory(self, prefix: "stoldup")
            defer { try? FileManager.default.removeItem(atPath: root) }
            try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(key.publicKey, notAfter: "2020-01-01"),
                                                  to: root + "/" + expiredName, overwrite: false)
            try SigningKeyFile.writePublicKey(key.publicKey, to: root + "/" + validName, overwrite: false)
            let keys = TrustedKeys.load(locations: [root])
            XCTAssertEqual(keys.entries[key.publicKey.keyID]?.notAfter, PublicKeyFile.parseDate("2020-01-01"), expiredName)
            XCTAssertThrowsError(try keys.key(for: key.publicKey.keyID, now: TrustedKeys.currentTime())) {
                XCTAssertEqual(($0 as? StolFormatError)?.code, .keyExpired, expiredName)
            }
            XCTAssertEqual(keys.problems.count, 1, expiredName)
            XCTAssertTrue(keys.problems.first?.contains(key.publicKey.keyID.description) == true, keys.problems.description)
        }
    }

    /// A `revoked` list named directly (STOL_TRUSTED_KEY=dir/key.pub:dir/revoked, or
    /// `--public-key revoked`) revokes: it is not a bad key file to skip.
    func testARevocationListNamedDirectly_revokes() throws {
        let root = try makeTemporaryDirectory(self, prefix: "stolrevd")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let key = seed(1)
        try SigningKeyFile.writePublicKey(key.publicKey, to: root + "/release.pub", overwrite: false)
        try Data("# retired\n\(key.publicKey.keyID)\n".utf8).write(to: URL(fileURLWithPath: root + "/revoked"))
        let keys = TrustedKeys.load(locations: [root + "/release.pub", root + "/revoked"])
        XCTAssertEqual(keys.problems, [])
        XCTAssertTrue(keys.revoked.contains(key.publicKey.keyID))
        XCTAssertThrowsError(try keys.key(for: key.publicKey.keyID, now: TrustedKeys.currentTime())) {
            XCTAssertEqual(($0 as? StolFormatError)?.code, .keyRevoked)
        }
        try Data("not an id\n".utf8).write(to: URL(fileURLWithPath: root + "/revoked"))
        XCTAssertEqual(TrustedKeys.load(locations: [root + "/release.pub", root + "/revoked"]).revocationProblems.count, 1,
                       "a malformed list named directly trusts nothing, as one in a directory")
    }

    func testAMalformedRevocationListIsReported_notSilentlyIgnored() throws {
        let root = try makeTemporaryDirectory(self, prefix: "stolrev")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try SigningKeyFile.writePublicKey(seed(1).publicKey, to: root + "/release.pub", overwrite: false)
        try Data("ef71aa0204f3c6ec\nnot-an-id\n".utf8).write(to: URL(fileURLWithPath: root + "/revoked"))
        let keys = TrustedKeys.load(locations: [root])
        XCTAssertEqual(keys.revocationProblems.count, 1)
        XCTAssertTrue(keys.revoked.contains(seed(1).publicKey.keyID))
    }

    func testSignatureErrorsNameTheKeyFoundAndTheKeysTrusted() throws {
        let body = Array("x".utf8)
        let file = StolFile.assemble(payload: Gzip.compress(body), content: .init(schemaVersion: 1, size: 1, sha256: SHA256.hash(body),
                                     release: "r", idNamespace: "n"), signingKey: seed(6))
        XCTAssertThrowsError(try StolFile.verify(bytes: file, trust: .trusting(seed(1).publicKey))) { error in
            let error = error as! StolFormatError
            XCTAssertEqual(error.code, .unknownKey)
            XCTAssertEqual(error.details["key_id"], seed(6).publicKey.keyID.description)
            XCTAssertEqual(error.details["trusted_key_ids"], "ef71aa0204f3c6ec")
            XCTAssertTrue(error.message.contains(seed(6).publicKey.keyID.description) && error.message.contains("ef71aa0204f3c6ec"))
        }
    }

    // MARK: Writing

    func testTheWriterAndTheDeltaWriterRoundTripThroughTheVerifier() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolw2")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = seed(1)
        var random = SplitMix64(for: self)
        let base = (0..<200_000).map { _ in UInt8.random(in: 0...15, using: &random) }
        var target = base
        target.replaceSubrange(1000..<1100, with: [UInt8](repeating: 7, count: 300))
        target.removeSubrange(150_000..<150_500)
        try Data(base).write(to: URL(fileURLWithPath: directory + "/base.bin"))
        try Data(target).write(to: URL(fileURLWithPath: directory + "/target.bin"))
        let labels = StolFile.Labels(release: "2024.9.7", idNamespace: "ncbi-taxid")
        let full = try StolFile.write(sqliteAt: directory + "/target.bin", to: directory + "/full.stol", schemaVersion: 3,
                                      signingKey: key, labels: labels)
        XCTAssertEqual(full.header.contentSHA256, SHA256.hash(target))
        XCTAssertEqual(full.header.keyID, key.publicKey.keyID)
        let delta = try StolFile.writeDelta(base: directory + "/base.bin", baseRelease: "2023.11.4", input: directory + "/target.bin",
                                            to: directory + "/delta.stol", schemaVersion: 3, signingKey: key, labels: labels)
        XCTAssertEqual(delta.header.kind, .delta)
        XCTAssertEqual(delta.header.baseRelease, "2023.11.4")
        XCTAssertLessThan(delta.fileBytes, full.fileBytes / 2, "a delta carries what changed, not the whole file")
        let trust = TrustedKeys.trusting(key.publicKey)
        let options = StolFile.VerifyOptions(supportedSchemaVersions: 1...3)
        let out = directory + "/out.bin"
        let verified = try StolFile.verify(path: directory + "/delta.stol", trust: trust, options: options,
                                           basePath: directory + "/base.bin", extractTo: out)
        XCTAssertEqual(verified.sqliteSHA256, SHA256.hash(target))
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: out))), target)
        // Another base, and no base at all.
        XCTAssertThrowsError(try StolFile.verify(path: directory + "/delta.stol", trust: trust, options: options,
                                                 basePath: directory + "/target.bin")) {
            XCTAssertEqual(($0 as? StolFormatError)?.code, .deltaBaseMismatch)
        }
        XCTAssertThrowsError(try StolFile.verify(path: directory + "/delta.stol", trust: trust, options: options)) {
            XCTAssertEqual(($0 as? StolFormatError)?.code, .deltaBaseMismatch)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/never.bin"))
    }
}
