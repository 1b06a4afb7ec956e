import Foundation
import Glibc
import STOLContainer
import STOLFormat
import STOLProtocol
import STOLTestFixtures
import XCTest

/// `.stol` files: the test vector, every single-byte change, truncation, bombs,
/// real SQLite round trips, and cross-checks with the independent Python
/// implementation (`protocol/vectors/stol/stol_reference.py`) and the CLI.
final class StolFileTests: XCTestCase {
    // MARK: The test vector

    func testVectorReproducesByteForByte() throws {
        let seed = try StolVectors.hex("test-key.seed.hex")
        XCTAssertEqual(seed, Array("STOL-TEST-KEY-DO-NOT-USE-0000001".utf8), "the documented TEST seed")
        let key = try XCTUnwrap(Ed25519.PrivateKey(seed: seed))
        XCTAssertEqual(key.publicKey.bytes, try StolVectors.hex("test-key.public.hex"))
        XCTAssertEqual(SigningKeyFile.privateKeyText(key), try StolVectors.text("test-key.private.key"))
        XCTAssertEqual(SigningKeyFile.publicKeyText(key.publicKey), try StolVectors.text("test-key.public.key"))

        let payload = try StolVectors.hex("payload.gz.hex")
        let expected = try StolVectors.hex("valid.stol.hex")
        let file = StolFile.assemble(payload: payload, schemaVersion: 1, signingKey: key)
        XCTAssertEqual(file.hexString, expected.hexString)
        let header = try StolHeader(parsing: file)
        XCTAssertEqual(header.signedMessage, try StolVectors.hex("signed-message.hex"))
        XCTAssertEqual(Array(file.prefix(44)), header.signedMessage)

        let body = try StolVectors.body()
        var output: [UInt8] = []
        let verified = try StolFile.verify(bytes: expected, publicKey: key.publicKey,
                                           output: { (chunk) throws(StolFormatError) in output.append(contentsOf: chunk) })
        XCTAssertEqual(output, body)
        XCTAssertEqual(verified.sqliteBytes, UInt64(body.count))
        XCTAssertEqual(verified.sqliteSHA256, SHA256.hash(body))
        XCTAssertEqual(verified.header, header)
        // Same zlib (1.2.13), same parameters: the Swift writer's gzip matches the Python one.
        XCTAssertEqual(Gzip.compress(body), payload)
    }

    func testEveryVectorOfTheManifestGivesItsDocumentedResult() throws {
        let manifest = try XCTUnwrap(JSONSerialization.jsonObject(
            with: Data(StolVectors.text("vectors.json").utf8)) as? [String: Any])
        let publicKey = try SigningKeyFile.loadPublicKey(path: StolVectors.directory + "/test-key.public.key")
        let defaults = try XCTUnwrap(manifest["defaults"] as? [String: Any])
        let vectors = try XCTUnwrap(manifest["vectors"] as? [[String: Any]])
        XCTAssertGreaterThanOrEqual(vectors.count, 20)
        for vector in vectors {
            let name = try XCTUnwrap(vector["name"] as? String)
            let bytes = try StolVectors.hex(try XCTUnwrap(vector["file"] as? String))
            let maxVersion = (vector["max_schema_version"] ?? defaults["max_schema_version"]) as? Int ?? 1
            let maxOut = (vector["max_decompressed_bytes"] ?? defaults["max_decompressed_bytes"]) as? Int ?? 0
            let options = StolFile.VerifyOptions(supportedSchemaVersions: 1...UInt32(maxVersion),
                                                 maximumDecompressedBytes: UInt64(maxOut))
            XCTAssertEqual(StolVectors.result(of: bytes, publicKey: publicKey, options: options),
                           vector["expect"] as? String, name)
        }
    }

    // MARK: Tampering

    /// Every bit flip and every xor 0xFF, at every offset of the header and the body.
    func testEverySingleByteChangeIsRejectedWithTheRightError() throws {
        let key = try StolVectors.key()
        let valid = try StolVectors.hex("valid.stol.hex")
        XCTAssertGreaterThan(valid.count, StolHeader.version1Size + 40)
        var checked = 0
        for offset in valid.indices {
            let invalid = StolFormatError.signatureInvalid(keyID: nil, trusted: [key.publicKey.keyID])
            let expected: StolFormatError = switch offset {
            case 0..<8: .notAStolFile           // no mask turns version byte 1 into 2
            case 8..<12: invalid                // the version field is signed; compatibility is checked after
            case 12..<44: .checksumMismatch     // the header's digest no longer matches the payload
            case 44..<108: invalid
            default: .checksumMismatch          // the body, through its digest
            }
            for mask: UInt8 in [0xFF, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80] {
                var bytes = valid
                bytes[offset] ^= mask
                XCTAssertThrowsError(try StolFile.verify(bytes: bytes, publicKey: key.publicKey),
                                     "offset \(offset) mask \(mask)") { error in
                    XCTAssertEqual(error as? StolFormatError, expected, "offset \(offset) mask \(mask)")
                }
                checked += 1
            }
        }
        XCTAssertEqual(checked, valid.count * 9)
    }

