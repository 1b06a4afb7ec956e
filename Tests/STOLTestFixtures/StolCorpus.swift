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
}

public enum StolCorpus {
    /// A `.stol` file of `sqlite` (deflate level 6, like `make build-db`).
    public static func sign(_ sqlite: [UInt8], key: Ed25519.PrivateKey,
                            schemaVersion: UInt32 = UInt32(TaxonomySchema.currentVersion)) -> [UInt8] {
        StolFile.assemble(payload: Gzip.compress(sqlite, level: 6), schemaVersion: schemaVersion, signingKey: key)
    }

    /// Every case, from the valid database at `database` (a copy is edited in `scratch`).
    public static func cases(database: String, key: Ed25519.PrivateKey, scratch: String) throws -> [StolCorpusCase] {
        let sqlite = try [UInt8](Data(contentsOf: URL(fileURLWithPath: database)))
        let valid = sign(sqlite, key: key)
        var cases: [StolCorpusCase] = []
        func add(_ name: String, _ bytes: [UInt8], _ code: String, _ check: String? = nil) {
            cases.append(StolCorpusCase(name: name, bytes: bytes, code: code, check: check))
        }
        func flipped(_ offset: Int) -> [UInt8] {
            var bytes = valid
            bytes[offset] ^= 0x01
            return bytes
        }
        // Size, magic, header.
        add("empty", [], "FILE_TOO_SMALL", "file_size")
        add("one byte of the magic", Array("S".utf8), "FILE_TOO_SMALL", "header")
        add("one byte, not the magic", Array("X".utf8), "NOT_A_STOL_FILE", "magic")
        add("a zip file", [0x50, 0x4b, 0x03, 0x04] + [UInt8](repeating: 0, count: 200), "NOT_A_STOL_FILE", "magic")
        for cut in [4, 8, 12, 44, 107] {
            add("truncated at \(cut) bytes", Array(valid.prefix(cut)), "FILE_TOO_SMALL", "header")
        }
        for cut in [108, 109, 4096, valid.count / 2, valid.count - 1] {
            add("truncated at \(cut) bytes", Array(valid.prefix(cut)), "CHECKSUM_MISMATCH", "sha_256_checksum")
        }
        add("magic byte 0 changed", flipped(0), "NOT_A_STOL_FILE", "magic")
        add("magic byte 7 changed", flipped(7), "NOT_A_STOL_FILE", "magic")
        add("schema version byte changed", flipped(8), "SIGNATURE_INVALID", "signature")
        add("digest byte changed", flipped(12), "CHECKSUM_MISMATCH", "sha_256_checksum")
        add("signature byte 0 changed", flipped(44), "SIGNATURE_INVALID", "signature")
        add("signature byte 63 changed", flipped(107), "SIGNATURE_INVALID", "signature")
        add("payload byte changed", flipped(108), "CHECKSUM_MISMATCH", "sha_256_checksum")
        add("last payload byte changed", flipped(valid.count - 1), "CHECKSUM_MISMATCH", "sha_256_checksum")
        add("appended byte, not re-signed", valid + [0], "CHECKSUM_MISMATCH", "sha_256_checksum")
        add("signed with another key", sign(sqlite, key: .generate()), "SIGNATURE_INVALID", "signature")

        // Validly signed, wrong inside.
        let current = UInt32(TaxonomySchema.currentVersion), tooNew = current + 1
        add("signed header claims schema version \(tooNew)", sign(sqlite, key: key, schemaVersion: tooNew), "INCOMPATIBLE_SCHEMA", "schema_version")
        add("signed header claims schema version 0", sign(sqlite, key: key, schemaVersion: 0), "INCOMPATIBLE_SCHEMA", "schema_version")
        let payload = Gzip.compress(sqlite, level: 6)
        func signedPayload(_ payload: [UInt8]) -> [UInt8] {
            StolFile.assemble(payload: payload, schemaVersion: current, signingKey: key)
        }
        add("gzip bomb (over 4 GiB of output)", signedPayload(bomb()), "DECOMPRESSION_LIMIT", "decompression")
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
