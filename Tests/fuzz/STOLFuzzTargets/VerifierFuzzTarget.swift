import Foundation
import GRDB
import STOLContainer
import STOLFormat
import STOLImportCore
import STOLModel
import STOLProtocol
import STOLTransport
import STOLTestFixtures
import STOLVerifier

/// `stol-verifyd`'s request handling (``VerifierService``): the sandboxed parser
/// of untrusted `.stol` files, the most exposed code of the import. The input
/// becomes the file it is handed (an in-memory file as the received descriptor).
///
/// Byte 0 chooses what the rest is (``Mode``): a whole `.stol` file, as an
/// attacker can make it; or a gzip payload, or an SQLite database, that this
/// target signs with the key the verifier trusts, as only the release key's
/// holder could — so that decompression and the database checks are fuzzed too,
/// not only the checks a forged file stops at.
///
/// Every answer: progress frames in stage order (fractions 0…1), `chunk` frames
/// only once decompression has succeeded, then exactly one final `done` or typed
/// error naming its check (PROTOCOL.md §7) — never INTERNAL. A file this target
/// signed never fails a check before the schema version; a database it compressed
/// itself never fails decompression, and comes back byte for byte when it passes.
/// `done` announces exactly the size and SHA-256 of the chunks sent before it.
public final class VerifierFuzzTarget: FuzzTarget {
    public static let name = "fuzz-verifier"
    public static let maximumInputBytes = 65536  // a small database (the seed is 28 KiB)

    enum Mode: Equatable {
        /// The rest of the input is the file.
        case file
        /// The rest is a payload, signed into a file with `schemaVersion`.
        case signedPayload(schemaVersion: UInt32)
        /// The rest is a database, gzipped and signed with `schemaVersion`.
        case signedDatabase(schemaVersion: UInt32)
        /// The rest is a database, gzipped and signed in format version 2 (its size and
        /// SHA-256 signed as the content, release and namespace "unknown").
        case signedDatabaseV2(schemaVersion: UInt32)
        /// The rest is a delta's payload (a zstd frame, as fuzzed), signed in format
        /// version 2 against ``VerifierFuzzTarget/deltaBase``, which is attached first.
        case signedDelta
        /// The same for a row delta (kind 3): the frame's content is a patchset that the
        /// verifier applies to a copy of the base with SQLite's session extension.
        case signedRowDelta

        /// Byte 0 modulo 6 picks the kind; byte 0 / 6 picks an unsupported schema
        /// version for 1 (one past the newest) and 2 (version 0), else version 1
        /// (the seed inputs' databases are of schema 1, which the verifier still accepts).
        init(_ byte: UInt8) {
            let tooNew = UInt32(TaxonomySchema.currentVersion) + 1
            let version: UInt32 = byte / 6 == 1 ? tooNew : byte / 6 == 2 ? 0 : 1
            switch byte % 6 {
            case 0: self = .file
            case 1: self = .signedPayload(schemaVersion: version)
            case 2: self = .signedDatabase(schemaVersion: version)
            case 3: self = .signedDatabaseV2(schemaVersion: version)
            case 4: self = .signedDelta
            default: self = .signedRowDelta
            }
        }

        var isDelta: Bool { self == .signedDelta || self == .signedRowDelta }

        var schemaVersion: UInt32? {
            switch self {
            case .file, .signedDelta, .signedRowDelta: nil
            case .signedPayload(let version), .signedDatabase(let version), .signedDatabaseV2(let version): version
            }
        }
    }

