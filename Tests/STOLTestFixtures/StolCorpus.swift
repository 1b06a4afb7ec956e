import CZlib
import Foundation
import STOLModel
import Glibc
import GRDB
import STOLContainer
import STOLFormat

/// Bad `.stol` files, generated from one valid taxonomy database, each with the
/// error its import must end with. The integration tests send every one through
/// the real client and daemons; the verifier's own tests run them in-process.
///
/// "Signed" cases are made by the tests' own signer (`StolFile.assemble` with a
/// key the verifier trusts), so they get past the checksum and the signature and
/// reach the check they target; the others change bytes of a valid file.
public struct StolCorpusCase: Sendable {
    public let name: String
    public let bytes: [UInt8]
    /// The protocol error code name (`SIGNATURE_INVALID`, …).
    public let code: String
    /// The `check` detail the error should name, when the case targets one.
    public let check: String?
    /// Through `stol-importd`, when it differs from ``code``: the coordinator checks the
    /// signed header before any verifier runs, so a changed signed byte is a signature
    /// failure there even where the verifier's order meets the payload digest first.
    public var serviceCode: String? = nil
}

/// The keys besides the trusted one that the bad files use, with fixed TEST seeds:
/// one expired, one revoked with its file present, one revoked by id alone, one
/// trusted nowhere. ``writeTrustDirectory(_:trusting:)`` lays out what the
/// verifier trusts as an operator would (`*.pub` files and a `revoked` list).
public enum CorpusKeys {
    public static let expired = key("STOL-TEST-KEY-EXPIRED-0000000003")
    public static let revokedPresent = key("STOL-TEST-KEY-REVOKED-0000000004")
    public static let revokedAbsent = key("STOL-TEST-KEY-REVOKED-0000000005")
    public static let untrusted = key("STOL-TEST-KEY-UNTRUST-0000000006")
    /// The expired key's `not-after`.
    public static let expiredNotAfter = "2020-01-01"

    private static func key(_ seed: String) -> Ed25519.PrivateKey { Ed25519.PrivateKey(seed: Array(seed.utf8))! }

    /// What a verifier trusting `trusted` with this fixture would load.
    public static func trust(_ trusted: Ed25519.PublicKey) -> TrustedKeys {
        var keys = TrustedKeys([.init(key: trusted),
                                .init(key: expired.publicKey, notAfter: PublicKeyFile.parseDate(expiredNotAfter)),
                                .init(key: revokedPresent.publicKey)])
        keys.revoke(revokedPresent.publicKey.keyID)
        keys.revoke(revokedAbsent.publicKey.keyID)
        return keys
    }

    /// Writes `release.pub` (trusted), `expired.pub`, `revoked-present.pub` and `revoked` into `directory`.
    public static func writeTrustDirectory(_ directory: String, trusting trusted: Ed25519.PublicKey) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try SigningKeyFile.writePublicKey(trusted, to: directory + "/release.pub", overwrite: true)
        try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(expired.publicKey, notAfter: expiredNotAfter),
                                              to: directory + "/expired.pub", overwrite: true)
        try SigningKeyFile.writePublicKey(revokedPresent.publicKey, to: directory + "/revoked-present.pub", overwrite: true)
        try Data("""
            # revoked keys: the list wins over any key file
            \(revokedPresent.publicKey.keyID)
            \(revokedAbsent.publicKey.keyID)  # no key file for this one

            """.utf8).write(to: URL(fileURLWithPath: directory + "/" + TrustedKeys.revocationFileName))
    }
}

public enum StolCorpus {
    /// A version 2 `.stol` file of `sqlite` (deflate level 6, like `make build-db`), its
    /// header naming the database's own release and id namespace, as `stol-pipeline sign` does.
    public static func sign(_ sqlite: [UInt8], key: Ed25519.PrivateKey,
                            schemaVersion: UInt32 = UInt32(TaxonomySchema.currentVersion),
                            edit: (inout StolHeader) -> Void = { _ in }) -> [UInt8] {
        let labels = self.labels(of: sqlite)
        let content = StolHeader.Content(schemaVersion: schemaVersion, size: UInt64(sqlite.count), sha256: SHA256.hash(sqlite),
                                          release: labels.release, idNamespace: labels.idNamespace)
        return StolFile.assemble(payload: Gzip.compress(sqlite, level: 6), content: content, signingKey: key, edit: edit)
    }