    func testEveryTruncationIsRejected() throws {
        let key = try StolVectors.key()
        let valid = try StolVectors.hex("valid.stol.hex")
        for length in 0..<valid.count {
            let expected: StolFormatError = length < StolHeader.version1Size ? .fileTooSmall(bytes: UInt64(length)) : .checksumMismatch
            XCTAssertThrowsError(try StolFile.verify(bytes: Array(valid.prefix(length)), publicKey: key.publicKey)) {
                XCTAssertEqual($0 as? StolFormatError, expected, "length \(length)")
            }
        }
        // A short file that is not a prefix of the magic is not a .stol file at all.
        XCTAssertThrowsError(try StolFile.verify(bytes: Array("STOP".utf8), publicKey: key.publicKey)) {
            XCTAssertEqual($0 as? StolFormatError, .notAStolFile)
        }
        // The same through a file descriptor.
        let directory = try makeTemporaryDirectory(self, prefix: "stolfile")
        for length in [0, 1, 7, 8, 107, 108, valid.count - 1] {
            let path = directory + "/t.stol"
            try Data(valid.prefix(length)).write(to: URL(fileURLWithPath: path))
            XCTAssertThrowsError(try StolFile.verify(path: path, publicKey: key.publicKey)) {
                let expected: StolFormatError = length < 108 ? .fileTooSmall(bytes: UInt64(length)) : .checksumMismatch
                XCTAssertEqual($0 as? StolFormatError, expected, "length \(length)")
            }
        }
    }

    func testSchemaVersionIsCheckedOnlyOnceItIsAuthentic() throws {
        let key = try StolVectors.key()
        let payload = try StolVectors.hex("payload.gz.hex")
        let version2 = StolFile.assemble(payload: payload, schemaVersion: 2, signingKey: key)
        XCTAssertThrowsError(try StolFile.verify(bytes: version2, publicKey: key.publicKey)) {
            XCTAssertEqual($0 as? StolFormatError, .incompatibleSchema(found: 2, supported: 1...1))
            XCTAssertEqual(($0 as? StolFormatError)?.code, .incompatibleSchema)
        }
        XCTAssertEqual(try StolFile.verify(bytes: version2, publicKey: key.publicKey,
                                           options: .init(supportedSchemaVersions: 1...2)).header.schemaVersion, 2)
        XCTAssertThrowsError(try StolFile.verify(bytes: StolFile.assemble(payload: payload, schemaVersion: 0, signingKey: key),
                                                 publicKey: key.publicKey)) {
            XCTAssertEqual($0 as? StolFormatError, .incompatibleSchema(found: 0, supported: 1...1))
        }
        // Raising the version field of a signed file is tampering, not incompatibility.
        var raised = try StolVectors.hex("valid.stol.hex")
        raised[8] = 0xff
        raised[11] = 0x7f
        XCTAssertThrowsError(try StolFile.verify(bytes: raised, publicKey: key.publicKey)) {
            XCTAssertEqual(($0 as? StolFormatError)?.code, .signatureInvalid)
        }
    }

    func testAWrongPublicKeyIsRejected() throws {
        let valid = try StolVectors.hex("valid.stol.hex")
        for key in [Ed25519.PrivateKey.generate(), Ed25519.PrivateKey(seed: [UInt8](repeating: 0, count: 32))!] {
            XCTAssertThrowsError(try StolFile.verify(bytes: valid, publicKey: key.publicKey)) {
                XCTAssertEqual($0 as? StolFormatError, .signatureInvalid(keyID: nil, trusted: [key.publicKey.keyID]))
            }
        }
    }