    let service: VerifierService
    let scratch: ScratchFile
    let signingKey: Ed25519.PrivateKey
    /// Where the input files are made (RAM-backed, see ``FuzzScratch``).
    let directory: String
    static let coordinatorUID: UInt32 = 4242
    static let context = RequestContext(peer: PeerCredentials(pid: 1, uid: coordinatorUID, gid: coordinatorUID),
                                        logger: quietLogger)
    static let formatErrors: Set<Stol_V1_ErrorCode> = [.fileTooSmall, .notAStolFile, .checksumMismatch, .signatureInvalid,
                                                      .incompatibleSchema, .decompressionLimit, .unknownKey, .keyExpired,
                                                      .keyRevoked, .contentHashMismatch, .deltaBaseMismatch]
    static let checks: [Stol_V1_ErrorCode: Set<String>] = [
        .fileTooSmall: ["file_size", "header"], .notAStolFile: ["magic"], .checksumMismatch: ["sha_256_checksum"],
        .signatureInvalid: ["signature"], .incompatibleSchema: ["schema_version"], .decompressionLimit: ["decompression"],
        .unknownKey: ["signature"], .keyExpired: ["signature"], .keyRevoked: ["signature"],
        .contentHashMismatch: ["content_sha_256"], .deltaBaseMismatch: ["delta_base"],
        .databaseCorrupt: ["decompression", "header", "sqlite_header", "database_schema_version", "integrity", "tables_and_columns",
                           "provenance"],
    ]
    /// The base the delta mode's payloads apply to: a small database (its bytes fixed).
    let deltaBase: [UInt8]

    init(service: VerifierService, scratch: ScratchFile, signingKey: Ed25519.PrivateKey, directory: String, deltaBase: [UInt8]) {
        self.deltaBase = deltaBase
        self.service = service
        self.scratch = scratch
        self.signingKey = signingKey
        self.directory = directory
    }

    /// The test key of `protocol/vectors/stol` (its seed is committed there): the
    /// `.stol` vectors are signed with it, so they reach the checks past the signature.
    static func testKey() throws -> Ed25519.PrivateKey {
        guard let key = Ed25519.PrivateKey(seed: try FuzzSeeds.hexFile(FuzzSeeds.vectorsDirectory + "/stol/test-key.seed.hex")) else {
            throw FuzzFailure("protocol/vectors/stol/test-key.seed.hex is not an Ed25519 seed")
        }
        return key
    }

    public static func make() throws -> VerifierFuzzTarget {
        let key = try testKey()
        let directory = try FuzzScratch.makeDirectory("stolfuzz-verifier")
        let scratch = try ScratchFile(directory: directory)
        let service = VerifierService(configuration: .init(allowedUID: coordinatorUID, trustedKeys: .success(.trusting(key.publicKey))),
                                      scratch: scratch, deltaScratch: try ScratchFile(directory: directory),
                                      rowDeltaScratch: try ScratchFile(directory: directory))
        try FixtureDatabase.build(at: directory + "/delta-base.sqlite", pageSize: 512)
        let base = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/delta-base.sqlite")))
        return VerifierFuzzTarget(service: service, scratch: scratch, signingKey: key, directory: directory, deltaBase: base)
    }

    public func run(_ input: [UInt8]) throws(FuzzFailure) {
        let mode = Mode(input.first ?? 0)
        let frames = try answers(input)
        try check(frames, mode: mode, database: Array(input.dropFirst()))
        try expect(scratch.size == 0, "the scratch file holds \(scratch.size) bytes after the answer")
    }