    /// A legacy version 1 `.stol` file of `sqlite`.
    public static func signVersion1(_ sqlite: [UInt8], key: Ed25519.PrivateKey,
                                    schemaVersion: UInt32 = UInt32(TaxonomySchema.currentVersion)) -> [UInt8] {
        StolFile.assemble(payload: Gzip.compress(sqlite, level: 6), schemaVersion: schemaVersion, signingKey: key)
    }

    /// A signed delta (kind 2) from `base` to `sqlite`.
    public static func signDelta(base: [UInt8], to sqlite: [UInt8], key: Ed25519.PrivateKey,
                                 schemaVersion: UInt32 = UInt32(TaxonomySchema.currentVersion),
                                 edit: (inout StolHeader) -> Void = { _ in }) throws -> [UInt8] {
        let labels = self.labels(of: sqlite), baseLabels = self.labels(of: base)
        var payload: [UInt8] = []
        try base.withUnsafeBytes { baseBytes in
            try sqlite.withUnsafeBytes { target in
                try ZstdDelta.create(base: baseBytes, target: target, level: 3) { (chunk) throws(StolFormatError) in payload += chunk }
            }
        }
        let content = StolHeader.Content(kind: .delta, schemaVersion: schemaVersion, size: UInt64(sqlite.count),
                                          sha256: SHA256.hash(sqlite), release: labels.release, idNamespace: labels.idNamespace,
                                          baseSHA256: SHA256.hash(base), baseRelease: baseLabels.release)
        return StolFile.assemble(payload: payload, content: content, signingKey: key, edit: edit)
    }