    /// A signed file whose small payload inflates beyond the limit passed in (1 MiB here).
    func testSignedDecompressionBombIsRefusedAndNothingIsExtracted() throws {
        let key = try StolVectors.key()
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 16 * 1024 * 1024))
        let file = StolFile.assemble(payload: bomb, schemaVersion: 1, signingKey: key)
        XCTAssertLessThan(file.count, 32 * 1024)
        let options = StolFile.VerifyOptions(maximumDecompressedBytes: 1024 * 1024)
        var received = 0
        XCTAssertThrowsError(try StolFile.verify(bytes: file, publicKey: key.publicKey, options: options,
                                                 output: { (chunk) throws(StolFormatError) in received += chunk.count })) { XCTAssertEqual($0 as? StolFormatError, .decompressionLimit(limit: 1024 * 1024)) }
        XCTAssertLessThanOrEqual(received, 1024 * 1024)

        let directory = try makeTemporaryDirectory(self, prefix: "stolbomb")
        try Data(file).write(to: URL(fileURLWithPath: directory + "/bomb.stol"))
        XCTAssertThrowsError(try StolFile.verify(path: directory + "/bomb.stol", publicKey: key.publicKey,
                                                 options: options, extractTo: directory + "/out.sqlite")) {
            XCTAssertEqual($0 as? StolFormatError, .decompressionLimit(limit: 1024 * 1024))
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), ["bomb.stol"],
                       "neither the destination nor a temporary file is left")
    }

    func testSizeLimitsAndUnreadableFiles() throws {
        let key = try StolVectors.key()
        let valid = try StolVectors.hex("valid.stol.hex")
        let small = StolFile.VerifyOptions(maximumFileBytes: UInt64(valid.count - 1))
        XCTAssertThrowsError(try StolFile.verify(bytes: valid, publicKey: key.publicKey, options: small)) {
            XCTAssertEqual($0 as? StolFormatError, .fileTooLarge(bytes: UInt64(valid.count), limit: UInt64(valid.count - 1)))
        }
        XCTAssertNoThrow(try StolFile.verify(bytes: valid, publicKey: key.publicKey,
                                             options: .init(maximumFileBytes: UInt64(valid.count))))

        let directory = try makeTemporaryDirectory(self, prefix: "stolsize")
        // A sparse file one byte over 2 GiB: refused from its size, before any content is read.
        let huge = directory + "/huge.stol"
        let fd = open(huge, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(ftruncate(fd, off_t(StolFile.maximumFileBytes + 1)), 0)
        close(fd)
        XCTAssertThrowsError(try StolFile.verify(path: huge, publicKey: key.publicKey)) {
            XCTAssertEqual($0 as? StolFormatError, .fileTooLarge(bytes: StolFile.maximumFileBytes + 1,
                                                                 limit: StolFile.maximumFileBytes))
            XCTAssertEqual(($0 as? StolFormatError)?.code, .fileTooLarge)
        }
        for path in [directory, directory + "/absent.stol"] {
            XCTAssertThrowsError(try StolFile.verify(path: path, publicKey: key.publicKey)) {
                guard case .fileUnreadable = $0 as? StolFormatError else { return XCTFail("\($0)") }
            }
        }
        var pipeFDs: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        defer { close(pipeFDs[0]); close(pipeFDs[1]) }
        XCTAssertThrowsError(try StolFile.verify(fileDescriptor: pipeFDs[0], publicKey: key.publicKey) { _ in }) {
            XCTAssertEqual($0 as? StolFormatError, .fileUnreadable("not a regular file"))
        }
    }

    /// The coordinator's size check (`StolFileLimits`, STOLFormat: it links no container
    /// code) has the container's limits and gives, on the same descriptors, what checks
    /// 1–2 of `StolFile` give.
    func testTheCoordinatorsSizeCheckIsTheContainers() throws {
        XCTAssertEqual(StolFileLimits.minimumFileBytes, StolFile.minimumFileBytes)
        XCTAssertEqual(StolFileLimits.maximumFileBytes, StolFile.maximumFileBytes)
        XCTAssertEqual(StolFileLimits.maximumDecompressedBytes, StolFile.maximumDecompressedBytes)

        let directory = try makeTemporaryDirectory(self, prefix: "stollimits")
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        for size in [0, 1, 108, Int(StolFile.maximumFileBytes), Int(StolFile.maximumFileBytes) + 1] {
            let fd = open(directory + "/\(size).stol", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            XCTAssertGreaterThanOrEqual(fd, 0)
            XCTAssertEqual(ftruncate(fd, off_t(size)), 0)  // sparse
            descriptors.append(fd)
        }
        var pipeFDs: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        descriptors += pipeFDs
        for fd in descriptors {
            let light = Result { () throws(StolFormatError) in try StolFileLimits.checkedSize(ofDescriptor: fd) }
            let container = Result { () throws(StolFormatError) in try StolFile.checkedSize(ofDescriptor: fd) }
            XCTAssertEqual(light, container, "descriptor \(fd)")
        }
        XCTAssertEqual(try StolFileLimits.checkedSize(ofDescriptor: descriptors[2]), 108)
        XCTAssertThrowsError(try StolFileLimits.checkedSize(ofDescriptor: descriptors[2], maximumFileBytes: 107)) {
            XCTAssertEqual($0 as? StolFormatError, .fileTooLarge(bytes: 108, limit: 107))
        }
    }

    /// The payload is hashed again while it is decompressed: a file changed after the
    /// checksum step (the client still holds it) is refused, not half-trusted.
    func testAFileChangedDuringVerificationIsRefused() throws {
        let key = try StolVectors.key()
        let directory = try makeTemporaryDirectory(self, prefix: "stolrace")
        let path = directory + "/race.stol"
        try Data(try StolVectors.hex("valid.stol.hex")).write(to: URL(fileURLWithPath: path))
        let reader = open(path, O_RDONLY | O_CLOEXEC), writer = open(path, O_WRONLY | O_CLOEXEC)
        defer { close(reader); close(writer) }
        XCTAssertThrowsError(try StolFile.verify(fileDescriptor: reader, publicKey: key.publicKey, events: { event in
            if event == .passed(.signature) {
                var byte: UInt8 = 0x5a
                _ = pwrite(writer, &byte, 1, off_t(StolHeader.version1Size + 20))
            }
        }) { _ in }) { XCTAssertEqual($0 as? StolFormatError, .checksumMismatch) }
    }

    func testEventsFollowTheChecklistOrder() throws {
        let key = try StolVectors.key()
        let valid = try StolVectors.hex("valid.stol.hex")
        var checks: [StolFile.Check] = []
        var stages: [StolFile.Stage] = []
        var progress: [(StolFile.Stage, Double)] = []
        let verified = try StolFile.verify(bytes: valid, publicKey: key.publicKey, events: { event in
            switch event {
            case .passed(let check): checks.append(check)
            case .progress(let stage, let fraction):
                progress.append((stage, fraction))
                if stages.last != stage { stages.append(stage) }
            }
        })
        for stage in stages {
            let fractions = progress.filter { $0.0 == stage }.map(\.1)
            XCTAssertEqual(fractions.first, 0, "\(stage)")
            XCTAssertEqual(fractions.last, 1, "\(stage)")
            XCTAssertEqual(fractions.filter { $0 == 1 }.count, 1, "\(stage) ends once")
            XCTAssertEqual(fractions, fractions.sorted(), "\(stage) only moves forward")
        }
        XCTAssertEqual(checks, [
            .fileSize(bytes: UInt64(valid.count)), .magic, .header(schemaVersion: 1),
            .checksum(sha256: Array(valid[12..<44])), .signature, .schemaVersion(1),
            .decompression(bytes: verified.sqliteBytes, sha256: verified.sqliteSHA256),
        ])
        XCTAssertEqual(stages, [.checkingHeader, .verifyingChecksum, .verifyingSignature, .decompressing])
    }

    func testErrorCodesAreTheProtocolNames() {
        let names = Set(Stol_V1_ErrorCode.allCases.map(\.name))
        for code in StolFormatError.Code.allCases {
            XCTAssertTrue(names.contains(code.rawValue), code.rawValue)
        }
        XCTAssertEqual(StolFormatError.truncatedHeader(bytes: 3).code, .fileTooSmall)
        XCTAssertEqual(StolFormatError.badMagic.code, .notAStolFile)
        XCTAssertEqual("\(StolFormatError.checksumMismatch)",
                       "CHECKSUM_MISMATCH: the SHA-256 of the payload differs from the header")
    }

    // MARK: Real SQLite files

    func testSignVerifyRoundTripOnARealSQLiteDatabase() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolsqlite")
        let database = try StolVectors.makeSQLiteDatabase(in: directory)
        let input = Array(try Data(contentsOf: URL(fileURLWithPath: database)))
        XCTAssertEqual(Array(input.prefix(16)), Array("SQLite format 3\0".utf8))
        let key = Ed25519.PrivateKey.generate()
        let output = directory + "/reference.stol"

        let written = try StolFile.write(sqliteAt: database, to: output, schemaVersion: 1, signingKey: key)
        XCTAssertEqual(written.inputBytes, UInt64(input.count))
        let file = Array(try Data(contentsOf: URL(fileURLWithPath: output)))
        XCTAssertEqual(UInt64(file.count), written.fileBytes)
        XCTAssertEqual(try StolHeader(parsing: file), written.header)
        XCTAssertEqual(written.header.formatVersion, 2)
        XCTAssertEqual(written.header.contentSHA256, SHA256.hash(input))
        XCTAssertEqual(written.header.contentSize, UInt64(input.count))
        XCTAssertEqual(SHA256.hash(Array(file.dropFirst(288))), written.header.payloadSHA256)
        XCTAssertEqual(try Gzip.decompress(Array(file.dropFirst(288)), limit: 1 << 30), input)

        let extracted = directory + "/extracted.sqlite"
        let verified = try StolFile.verify(path: output, publicKey: key.publicKey, extractTo: extracted)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: extracted))), input)
        XCTAssertEqual(verified.sqliteBytes, UInt64(input.count))
        XCTAssertEqual(verified.sqliteSHA256, SHA256.hash(input))
        XCTAssertEqual(verified.fileBytes, UInt64(file.count))
        XCTAssertEqual(try StolVectors.python(["-c", """
            import sqlite3, sys
            c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)
            print(c.execute('PRAGMA integrity_check').fetchone()[0], c.execute('SELECT version FROM schema_version').fetchone()[0])
            """, extracted]).stdout, "ok 1\n")
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: directory)),
                       ["db.sqlite", "reference.stol", "extracted.sqlite"], "no temporary files are left")

        // A second write replaces the file atomically; a write into a missing directory fails cleanly.
        try StolFile.write(sqliteAt: database, to: output, schemaVersion: 1, signingKey: key)
        XCTAssertNoThrow(try StolFile.verify(path: output, publicKey: key.publicKey))
        XCTAssertThrowsError(try StolFile.write(sqliteAt: database, to: directory + "/missing/x.stol",
                                                schemaVersion: 1, signingKey: key)) {
            guard case .outputFailed = $0 as? StolFormatError else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try StolFile.write(sqliteAt: directory + "/absent.sqlite", to: output,
                                                schemaVersion: 1, signingKey: key)) {
            guard case .fileUnreadable = $0 as? StolFormatError else { return XCTFail("\($0)") }
        }
    }

    // MARK: The independent implementation

    func testPythonReferenceImplementationAcceptsEveryVector() throws {
        let result = try StolVectors.python([StolVectors.reference, "check", StolVectors.directory])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertFalse(result.stdout.contains("FAIL"), result.stdout)
    }

    /// Python (hashlib, zlib, OpenSSL's Ed25519 via `cryptography`) builds a `.stol` from a real
    /// SQLite database with a key file; Swift's verifier and the CLI accept it.
    func testAFileBuiltByPythonVerifiesInSwiftAndWithTheCLI() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolpy")
        let database = try StolVectors.makeSQLiteDatabase(in: directory)
        let key = Ed25519.PrivateKey.generate()
        try SigningKeyFile.writePrivateKey(key, to: directory + "/k.key", overwrite: false)
        try SigningKeyFile.writePublicKey(key.publicKey, to: directory + "/k.pub", overwrite: false)
        let built = try StolVectors.python([StolVectors.reference, "build", "--key", directory + "/k.key",
                                            "--body", database, "--out", directory + "/py.stol"])
        XCTAssertEqual(built.status, 0, built.stderr)

        let extracted = directory + "/out.sqlite"
        let verified = try StolFile.verify(path: directory + "/py.stol", publicKey: key.publicKey, extractTo: extracted)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: extracted)), try Data(contentsOf: URL(fileURLWithPath: database)))
        XCTAssertEqual(verified.header.schemaVersion, 1)

        let cli = try StolVectors.pipelineBinary()
        let accepted = try StolVectors.run(cli, ["verify", "--public-key", directory + "/k.pub", directory + "/py.stol"])
        XCTAssertEqual(accepted.status, 0, accepted.stderr)
        XCTAssertTrue(accepted.stdout.contains("ok  key trusted, not revoked or expired; Ed25519 signature"), accepted.stdout)
        XCTAssertTrue(accepted.stdout.hasSuffix("verified \(directory)/py.stol\n"), accepted.stdout)
        var tampered = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/py.stol")))
        tampered[tampered.count - 3] ^= 0x10
        try Data(tampered).write(to: URL(fileURLWithPath: directory + "/bad.stol"))
        let refused = try StolVectors.run(cli, ["verify", "--public-key", directory + "/k.pub", directory + "/bad.stol"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("CHECKSUM_MISMATCH"), refused.stderr)
    }

    /// A file written by Swift verifies with the Python reimplementation, and both
    /// implementations give the same answer for every single-byte change of it.
    func testAFileBuiltBySwiftVerifiesInPythonWithTheSameVerdicts() throws {
        let directory = try makeTemporaryDirectory(self, prefix: "stolswift")
        let database = try StolVectors.makeSQLiteDatabase(in: directory, rows: 40)
        let key = Ed25519.PrivateKey.generate()
        try SigningKeyFile.writePublicKey(key.publicKey, to: directory + "/k.pub", overwrite: false)
        let written = try StolFile.write(sqliteAt: database, to: directory + "/swift.stol", schemaVersion: 1, signingKey: key)
        let accepted = try StolVectors.python([StolVectors.reference, "verify", "--public-key", directory + "/k.pub",
                                               directory + "/swift.stol"])
        let input = Array(try Data(contentsOf: URL(fileURLWithPath: database)))
        XCTAssertEqual(accepted.stdout, "OK \(input.count) \(SHA256.hash(input).hexString)\n", accepted.stderr)

        let file = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/swift.stol")))
        XCTAssertEqual(UInt64(file.count), written.fileBytes)
        var paths: [String] = [], swiftVerdicts: [String] = []
        let variants: [[UInt8]] = file.indices.map { offset in
            var bytes = file
            bytes[offset] ^= 0xFF
            return bytes
        } + [[], Array(file.prefix(50)), Array(file.dropLast())]
        for (index, bytes) in variants.enumerated() {
            let path = directory + "/v\(index).stol"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            paths.append(path)
            swiftVerdicts.append(StolVectors.result(of: bytes, publicKey: key.publicKey, options: .init()))
        }
        let python = try StolVectors.python([StolVectors.reference, "classify", "--public-key", directory + "/k.pub"] + paths)
        XCTAssertEqual(python.status, 0, python.stderr)
        let pythonVerdicts = python.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(pythonVerdicts.count, swiftVerdicts.count)
        for (index, (swift, py)) in zip(swiftVerdicts, pythonVerdicts).enumerated() where swift != py {
            XCTFail("variant \(index): Swift \(swift), Python \(py)")
        }
        XCTAssertFalse(swiftVerdicts.contains("OK"))
    }

    func testCLIKeygenSignVerify() throws {
        let cli = try StolVectors.pipelineBinary()
        let directory = try makeTemporaryDirectory(self, prefix: "stolcli")
        let database = try StolVectors.makeSQLiteDatabase(in: directory)
        let privateKey = directory + "/release.key", publicKey = directory + "/release.pub"

        let keygen = try StolVectors.run(cli, ["keygen", "--private-key", privateKey, "--public-key", publicKey])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        let seedHex = try SigningKeyFile.loadPrivateKey(path: privateKey).seed().hexString
        XCTAssertFalse((keygen.stdout + keygen.stderr).contains(seedHex), "the private key is never printed")
        let firstPublic = try SigningKeyFile.loadPublicKey(path: publicKey)
        XCTAssertTrue(keygen.stdout.contains("key id:     \(firstPublic.keyID)"), keygen.stdout)
        let again = try StolVectors.run(cli, ["keygen", "--private-key", privateKey, "--public-key", publicKey])
        XCTAssertNotEqual(again.status, 0)
        XCTAssertTrue(again.stderr.contains("--force"), again.stderr)
        XCTAssertEqual(try SigningKeyFile.loadPublicKey(path: publicKey), firstPublic, "not replaced")

        let output = directory + "/db.stol"
        let signed = try StolVectors.run(cli, ["sign", "--key", privateKey, "--input", database, "--output", output])
        XCTAssertEqual(signed.status, 0, signed.stderr)
        XCTAssertFalse((signed.stdout + signed.stderr).contains(seedHex))
        let verified = try StolVectors.run(cli, ["verify", "--public-key", publicKey, output,
                                                 "--extract", directory + "/out.sqlite"])
        XCTAssertEqual(verified.status, 0, verified.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.sqlite")),
                       try Data(contentsOf: URL(fileURLWithPath: database)))
        // The same file passes the independent verifier.
        let python = try StolVectors.python([StolVectors.reference, "verify", "--public-key", publicKey, output])
        XCTAssertTrue(python.stdout.hasPrefix("OK "), python.stdout + python.stderr)

        // The key from the environment; a mismatching --schema-version; not a database; a wrong key.
        let keyText = try String(contentsOfFile: privateKey, encoding: .utf8)
        let fromEnvironment = try StolVectors.run(cli, ["sign", "--input", database, "--output", directory + "/env.stol"],
                                                  environment: [SigningKeyFile.environmentVariable: keyText])
        XCTAssertEqual(fromEnvironment.status, 0, fromEnvironment.stderr)
        let noKey = try StolVectors.run(cli, ["sign", "--input", database, "--output", directory + "/none.stol"],
                                        environment: [:])
        XCTAssertEqual(noKey.status, 2)
        XCTAssertTrue(noKey.stderr.contains(SigningKeyFile.environmentVariable), noKey.stderr)
        let mismatch = try StolVectors.run(cli, ["sign", "--key", privateKey, "--input", database,
                                                 "--output", directory + "/v2.stol", "--schema-version", "2"])
        XCTAssertEqual(mismatch.status, 1)
        let notDatabase = try StolVectors.run(cli, ["sign", "--key", privateKey, "--input", publicKey,
                                                    "--output", directory + "/x.stol"])
        XCTAssertEqual(notDatabase.status, 1)
        XCTAssertTrue(notDatabase.stderr.contains("not a SQLite 3 database"), notDatabase.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/x.stol"))
        let otherKey = directory + "/other.pub"
        try SigningKeyFile.writePublicKey(Ed25519.PrivateKey.generate().publicKey, to: otherKey, overwrite: false)
        let wrongKey = try StolVectors.run(cli, ["verify", "--public-key", otherKey, output])
        XCTAssertEqual(wrongKey.status, 1)
        XCTAssertTrue(wrongKey.stderr.contains("UNKNOWN_KEY") && wrongKey.stderr.contains(firstPublic.keyID.description),
                      "a version 2 file names its key: " + wrongKey.stderr)
    }
}

