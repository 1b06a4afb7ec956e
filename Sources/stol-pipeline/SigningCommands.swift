import ArgumentParser
import Foundation
import STOLModel
import GRDB  // through STOLPipeline's dependency: only to read schema_version of the database to sign
import STOLContainer
import STOLFormat

// The `.stol` container commands: keygen, sign, verify (protocol/STOL-FORMAT.md).
// Exit status: 0 success; 1 the file was refused or could not be written (the
// error's code is printed, e.g. CHECKSUM_MISMATCH); 2 a key problem; 64 usage.

private func fail(_ message: String, status: Int32) -> ExitCode {
    FileHandle.standardError.write(Data("stol-pipeline: \(message)\n".utf8))
    return ExitCode(status)
}

/// `stol-pipeline keygen`.
struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate an Ed25519 key pair for signing .stol files.",
        discussion: """
            Writes the private key (mode 0600) and the public key in the formats of \
            protocol/STOL-FORMAT.md §7. The private key is never printed. Existing files \
            are not replaced unless --force is given.
            """)

    @Option(name: .customLong("private-key"), help: "Path of the private key file to write.")
    var privateKey: String

    @Option(name: .customLong("public-key"), help: "Path of the public key file to write (default: <private-key>.pub).")
    var publicKey: String?

    @Flag(help: "Replace existing key files.")
    var force = false

    func run() throws {
        let publicPath = publicKey ?? privateKey + ".pub"
        guard publicPath != privateKey else { throw ValidationError("--public-key must differ from --private-key") }
        if !force {
            for path in [privateKey, publicPath] where FileManager.default.fileExists(atPath: path) {
                throw fail("\(path) exists; pass --force to replace it", status: 1)
            }
        }
        let key = Ed25519.PrivateKey.generate()
        do {
            try SigningKeyFile.writePrivateKey(key, to: privateKey, overwrite: force)
            try SigningKeyFile.writePublicKey(key.publicKey, to: publicPath, overwrite: force)
        } catch {
            throw fail("keygen failed: \(error)", status: 2)
        }
        print("""
            wrote private key \(privateKey) (mode 0600: keep it secret, never commit it)
            wrote public key  \(publicPath)
            public key: \(key.publicKey.bytes.hexString)
            """)
    }
}

/// `stol-pipeline sign`.
struct Sign: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compress and sign a taxonomy database into a .stol reference database file.",
        discussion: """
            The private key comes from --key FILE, else from the environment variable \
            \(SigningKeyFile.environmentVariable) (the key file's text). The input must be a SQLite \
            database (not in WAL mode) whose schema_version table holds exactly one row; that \
            version goes into the header. The output is written atomically and then verified.
            """)

    @Option(help: "Private key file (mode 0600). Default: $\(SigningKeyFile.environmentVariable).")
    var key: String?

    @Option(help: "The SQLite database to sign.")
    var input: String

    @Option(help: "The .stol file to write (replaced atomically).")
    var output: String

    @Option(name: .customLong("schema-version"),
            help: "Expected schema version; signing fails if the database's schema_version differs.")
    var schemaVersion: UInt32?

    @Option(help: "gzip compression level, 1…9.")
    var level: Int32 = 9

    func run() throws {
        guard (1...9).contains(level) else { throw ValidationError("--level must be between 1 and 9") }
        let signingKey: Ed25519.PrivateKey
        do {
            signingKey = try SigningKeyFile.loadPrivateKey(path: key, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw fail("sign failed: \(error)", status: 2)
        }
        let version: UInt32
        do {
            version = try Self.databaseSchemaVersion(input)
        } catch {
            throw fail("sign failed: \(input): \(error)", status: 1)
        }
        if let schemaVersion, schemaVersion != version {
            throw fail("sign failed: \(input) has schema_version \(version), not \(schemaVersion)", status: 1)
        }
        do {
            let written = try StolFile.write(sqliteAt: input, to: output, schemaVersion: version,
                                             signingKey: signingKey, level: level)
            _ = try StolFile.verify(path: output, publicKey: signingKey.publicKey,
                                    options: .init(supportedSchemaVersions: version...version))
            print("""
                signed \(output): \(written.fileBytes) bytes (database \(written.inputBytes) bytes)
                  schema version \(version)
                  payload SHA-256 \(written.header.payloadSHA256.hexString)
                  public key \(signingKey.publicKey.bytes.hexString)
                """)
        } catch {
            throw fail("sign failed: \(error)", status: 1)
        }
    }

    struct NotSignable: Error, CustomStringConvertible {
        var description: String
    }

    /// The single schema_version row of a SQLite database that is not in WAL mode.
    static func databaseSchemaVersion(_ path: String) throws -> UInt32 {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw NotSignable(description: "cannot be read") }
        let header = try handle.read(upToCount: 100) ?? Data()
        try handle.close()
        guard header.count == 100, header.starts(with: Array("SQLite format 3\0".utf8)) else {
            throw NotSignable(description: "not a SQLite 3 database")
        }
        guard header[18] == 1 && header[19] == 1 else {
            throw NotSignable(description: "the database is in WAL mode; run PRAGMA journal_mode = DELETE first")
        }
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        return try queue.read { db in
            let rows = try Int64.fetchAll(db, sql: "SELECT version FROM schema_version")
            guard rows.count == 1, let version = UInt32(exactly: rows[0]), version >= 1 else {
                throw NotSignable(description: "schema_version must hold exactly one version ≥ 1 (found \(rows))")
            }
            let check = try String.fetchAll(db, sql: "PRAGMA quick_check")
            guard check == ["ok"] else { throw NotSignable(description: "PRAGMA quick_check: \(check.prefix(3))") }
            return version
        }
    }
}