    /// Every frame the verifier sends for the file `input` makes.
    func answers(_ input: [UInt8]) throws(FuzzFailure) -> [Stol_V1_VerifyResponse] {
        let mode = Mode(input.first ?? 0)
        let rest = Array(input.dropFirst())
        let file: [UInt8]
        switch mode {
        case .file: file = rest
        case .signedPayload(let version): file = StolFile.assemble(payload: rest, schemaVersion: version, signingKey: signingKey)
        case .signedDatabase(let version):
            file = StolFile.assemble(payload: Gzip.compress(rest, level: 1), schemaVersion: version, signingKey: signingKey)
        case .signedDatabaseV2(let version):
            file = StolFile.assemble(payload: Gzip.compress(rest, level: 1), content: .init(
                schemaVersion: version, size: UInt64(rest.count), sha256: SHA256.hash(rest), release: "unknown", idNamespace: "unknown"),
                signingKey: signingKey)
        case .signedDelta, .signedRowDelta:
            // The content it claims: the size the frame states (so that it is decoded), and a
            // digest it cannot know; a frame that states none, or more than 64 MiB, is signed as its own size.
            // A row delta's frame holds a patchset: its result is claimed to be the base's size.
            let stated = mode == .signedRowDelta ? UInt64(deltaBase.count)
                : ZstdDelta.declaredContentSize(rest).flatMap { $0 <= 64 << 20 ? $0 : nil } ?? UInt64(rest.count)
            file = StolFile.assemble(payload: rest, content: .init(
                kind: mode == .signedRowDelta ? .rowDelta : .delta, schemaVersion: 1, size: stated, sha256: SHA256.hash(rest),
                release: "unknown",
                idNamespace: "unknown", baseSHA256: SHA256.hash(deltaBase), baseRelease: "base"), signingKey: signingKey)
            var attach = Stol_V1_VerifyRequest()
            attach.id = 1
            attach.attachBase = .with { $0.sizeBytes = UInt64(deltaBase.count) }
            let context = RequestContext(peer: Self.context.peer, logger: Self.context.logger,
                                         receivedFileDescriptor: try FuzzFile.descriptor(for: deltaBase, in: directory))
            var attached = false
            service.respond(to: attach, context: context) { response in
                if case .baseAttached = response.result { attached = true }
            }
            try expect(attached, "the delta's base was not attached")
        }
        var request = Stol_V1_VerifyRequest()
        request.id = 1
        request.verifyFile = .with { $0.sizeBytes = UInt64(file.count) }
        let context = RequestContext(peer: Self.context.peer, logger: Self.context.logger,
                                     receivedFileDescriptor: try FuzzFile.descriptor(for: file, in: directory))
        var frames: [Stol_V1_VerifyResponse] = []
        service.respond(to: request, context: context) { response in
            var response = response
            response.id = request.id
            frames.append(response)
        }
        return frames
    }

    private func check(_ frames: [Stol_V1_VerifyResponse], mode: Mode, database: [UInt8]) throws(FuzzFailure) {
        guard let final = frames.last else { throw FuzzFailure("no answer") }
        var stage = Stol_V1_ImportStage.unspecified
        var sent: [UInt8] = []
        for (index, frame) in frames.enumerated() {
            try ResponseCheck.wellFormed(frame, requestID: 1, allowed: Self.formatErrors.union([.databaseCorrupt]), "frame \(index)")
            switch frame.result {
            case .progress(let progress) where index < frames.count - 1:
                try expect(progress.stage.rawValue >= stage.rawValue, "progress went back from \(stage) to \(progress.stage)")
                try expect((0...1).contains(progress.fraction), "progress fraction \(progress.fraction)")
                stage = progress.stage
            case .chunk(let chunk) where index < frames.count - 1:
                try expect(stage == .checkingDatabase, "a chunk during \(stage), before decompression succeeded")
                try expect(chunk.data.count <= ImportLimits.chunkBytes, "a chunk of \(chunk.data.count) bytes")
                sent += chunk.data
            case .done where index == frames.count - 1, .error where index == frames.count - 1:
                break
            default:
                throw FuzzFailure("frame \(index) of \(frames.count) is \(frame)")
            }
        }
        switch final.result {
        case .done(let done):
            try expect(done.sqliteBytes == UInt64(sent.count) && Array(done.sqliteSha256) == SHA256.hash(sent),
                       "done announces \(done.sqliteBytes) bytes, \(sent.count) were sent (or another SHA-256)")
            try expect(done.schemaVersion == 1, "done with schema version \(done.schemaVersion)")
            if case .signedDatabase = mode { try expect(sent == database, "the verified database differs from the one signed") }
            if case .signedDatabaseV2 = mode { try expect(sent == database, "the verified database differs from the one signed") }
            if mode.isDelta { try expect(SHA256.hash(sent) == SHA256.hash(database), "a delta yielded what its header does not sign") }
        case .error(let error):
            let check = error.details["check"] ?? ""
            try expect(Self.checks[error.code]?.contains(check) ?? false, "\(error.code) names the check \"\(check)\"")
            if Self.formatErrors.contains(error.code) { try expect(sent.isEmpty, "database bytes sent before \(error.code)") }
            if let version = mode.schemaVersion {
                try expect(version == 1 || error.code == .incompatibleSchema, "schema version \(version) answered \(error.code)")
            }
            if mode != .file {
                try expect(![.fileTooSmall, .notAStolFile, .checksumMismatch, .signatureInvalid, .unknownKey, .keyExpired, .keyRevoked,
                             .deltaBaseMismatch].contains(error.code), "a correctly signed file answered \(error.code)")
            }
            if mode == .signedDatabase(schemaVersion: 1) || mode == .signedDatabaseV2(schemaVersion: 1) {
                try expect(error.code == .databaseCorrupt && check != "decompression", "a database gzipped here answered \(error.code) \(check)")
                if !database.starts(with: Array("SQLite format 3\0".utf8)) {
                    try expect(check == "sqlite_header", "a database without the SQLite header failed \(check)")
                }
            }
        default:
            throw FuzzFailure("the final frame is \(final)")
        }
    }