    /// `sqlite` laid out as the pipeline writes every database (TaxonomyDatabaseWriter):
    /// the schema cookie set to TaxonomySchema.fileSchemaCookie, then VACUUM INTO a new file.
    /// A row delta's result is laid out the same way, so only such files are reached by one.
    public static func laidOut(_ sqlite: [UInt8]) throws -> [UInt8] {
        let directory = NSTemporaryDirectory() + "/stol-laid-out-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(sqlite).write(to: URL(fileURLWithPath: directory + "/in.sqlite"))
        let queue = try DatabaseQueue(path: directory + "/in.sqlite")
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA schema_version = \(TaxonomySchema.fileSchemaCookie)")
            try db.execute(sql: "VACUUM INTO ?", arguments: [directory + "/out.sqlite"])
        }
        try queue.close()
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/out.sqlite")))
    }

    /// A signed row delta (kind 3) from `base` to `sqlite`, made by ``StolFile/writeDelta``;
    /// `rowsBase`, when given, is the database its rows are taken against instead
    /// (a delta whose rows do not fit the base its header names).
    public static func signRowDelta(base: [UInt8], to sqlite: [UInt8], key: Ed25519.PrivateKey,
                                    rowsBase: [UInt8]? = nil,
                                    edit: (inout StolHeader) -> Void = { _ in }) throws -> [UInt8] {
        let directory = NSTemporaryDirectory() + "/stol-row-delta-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(base).write(to: URL(fileURLWithPath: directory + "/base.sqlite"))
        try Data(sqlite).write(to: URL(fileURLWithPath: directory + "/next.sqlite"))
        if let rowsBase { try Data(rowsBase).write(to: URL(fileURLWithPath: directory + "/other.sqlite")) }
        let patchset = try RowDelta.patchset(base: directory + (rowsBase == nil ? "/base.sqlite" : "/other.sqlite"),
                                             target: directory + "/next.sqlite")
        var payload: [UInt8] = []
        try base.withUnsafeBytes { baseBytes in
            try ZstdDelta.create(base: baseBytes, target: patchset.bytes, level: 3) { (chunk) throws(StolFormatError) in payload += chunk }
        }
        let labels = self.labels(of: sqlite), baseLabels = self.labels(of: base)
        let content = StolHeader.Content(kind: .rowDelta, schemaVersion: UInt32(TaxonomySchema.currentVersion), size: UInt64(sqlite.count),
                                          sha256: SHA256.hash(sqlite), release: labels.release, idNamespace: labels.idNamespace,
                                          baseSHA256: SHA256.hash(base), baseRelease: baseLabels.release)
        return StolFile.assemble(payload: payload, content: content, signingKey: key, edit: edit)
    }

    /// The release and id namespace of a database's provenance ("unknown" without one).
    public static func labels(of sqlite: [UInt8]) -> StolFile.Labels {
        let path = NSTemporaryDirectory() + "/stol-labels-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard (try? Data(sqlite).write(to: URL(fileURLWithPath: path))) != nil else { return .unknown }
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return .unknown }
        defer { try? queue.close() }
        let rows: [String: String] = (try? queue.read { db -> [String: String] in
            guard try db.tableExists("provenance") else { return [:] }
            var rows: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM provenance") { rows[row["key"]] = row["value"] }
            return rows
        }) ?? [:]
        return StolFile.Labels(release: rows["release"] ?? "unknown", idNamespace: rows["id_namespace"] ?? "unknown")
    }

    /// Every case, from the valid database at `database` (a copy is edited in `scratch`).
    public static func cases(database: String, key: Ed25519.PrivateKey, scratch: String) throws -> [StolCorpusCase] {
        let sqlite = try [UInt8](Data(contentsOf: URL(fileURLWithPath: database)))
        let labels0 = self.labels(of: sqlite)
        let valid = sign(sqlite, key: key)
        precondition(valid.count > 4096 && valid[7] == 2, "the corpus starts from a version 2 file")
        var cases: [StolCorpusCase] = []
        func add(_ name: String, _ bytes: [UInt8], _ code: String, _ check: String? = nil, service: String? = nil) {
            cases.append(StolCorpusCase(name: name, bytes: bytes, code: code, check: check, serviceCode: service))
        }
        func flipped(_ offset: Int) -> [UInt8] {
            var bytes = valid
            bytes[offset] ^= 0x01
            return bytes
        }
        // Size, magic, header (version 2: 288 bytes).
        add("empty", [], "FILE_TOO_SMALL", "file_size")
        add("one byte of the magic", Array("S".utf8), "FILE_TOO_SMALL", "header")
        add("one byte, not the magic", Array("X".utf8), "NOT_A_STOL_FILE", "magic")
        add("a zip file", [0x50, 0x4b, 0x03, 0x04] + [UInt8](repeating: 0, count: 200), "NOT_A_STOL_FILE", "magic")
        for cut in [4, 8, 12, 44, 107, 108, 200, 287] {
            add("truncated at \(cut) bytes", Array(valid.prefix(cut)), "FILE_TOO_SMALL", "header")
        }
        for cut in [288, 289, 4096, valid.count / 2, valid.count - 1] {
            add("truncated at \(cut) bytes", Array(valid.prefix(cut)), "CHECKSUM_MISMATCH", "sha_256_checksum")
        }
        add("magic byte 0 changed", flipped(0), "NOT_A_STOL_FILE", "magic")
        add("magic byte 7 changed (format version 3)", flipped(7), "NOT_A_STOL_FILE", "magic")
        add("schema version byte changed", flipped(8), "SIGNATURE_INVALID", "signature")
        add("kind byte changed", flipped(12), "SIGNATURE_INVALID", "signature")
        add("key id byte changed", flipped(16), "UNKNOWN_KEY", "signature")
        add("content size byte changed", flipped(24), "SIGNATURE_INVALID", "signature")
        add("payload digest byte changed", flipped(32), "CHECKSUM_MISMATCH", "sha_256_checksum")  // the same through the service: one check order
        add("content digest byte changed", flipped(64), "SIGNATURE_INVALID", "signature")
        add("release byte changed", flipped(128), "SIGNATURE_INVALID", "signature")
        add("id namespace byte changed", flipped(192), "SIGNATURE_INVALID", "signature")
        add("signature byte 0 changed", flipped(224), "SIGNATURE_INVALID", "signature")
        add("signature byte 63 changed", flipped(287), "SIGNATURE_INVALID", "signature")
        add("payload byte changed", flipped(288), "CHECKSUM_MISMATCH", "sha_256_checksum")
        add("last payload byte changed", flipped(valid.count - 1), "CHECKSUM_MISMATCH", "sha_256_checksum")
        add("appended byte, not re-signed", valid + [0], "CHECKSUM_MISMATCH", "sha_256_checksum")

        // Keys (format version 2 names its key; version 1 is tried with every key).
        add("signed by a key trusted nowhere", sign(sqlite, key: CorpusKeys.untrusted), "UNKNOWN_KEY", "signature")
        add("signed by a key past its not-after", sign(sqlite, key: CorpusKeys.expired), "KEY_EXPIRED", "signature")
        add("signed by a revoked key whose file is installed", sign(sqlite, key: CorpusKeys.revokedPresent), "KEY_REVOKED", "signature")
        add("signed by a key revoked by id alone", sign(sqlite, key: CorpusKeys.revokedAbsent), "KEY_REVOKED", "signature")
        add("names the trusted key, signed by another", sign(sqlite, key: CorpusKeys.untrusted) { $0.keyID = key.publicKey.keyID },
            "SIGNATURE_INVALID", "signature")
        add("version 1, signed by a key trusted nowhere", signVersion1(sqlite, key: CorpusKeys.untrusted), "SIGNATURE_INVALID", "signature")
        add("version 1, signed by a revoked key", signVersion1(sqlite, key: CorpusKeys.revokedPresent), "KEY_REVOKED", "signature")
        add("version 1, signed by an expired key", signVersion1(sqlite, key: CorpusKeys.expired), "KEY_EXPIRED", "signature")

        // Version 2 headers that are validly signed and wrong.
        add("signed content digest is not the database's", sign(sqlite, key: key) { $0.contentSHA256[0] ^= 1 },
            "CONTENT_HASH_MISMATCH", "content_sha_256")
        add("signed content size is one byte short", sign(sqlite, key: key) { $0.contentSize -= 1 },
            "CONTENT_HASH_MISMATCH", "content_sha_256")
        add("signed content size over 4 GiB", sign(sqlite, key: key) { $0.contentSize = 5 << 30 }, "DECOMPRESSION_LIMIT", "decompression")
        add("signed kind 3", sign(sqlite, key: key) { $0.kindByte = 3 }, "DATABASE_CORRUPT", "header")
        add("signed reserved byte not zero", sign(sqlite, key: key) { $0.reserved[1] = 7 }, "DATABASE_CORRUPT", "header")
        add("signed release ../etc", sign(sqlite, key: key) { $0.releaseField = Array("../etc".utf8) + [UInt8](repeating: 0, count: 26) },
            "DATABASE_CORRUPT", "header")
        add("a whole database naming a base", sign(sqlite, key: key) { $0.baseReleaseField[0] = UInt8(ascii: "x") },
            "DATABASE_CORRUPT", "header")
        precondition(labels0.release != "1999.1.1")
        add("signed release is not the database's", sign(sqlite, key: key) { $0.releaseField = Array("1999.1.1".utf8) + [UInt8](repeating: 0, count: 24) },
            "DATABASE_CORRUPT", "provenance")
        // "unknown" is never checked against the installed namespaces, so the verifier's check is reached.
        let otherNamespace = labels0.idNamespace == "unknown" ? "ncbi-taxid" : "unknown"
        add("signed id namespace is not the database's",
            sign(sqlite, key: key) { $0.idNamespaceField = Array(otherNamespace.utf8) + [UInt8](repeating: 0, count: 32 - otherNamespace.utf8.count) },
            "DATABASE_CORRUPT", "provenance")
        add("a delta of a release that is not installed",
            try signDelta(base: sqlite, to: sqlite, key: key) { $0.baseReleaseField = Array("0000.0.1".utf8) + [UInt8](repeating: 0, count: 24) },
            "DELTA_BASE_MISMATCH", nil)

        // Validly signed, wrong inside.
        let current = UInt32(TaxonomySchema.currentVersion), tooNew = current + 1
        add("signed header claims schema version \(tooNew)", sign(sqlite, key: key, schemaVersion: tooNew), "INCOMPATIBLE_SCHEMA", "schema_version")
        add("signed header claims schema version 0", sign(sqlite, key: key, schemaVersion: 0), "INCOMPATIBLE_SCHEMA", "schema_version")
        let payload = Gzip.compress(sqlite, level: 6)
        let labels = labels0
        func signedPayload(_ payload: [UInt8], contentSize: UInt64? = nil) -> [UInt8] {
            let content = StolHeader.Content(schemaVersion: current, size: contentSize ?? UInt64(sqlite.count), sha256: SHA256.hash(sqlite),
                                              release: labels.release, idNamespace: labels.idNamespace)
            return StolFile.assemble(payload: payload, content: content, signingKey: key)
        }
        add("gzip bomb (over 4 GiB of output, signed size 4 GiB)", signedPayload(bomb(), contentSize: StolFile.maximumDecompressedBytes),
            "DECOMPRESSION_LIMIT", "decompression")
        add("gzip bomb past the signed size", signedPayload(bomb()), "CONTENT_HASH_MISMATCH", "content_sha_256")
        add("trailing garbage after the gzip member", signedPayload(payload + Array("garbage".utf8)), "DATABASE_CORRUPT", "decompression")
        add("trailing zeros after the gzip member", signedPayload(payload + [0, 0, 0, 0]), "DATABASE_CORRUPT", "decompression")
        add("a second gzip member", signedPayload(payload + Gzip.compress(Array("more".utf8))), "DATABASE_CORRUPT", "decompression")
        add("truncated gzip member", signedPayload(Array(payload.dropLast(9))), "DATABASE_CORRUPT", "decompression")
        add("body not compressed", signedPayload(sqlite), "DATABASE_CORRUPT", "decompression")
        add("zlib stream instead of gzip", signedPayload(zlibStream(sqlite)), "DATABASE_CORRUPT", "decompression")
        add("gzip of a text file", sign(Array(String(repeating: "not a database\n", count: 100).utf8), key: key),
            "DATABASE_CORRUPT", "sqlite_header")
        add("gzip of a truncated SQLite file", sign(Array(sqlite.prefix(sqlite.count / 2)), key: key), "DATABASE_CORRUPT", nil)

        // Edited databases, signed.
        func edited(_ name: String, _ edit: (Database) throws -> Void) throws -> [UInt8] {
            let path = scratch + "/corpus-\(cases.count).sqlite"
            try Data(sqlite).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db in try edit(db) }
            try queue.close()
            return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        }
        let rowTooNew = try edited("row too new") { try $0.execute(sql: "UPDATE schema_version SET version = \(tooNew)") }
        add("database says schema version \(tooNew), signed header \(current)", sign(rowTooNew, key: key),
            "DATABASE_CORRUPT", "database_schema_version")
        add("too-new schema (database and header \(tooNew))", sign(rowTooNew, key: key, schemaVersion: tooNew),
            "INCOMPATIBLE_SCHEMA", "schema_version")
        add("schema_version with two rows",
            sign(try edited("two rows") { try $0.execute(sql: "INSERT INTO schema_version (version) VALUES (1)") }, key: key),
            "DATABASE_CORRUPT", "database_schema_version")
        add("schema_version empty",
            sign(try edited("empty") { try $0.execute(sql: "DELETE FROM schema_version") }, key: key),
            "DATABASE_CORRUPT", "database_schema_version")
        add("a table missing (traits)",
            sign(try edited("no traits") { try $0.execute(sql: "DROP TABLE traits") }, key: key),
            "DATABASE_CORRUPT", "tables_and_columns")
        add("a column missing (taxa.conservation)",
            sign(try edited("no column") { try $0.execute(sql: "ALTER TABLE taxa DROP COLUMN conservation") }, key: key),
            "DATABASE_CORRUPT", "tables_and_columns")
        add("an index missing (idx_taxa_name)",
            sign(try edited("no index") { try $0.execute(sql: "DROP INDEX idx_taxa_name") }, key: key),
            "DATABASE_CORRUPT", "tables_and_columns")
        add("the FTS table missing",
            sign(try edited("no fts") { try $0.execute(sql: "DROP TABLE fts_taxa") }, key: key),
            "DATABASE_CORRUPT", "tables_and_columns")
        add("an index page overwritten (corrupt b-tree)", sign(try corruptIndexPage(sqlite, scratch: scratch), key: key),
            "DATABASE_CORRUPT", "integrity")
        return cases
    }

    /// A copy of the database at `database`, written to `output`, with an extra table
    /// of `megabytes` MiB of random blobs: still a valid taxonomy database (the server
    /// ignores tables it does not know), but large enough that an import takes a
    /// while, so that a kill or a disconnect can land in the middle of each stage.
    public static func padded(_ database: String, megabytes: Int, to output: String) throws {
        try? FileManager.default.removeItem(atPath: output)
        try FileManager.default.copyItem(atPath: database, toPath: output)
        let queue = try DatabaseQueue(path: output)
        try queue.write { db in
            // Rows of 1 KiB with an indexed key: `PRAGMA integrity_check` walks the
            // index row by row, as it does the real databases' indexes.
            try db.execute(sql: "CREATE TABLE padding (id INTEGER PRIMARY KEY, key BLOB NOT NULL, data BLOB NOT NULL)")
            try db.execute(sql: "CREATE INDEX padding_key ON padding(key)")
            // Incompressible but the same on every run: not a randomised test.
            var generator = SplitMix64(seed: UInt64(megabytes))
            let statement = try db.makeStatement(sql: "INSERT INTO padding (id, key, data) VALUES (?, ?, ?)")
            for id in 0..<megabytes * 1024 {
                let blob = (0..<128).map { _ in generator.next() as UInt64 }
                let data = blob.withUnsafeBytes { Data($0) }
                try statement.execute(arguments: [id, data.prefix(16), data])
            }
        }
        try queue.close()
    }

    /// The database with the root page of `idx_names_type` filled with garbage:
    /// it still opens and its `schema_version` reads, but `PRAGMA integrity_check` fails.
    static func corruptIndexPage(_ sqlite: [UInt8], scratch: String) throws -> [UInt8] {
        let path = scratch + "/corpus-corrupt.sqlite"
        try Data(sqlite).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (root, pageSize) = try DatabaseQueue(path: path).read { db in
            (try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'idx_names_type'") ?? 0,
             try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096)
        }
        precondition(root > 1, "idx_names_type has a root page")
        var bytes = sqlite
        for offset in (root - 1) * pageSize..<root * pageSize { bytes[offset] = 0xAB }
        return bytes
    }

    /// One gzip member that inflates to more than 4 GiB: an SQLite header, then
    /// zeros. Built from deflate blocks that end in a full flush (which resets the
    /// compressor), so one block of 1 MiB of zeros can be repeated as is; about 4 MB.
    public static func bomb(outputBytes: UInt64 = 4 * 1024 * 1024 * 1024 + 64 * 1024 * 1024) -> [UInt8] {
        let mebibyte = 1 << 20
        var first = [UInt8](repeating: 0, count: mebibyte)
        let magic = Array("SQLite format 3".utf8) + [0]
        first.replaceSubrange(0..<magic.count, with: magic)
        let deflater = RawDeflater(gzip: true)
        var output = deflater.run(first, flush: Z_FULL_FLUSH)
        let zeros = [UInt8](repeating: 0, count: mebibyte)
        let block = deflater.run(zeros, flush: Z_FULL_FLUSH)
        precondition(deflater.run(zeros, flush: Z_FULL_FLUSH) == block, "a full flush makes blocks repeatable")
        for _ in 2..<Int(outputBytes / UInt64(mebibyte)) { output += block }
        // The end of the stream (its CRC and size are wrong, but a verifier stops at the limit first).
        output += deflater.run([], flush: Z_FINISH)
        return output
    }

    /// A zlib (RFC 1950) stream: valid deflate, but not the gzip the format requires.
    static func zlibStream(_ bytes: [UInt8]) -> [UInt8] {
        RawDeflater(gzip: false).run(bytes, flush: Z_FINISH)
    }
}

/// zlib's deflate with a chosen flush per call (the project's `GzipDeflater` only finishes).
final class RawDeflater {
    private var stream = z_stream()

    init(gzip: Bool) {
        let status = deflateInit2_(&stream, 6, Z_DEFLATED, gzip ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK)
    }

    deinit { deflateEnd(&stream) }

    func run(_ input: [UInt8], flush: Int32) -> [UInt8] {
        var output: [UInt8] = []
        var input = input
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputBuffer.count)
            repeat {
                buffer.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = UInt32(out.count)
                    _ = deflate(&stream, flush)
                    output.append(contentsOf: out[0..<(out.count - Int(stream.avail_out))])
                }
            } while stream.avail_out == 0
        }
        return output
    }
}