/// `stol-pipeline verify`.
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify a .stol file with the format checks of the service's verifier.",
        discussion: """
            Runs StolFile.verify, the format checks the service's verifier (stol-verifyd) runs \
            first, printing each check as it passes: size limits, magic, header, SHA-256 of the \
            payload, Ed25519 signature, schema version, decompression within 4 GiB. On failure \
            prints the error code (e.g. SIGNATURE_INVALID) and exits 1. The verifier then also \
            checks the database itself (SQLite header, schema_version row, PRAGMA integrity_check, \
            tables, columns and indexes); this command does not: check the database that \
            --extract writes (atomically, only if every check passes) with SQLite.
            """)

    @Option(name: .customLong("public-key"), help: "The trusted public key file.")
    var publicKey: String

    @Option(help: "Write the decompressed, verified SQLite database here.")
    var extract: String?

    @Option(name: .customLong("max-schema-version"), help: "Newest schema version accepted.")
    var maxSchemaVersion = UInt32(TaxonomySchema.currentVersion)

    @Argument(help: "The .stol file.")
    var file: String

    func run() throws {
        guard maxSchemaVersion >= 1 else { throw ValidationError("--max-schema-version must be at least 1") }
        let key: Ed25519.PublicKey
        do {
            key = try SigningKeyFile.loadPublicKey(path: publicKey)
        } catch {
            throw fail("verify failed: \(error)", status: 2)
        }
        print("verifying \(file) with public key \(key.bytes.hexString)")
        do {
            let verified = try StolFile.verify(
                path: file, publicKey: key, options: .init(supportedSchemaVersions: 1...maxSchemaVersion),
                extractTo: extract
            ) { event in
                guard case .passed(let check) = event else { return }
                print("  ok  \(Self.describe(check))")
            }
            if let extract { print("  ok  wrote \(extract) (\(verified.sqliteBytes) bytes)") }
            print("verified \(file)")
        } catch {
            throw fail("verify failed: \(error)", status: 1)
        }
    }

    static func describe(_ check: StolFile.Check) -> String {
        switch check {
        case .fileSize(let bytes): "file size \(bytes) bytes (limits 1 … \(StolFile.maximumFileBytes))"
        case .magic: "magic STOL\\0DB\\x01"
        case .header(let version): "header complete (schema version field \(version))"
        case .checksum(let digest): "payload SHA-256 \(digest.hexString) matches the header"
        case .signature: "Ed25519 signature over magic ‖ schema version ‖ SHA-256"
        case .schemaVersion(let version): "schema version \(version) supported"
        case .decompression(let bytes, let digest):
            "decompressed \(bytes) bytes (limit \(StolFile.maximumDecompressedBytes)), SHA-256 \(digest.hexString)"
        }
    }
}