    /// Every `.stol` vector as a file; a small database, signed by this target as a
    /// payload and as a database (pages of 512 bytes: the smallest SQLite allows).
    public static func generatedSeeds() throws -> [(name: String, bytes: [UInt8])] {
        var seeds: [(name: String, bytes: [UInt8])] = []
        let directory = FuzzSeeds.vectorsDirectory + "/stol"
        for file in try FileManager.default.contentsOfDirectory(atPath: directory).sorted() where file.hasSuffix(".stol.hex") {
            seeds.append(("vector-" + file.replacingOccurrences(of: ".stol.hex", with: ""), [0] + (try FuzzSeeds.hexFile(directory + "/" + file))))
        }
        let scratch = try FuzzScratch.makeDirectory("stolfuzz-seeds")
        try FixtureDatabase.build(at: scratch + "/small.sqlite", pageSize: 512)
        let database = try [UInt8](Data(contentsOf: URL(fileURLWithPath: scratch + "/small.sqlite")))
        seeds.append(("seed-signed-database", [2] + database))
        seeds.append(("seed-signed-payload", [1] + Gzip.compress(database, level: 9)))
        seeds.append(("seed-signed-text", [1] + Gzip.compress(Array("not a database\n".utf8), level: 9)))
        seeds.append(("seed-signed-database-v2", [3] + database))
        // A delta from the target's base to the same database with a table added.
        try FixtureDatabase.build(at: scratch + "/base.sqlite", pageSize: 512)
        let base = try [UInt8](Data(contentsOf: URL(fileURLWithPath: scratch + "/base.sqlite")))
        var changed = base  // the base with a page's worth of bytes changed: a frame with content
        for index in stride(from: 4096, to: min(changed.count, 4096 + 512), by: 7) { changed[index] ^= 0x5a }
        var frame: [UInt8] = []
        try base.withUnsafeBytes { baseBytes in
            try changed.withUnsafeBytes { target in
                try ZstdDelta.create(base: baseBytes, target: target, level: 3) { (chunk) throws(StolFormatError) in frame += chunk }
            }
        }
        seeds.append(("seed-signed-delta", [4] + frame))
        // A row delta: the patchset from the base to a copy with a taxon renamed and one added.
        try FileManager.default.copyItem(atPath: scratch + "/base.sqlite", toPath: scratch + "/next.sqlite")
        let queue = try DatabaseQueue(path: scratch + "/next.sqlite")
        try queue.write { db in
            try db.execute(sql: "UPDATE taxa SET scientific_name = 'Panthera leo leo' WHERE id = 9689")
            try db.execute(sql: """
                INSERT INTO taxa (id, parent_id, rank, main_rank, main_parent_id, scientific_name, status)
                VALUES (9696, 9688, 'species', 'species', 9688, 'Panthera spelaea', 'accepted')
                """)
        }
        try queue.close()
        let patchset = try RowDelta.patchset(base: scratch + "/base.sqlite", target: scratch + "/next.sqlite")
        var rows: [UInt8] = []
        try base.withUnsafeBytes { baseBytes in
            try ZstdDelta.create(base: baseBytes, target: patchset.bytes, level: 3) { (chunk) throws(StolFormatError) in rows += chunk }
        }
        seeds.append(("seed-signed-row-delta", [5] + rows))
        let v2 = directory + "/v2"
        for file in try FileManager.default.contentsOfDirectory(atPath: v2).sorted() where file.hasSuffix(".stol.hex") {
            seeds.append(("vector-v2-" + file.replacingOccurrences(of: ".stol.hex", with: ""), [0] + (try FuzzSeeds.hexFile(v2 + "/" + file))))
        }
        return seeds
    }
}