/// The vector directory, the Python reference implementation and helpers to run tools.
enum StolVectors {
    static let directory = Workspace.repositoryRoot + "/protocol/vectors/stol"
    static let reference = directory + "/stol_reference.py"

    static func text(_ name: String) throws -> String {
        try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
    }

    static func hex(_ name: String) throws -> [UInt8] { hexBytes(try text(name)) }

    static func body() throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/body.txt"))) }

    /// The TEST key of the vectors (STOL-FORMAT.md §8). Never use it for anything real.
    static func key() throws -> Ed25519.PrivateKey {
        try XCTUnwrap(Ed25519.PrivateKey(seed: try hex("test-key.seed.hex")))
    }

    /// "OK" or the error's protocol code name.
    static func result(of bytes: [UInt8], publicKey: Ed25519.PublicKey, options: StolFile.VerifyOptions) -> String {
        do {
            _ = try StolFile.verify(bytes: bytes, publicKey: publicKey, options: options)
            return "OK"
        } catch {
            return error.code.rawValue
        }
    }

    /// Runs a command to completion; `environment` replaces this process's when given.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> ProcessOutput {
        try ChildProcess.run(executable, arguments, environment: environment ?? [:], inheritEnvironment: environment == nil,
                             timeoutSeconds: 300)
    }

    static let pythonPath: String? = {
        for candidate in ["/usr/bin/python3", "/usr/local/bin/python3"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            if let probe = try? run(candidate, ["-c", "import cryptography, zlib, hashlib, sqlite3"]), probe.status == 0 {
                return candidate
            }
        }
        return nil
    }()

    /// Runs python3 with the `cryptography` package; without them the test fails (`make deps` installs both).
    static func python(_ arguments: [String]) throws -> ProcessOutput {
        guard let pythonPath else { throw MissingPrerequisite("python3 with the cryptography package", debianPackage: "python3-cryptography") }
        return try run(pythonPath, arguments)
    }

    /// The built `stol-pipeline` next to the test bundle (`swift build --build-tests` builds it).
    static func pipelineBinary() throws -> String {
        try XCTUnwrap(Workspace.builtExecutable("stol-pipeline"), "stol-pipeline is not built next to the tests (swift build --build-tests)")
    }

    /// A real SQLite database (schema_version 1, not WAL) made by Python's sqlite3 module.
    static func makeSQLiteDatabase(in directory: String, rows: Int = 2000) throws -> String {
        let path = directory + "/db.sqlite"
        let result = try python(["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute('CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL DEFAULT (strftime(\\'%Y-%m-%dT%H:%M:%SZ\\',\\'now\\')))')
            c.execute('INSERT INTO schema_version (version) VALUES (1)')
            c.execute('CREATE TABLE taxa (id INTEGER PRIMARY KEY, parent_id INTEGER, rank TEXT, scientific_name TEXT)')
            c.executemany('INSERT INTO taxa VALUES (?, ?, ?, ?)',
                          [(i, i // 3 or None, 'species', 'Genus%d species%d' % (i // 7, i)) for i in range(1, int(sys.argv[2]) + 1)])
            c.commit()
            c.execute('VACUUM')
            c.close()
            """, path, String(rows)])
        guard result.status == 0 else { throw TestSupportError("Python's sqlite3 could not create the database: \(result.stderr)") }
        return path
    }
}

extension StolFileTests {
    /// `keygen --not-after`, `sign` (format version 2 with the database's labels), `delta`
    /// and `verify --base` through the real CLI, and `verify` refusing an expired key.
    func testCLIDeltaAndNotAfter() throws {
        let cli = try StolVectors.pipelineBinary()
        let directory = try makeTemporaryDirectory(self, prefix: "stolclid")
        let old = try StolVectors.makeSQLiteDatabase(in: directory, rows: 3000)
        try FileManager.default.moveItem(atPath: old, toPath: directory + "/old.sqlite")
        let new = try StolVectors.makeSQLiteDatabase(in: directory, rows: 3100)
        let key = directory + "/k.key"
        XCTAssertEqual(try StolVectors.run(cli, ["keygen", "--private-key", key, "--not-after", "2020-01-01"]).status, 0)
        XCTAssertTrue(try String(contentsOfFile: key + ".pub", encoding: .utf8).contains("not-after: 2020-01-01"))
        XCTAssertEqual(try StolVectors.run(cli, ["keygen", "--private-key", directory + "/bad.key", "--not-after", "2020-13-01"]).status, 64)

        // These databases' schema_version has no primary key: --kind auto (the default) says why it
        // writes a byte delta, --kind rows refuses with the same reason and writes nothing.
        let delta = try StolVectors.run(cli, ["delta", "--key", key, "--base", directory + "/old.sqlite", "--input", new,
                                              "--output", directory + "/d.stol"])
        XCTAssertEqual(delta.status, 0, delta.stderr)
        XCTAssertTrue(delta.stdout.contains("from release unknown"), delta.stdout)
        XCTAssertTrue(delta.stdout.contains("wrote byte delta (kind 2)"), delta.stdout)
        XCTAssertTrue(delta.stderr.contains("no row delta") && delta.stderr.contains("table schema_version has no primary key"),
                      delta.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: directory + "/d.stol"))[12], StolHeader.Kind.delta.rawValue)
        let rows = try StolVectors.run(cli, ["delta", "--key", key, "--kind", "rows", "--base", directory + "/old.sqlite",
                                             "--input", new, "--output", directory + "/rows.stol"])
        XCTAssertEqual(rows.status, 1)
        XCTAssertTrue(rows.stderr.contains("table schema_version has no primary key"), rows.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/rows.stol"))
        // The key expired in 2020: verify refuses it, naming it; a fresh public key file without the date accepts.
        let expired = try StolVectors.run(cli, ["verify", "--public-key", key + ".pub", "--base", directory + "/old.sqlite",
                                                directory + "/d.stol"])
        XCTAssertEqual(expired.status, 1)
        XCTAssertTrue(expired.stderr.contains("KEY_EXPIRED"), expired.stderr)
        let publicKey = try SigningKeyFile.loadPublicKey(path: key + ".pub")
        try SigningKeyFile.writePublicKey(publicKey, to: directory + "/plain.pub", overwrite: false)
        let applied = try StolVectors.run(cli, ["verify", "--public-key", directory + "/plain.pub", "--base", directory + "/old.sqlite",
                                                "--extract", directory + "/out.sqlite", directory + "/d.stol"])
        XCTAssertEqual(applied.status, 0, applied.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.sqlite")), try Data(contentsOf: URL(fileURLWithPath: new)))
        let wrongBase = try StolVectors.run(cli, ["verify", "--public-key", directory + "/plain.pub", "--base", new, directory + "/d.stol"])
        XCTAssertEqual(wrongBase.status, 1)
        XCTAssertTrue(wrongBase.stderr.contains("DELTA_BASE_MISMATCH"), wrongBase.stderr)
    }
}
