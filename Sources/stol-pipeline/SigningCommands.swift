import ArgumentParser
import Foundation
import STOLModel
import GRDB  // through STOLPipeline's dependency: only to read schema_version of the database to sign
import STOLContainer
import STOLFormat

// The `.stol` container commands: keygen, sign, delta, verify (protocol/STOL-FORMAT.md).
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
            protocol/STOL-FORMAT.md §7, and prints the key id (16 hex digits: the first 8 bytes \
            of SHA-256 of the public key), which files signed with it carry and errors name. \
            --not-after DATE (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ) writes the date after which \
            verifiers stop trusting the key into the public key file. The private key is never \
            printed. Existing files are not replaced unless --force is given.
            """)

    @Option(name: .customLong("private-key"), help: "Path of the private key file to write.")
    var privateKey: String

    @Option(name: .customLong("public-key"), help: "Path of the public key file to write (default: <private-key>.pub).")
    var publicKey: String?

    @Option(name: .customLong("not-after"), help: "Last day (UTC) verifiers trust the key: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ.")
    var notAfter: String?

    @Flag(help: "Replace existing key files.")
    var force = false

    func run() throws {
        if let notAfter, PublicKeyFile.parseDate(notAfter) == nil {
            throw ValidationError("--not-after: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, got \(notAfter)")
        }
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
            try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(key.publicKey, notAfter: notAfter), to: publicPath,
                                                  overwrite: force)
        } catch {
            throw fail("keygen failed: \(error)", status: 2)
        }
        print("""
            wrote private key \(privateKey) (mode 0600: keep it secret, never commit it)
            wrote public key  \(publicPath)\(notAfter.map { " (trusted until \($0))" } ?? "")
            key id:     \(key.publicKey.keyID)
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
            version goes into the header, with the key id, the size and SHA-256 of the database, \
            and the release and id namespace of its provenance table ("unknown" without one): \
            format version 2. --format-version 1 writes the legacy layout (for tests of old files). \
            The output is written atomically and then verified.
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

    @Option(name: .customLong("format-version"), help: "The .stol format version to write: 2, or the legacy 1.")
    var formatVersion: Int = 2

    func run() throws {
        guard (1...9).contains(level) else { throw ValidationError("--level must be between 1 and 9") }
        guard (1...2).contains(formatVersion) else { throw ValidationError("--format-version must be 1 or 2") }
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
        let labels: StolFile.Labels
        do {
            labels = try Self.labels(input)
        } catch {
            throw fail("sign failed: \(input): \(error)", status: 1)
        }
        do {
            let written = try StolFile.write(sqliteAt: input, to: output, schemaVersion: version,
                                             signingKey: signingKey, level: level, labels: formatVersion == 2 ? labels : nil)
            _ = try StolFile.verify(path: output, trust: .trusting(signingKey.publicKey),
                                    options: .init(supportedSchemaVersions: version...version))
            print("""
                signed \(output): \(written.fileBytes) bytes (database \(written.inputBytes) bytes), format version \(formatVersion)
                  schema version \(version)
                  release \(labels.release), ids \(labels.idNamespace)
                  payload SHA-256 \(written.header.payloadSHA256.hexString)
                  content SHA-256 \(formatVersion == 2 ? written.header.contentSHA256.hexString : "(not in format version 1)")
                  key id \(signingKey.publicKey.keyID)
                """)
        } catch {
            throw fail("sign failed: \(error)", status: 1)
        }
    }

    /// The release and id namespace of the database's provenance ("unknown" without one).
    static func labels(_ path: String) throws -> StolFile.Labels {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let rows: [String: String] = try queue.read { db in
            guard try db.tableExists("provenance") else { return [:] }
            return Dictionary(try Row.fetchAll(db, sql: "SELECT key, value FROM provenance").map { ($0["key"], $0["value"]) },
                              uniquingKeysWith: { $1 })
        }
        let labels = StolFile.Labels(release: rows["release"] ?? ReleaseName.unknown,
                                     idNamespace: rows["id_namespace"] ?? ReleaseName.unknown)
        guard StolHeader.isValidRelease(labels.release), StolHeader.isValidText(labels.idNamespace) else {
            throw NotSignable(description: "the release \"\(labels.release)\" or id namespace \"\(labels.idNamespace)\" cannot be signed into a header (1–32 of A–Z a–z 0–9 . _ + -, the first a letter or digit; a release never 'bundled')")
        }
        return labels
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
            checks the database itself (SQLite header, schema_version row, PRAGMA integrity_check \
            or, for a row delta's result, quick_check; tables, columns and indexes); this command does not: check the database that \
            --extract writes (atomically, only if every check passes) with SQLite.
            """)

    @Option(name: .customLong("public-key"),
            help: "A trusted public key file, or a directory of *.pub files with an optional revoked list (repeatable).")
    var publicKey: [String]

    @Option(help: "A delta's base: the installed database it applies to.")
    var base: String?

    @Option(help: "Write the decompressed (or, for a delta, the applied), verified SQLite database here.")
    var extract: String?

    @Option(name: .customLong("max-schema-version"), help: "Newest schema version accepted.")
    var maxSchemaVersion = UInt32(TaxonomySchema.currentVersion)

    @Argument(help: "The .stol file.")
    var file: String

    func run() throws {
        guard maxSchemaVersion >= 1 else { throw ValidationError("--max-schema-version must be at least 1") }
        guard !publicKey.isEmpty else { throw ValidationError("--public-key is required") }
        let keys = TrustedKeys.load(locations: publicKey)
        for problem in keys.problems { FileHandle.standardError.write(Data("stol-pipeline: not trusted: \(problem)\n".utf8)) }
        // As the daemons: a revocation list that cannot be read whole leaves no key trusted.
        guard keys.revocationProblems.isEmpty else {
            throw fail("verify failed: the revocation list cannot be read whole: \(keys.revocationProblems.joined(separator: "; "))", status: 2)
        }
        guard !keys.entries.isEmpty else { throw fail("verify failed: no readable public key in \(publicKey.joined(separator: ", "))", status: 2) }
        print("verifying \(file) with key\(keys.trustedIDs.count == 1 ? "" : "s") \(keys.trustedIDs.map(\.description).joined(separator: ", "))")
        do {
            let verified = try StolFile.verify(
                path: file, trust: keys, options: .init(supportedSchemaVersions: 1...maxSchemaVersion),
                basePath: base, extractTo: extract
            ) { event in
                guard case .passed(let check) = event else { return }
                print("  ok  \(Self.describe(check))")
            }
            if verified.header.formatVersion == 2 {
                // What the header signs, not what the database says of itself: this command runs
                // no database checks (the verifier's provenance check compares the two on import).
                let kind = verified.header.kind?.isDelta == true ? "a delta from \(verified.header.baseRelease) to" : "a database of"
                print("  ok  the signed header names \(kind) release \(verified.header.release), ids \(verified.header.idNamespace), "
                      + "signed by \(verified.keyID) (the database's own provenance is checked on import)")
            } else {
                print("  ok  format version 1 (read until 2027-06-30), signed by \(verified.keyID)")
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
        case .magic: "magic STOL\\0DB (format version 1 or 2)"
        case .header(let version): "header complete (schema version field \(version))"
        case .checksum(let digest): "payload SHA-256 \(digest.hexString) matches the header"
        case .signature: "key trusted, not revoked or expired; Ed25519 signature over the header"
        case .schemaVersion(let version): "schema version \(version) supported"
        case .decompression(let bytes, let digest):
            "decompressed \(bytes) bytes (limit \(StolFile.maximumDecompressedBytes)), SHA-256 \(digest.hexString) (the signed content in version 2)"
        }
    }
}

/// `stol-pipeline delta`.
struct Delta: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a signed delta that turns one release's database into another's.",
        discussion: """
            A delta (protocol/STOL-FORMAT.md §10) is a .stol file whose version 2 header signs the \
            base's SHA-256 and release and the result's size, SHA-256, release and id namespace. \
            Its payload is a zstd frame made with the base database as its reference prefix (zstd's \
            --patch-from), of one of two things: the rows that changed, as an SQLite patchset (kind 3, \
            a row delta: --kind rows), or the new database's bytes (kind 2: --kind bytes). A row delta \
            is a few times smaller (the pipeline lays every release out anew, so most pages' bytes \
            move while few rows change); it needs both databases written by this pipeline's schema \
            (the same tables, each with a primary key), and its result, the base's rows changed and \
            written with VACUUM INTO, must be the new database byte for byte: the command checks that \
            by applying the delta. --kind auto (the default) writes a row delta where it can and \
            says why when it writes a byte delta instead. `stol-client db import DELTA` applies \
            either to the installed base in the sandboxed verifier; it is refused for any other base \
            (DELTA_BASE_MISMATCH) and changes nothing when applied twice. Both databases must be at \
            most 2 GiB (zstd's window).
            """)

    @Option(help: "Private key file (mode 0600). Default: $\(SigningKeyFile.environmentVariable).")
    var key: String?

    @Option(help: "The database the delta applies to (the release installed now).")
    var base: String

    @Option(help: "The database the delta produces (the new release).")
    var input: String

    @Option(help: "The delta file to write (replaced atomically).")
    var output: String

    @Option(help: "zstd level, 1…19 (higher: smaller and slower).")
    var level: Int32 = 12

    @Option(help: "rows (kind 3), bytes (kind 2), or auto: rows where the two databases allow it, else bytes.")
    var kind: String = "auto"

    func run() throws {
        guard (1...19).contains(level) else { throw ValidationError("--level must be between 1 and 19") }
        guard ["rows", "bytes", "auto"].contains(kind) else { throw ValidationError("--kind must be rows, bytes or auto") }
        let signingKey: Ed25519.PrivateKey
        do {
            signingKey = try SigningKeyFile.loadPrivateKey(path: key, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw fail("delta failed: \(error)", status: 2)
        }
        let baseLabels: StolFile.Labels, labels: StolFile.Labels, version: UInt32
        do {
            _ = try Sign.databaseSchemaVersion(base)  // the base must be a database sign would accept
            baseLabels = try Sign.labels(base)
            version = try Sign.databaseSchemaVersion(input)
            labels = try Sign.labels(input)
        } catch {
            throw fail("delta failed: \(error)", status: 1)
        }
        guard baseLabels.idNamespace == labels.idNamespace else {
            throw fail("delta failed: the base's ids are \(baseLabels.idNamespace), the new database's \(labels.idNamespace)", status: 1)
        }
        do {
            let started = Date()
            func write(_ kind: StolHeader.Kind) throws -> StolFile.Written {
                let written = try StolFile.writeDelta(base: base, baseRelease: baseLabels.release, input: input, to: output,
                                                      schemaVersion: version, signingKey: signingKey, labels: labels,
                                                      level: level, kind: kind)
                _ = try StolFile.verify(path: output, trust: .trusting(signingKey.publicKey),
                                        options: .init(supportedSchemaVersions: version...version), basePath: base)
                return written
            }
            let written: StolFile.Written
            switch kind {
            case "bytes": written = try write(.delta)
            case "rows": written = try write(.rowDelta)
            default:
                do {
                    written = try write(.rowDelta)
                } catch {
                    FileHandle.standardError.write(Data("stol-pipeline: no row delta (\(error)); writing a byte delta\n".utf8))
                    written = try write(.delta)
                }
            }
            let form = written.header.kind == .rowDelta ? "row delta (kind 3)" : "byte delta (kind 2)"
            print("""
                wrote \(form) \(output): \(written.fileBytes) bytes for a database of \(written.inputBytes) bytes \
                (\(String(format: "%.1f", Date().timeIntervalSince(started))) s, verified by applying it)
                  from release \(baseLabels.release) (SHA-256 \(written.header.baseSHA256.hexString))
                  to release \(labels.release), ids \(labels.idNamespace) (SHA-256 \(written.header.contentSHA256.hexString))
                  key id \(signingKey.publicKey.keyID)
                """)
        } catch {
            throw fail("delta failed: \(error)", status: 1)
        }
    }
}
