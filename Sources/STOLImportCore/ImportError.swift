import STOLFormat
import STOLProtocol

/// Everything an import, an activation or a verification can fail with, each
/// reported to the client as one sentence naming the check, with a stable code.
public enum ImportError: Error, Equatable, ProtocolErrorConvertible {
    case permissionDenied(String)
    case missingFileDescriptor
    /// The format checks of the `.stol` checklist (`protocol/STOL-FORMAT.md` §6), run by
    /// the verifier on the whole file and by the coordinator on the header.
    case verification(StolFormatError)
    /// A database check after decompression (schema version row, integrity, shape).
    case databaseCorrupt(check: DatabaseCheck, detail: String)
    /// The verifier (or the coordinator) has no trusted public key at all.
    case noTrustedKey(String)
    case importInProgress
    /// A validly signed database older than the installed reference.
    case downgradeRefused(installed: String, offered: String)
    /// The disk is full (the staging directory, or the verifier's temporary file).
    case noSpace(String)
    /// There is no reference database to activate.
    case notInstalled
    /// The named release is not installed (`installed`: the ones that are).
    case releaseNotInstalled(String, installed: [String])
    /// Several releases are installed and the request named none.
    case releaseNotNamed(installed: [String])
    /// The file's ids are another namespace's than the installed databases'.
    case idNamespaceMismatch(installed: String, offered: String)
    /// A delta's base release is not installed (`installed` nil), or is installed with other content.
    case deltaBaseMismatch(baseRelease: String, installedSHA256: String?)
    /// What the verifier sent is not what the file's header signs (the coordinator's own check).
    case contentMismatch(String)
    /// A format version 1 file where the operator has not allowed version 1: it signs no
    /// content the coordinator can check, so what it installs would be the verifier's word.
    case formatVersion1NotAllowed
    case verifierUnavailable(String)
    case verifierFailed(String)
    /// An unexpected I/O failure in the coordinator (staging, rename, activation state).
    case storage(String)
    /// The client (or, for the verifier, the coordinator) closed the connection.
    case cancelled(String)

    /// The database checks of the verifier, after the format checks.
    public enum DatabaseCheck: String, Sendable, Equatable {
        case sqliteHeader = "SQLite header"
        case schemaVersionRow = "database schema version"
        case integrity = "integrity"
        case shape = "tables and columns"
        case provenance = "provenance"
    }

    public var protocolError: ProtocolError {
        switch self {
        case .permissionDenied(let detail): ProtocolError(.permissionDenied, detail)
        case .missingFileDescriptor:
            ProtocolError(.invalidRequest, "this request needs the file's descriptor attached (SCM_RIGHTS)")
        case .verification(let error): Self.protocolError(error)
        case .databaseCorrupt(let check, let detail):
            ProtocolError(.databaseCorrupt, "the \(check.rawValue) check failed: \(detail)",
                          details: ["check": check.detailName])
        case .noTrustedKey(let detail):
            ProtocolError(.unavailable, "the verifier has no trusted public key: \(detail)")
        case .importInProgress: ProtocolError(.busy, "another import is running; try again when it has finished")
        case .downgradeRefused(let installed, let offered):
            ProtocolError(.downgradeRefused,
                          "the file was built at \(offered), before the installed reference database (\(installed)); " +
                          "import it with --allow-downgrade to go back to it",
                          details: ["installed_build_time": installed, "offered_build_time": offered])
        case .noSpace(let detail): ProtocolError(.noSpace, "not enough disk space: \(detail)")
        case .notInstalled:
            ProtocolError(.notFound, "no reference database is installed; import one with `stol-client db import FILE`")
        case .releaseNotInstalled(let release, let installed):
            ProtocolError(.releaseNotInstalled,
                          "the release \(release) is not installed (installed: \(installed.isEmpty ? "none" : installed.joined(separator: ", ")))",
                          details: ["release": release])
        case .releaseNotNamed(let installed):
            ProtocolError(.invalidRequest,
                          "several releases are installed (\(installed.joined(separator: ", "))); name the one you mean")
        case .idNamespaceMismatch(let installed, let offered):
            ProtocolError(.idNamespaceMismatch,
                          "the file's taxon ids are \(offered), the installed databases' are \(installed): the same number "
                          + "would name another taxon for every user; import it with --allow-id-namespace-change if that is meant",
                          details: ["installed_namespace": installed, "offered_namespace": offered])
        case .deltaBaseMismatch(let base, let installed):
            if let installed {
                ProtocolError(.deltaBaseMismatch,
                              "the delta applies to release \(base) as it was signed, and the installed \(base) is another build (SHA-256 \(installed.prefix(16))…); import the full release instead",
                              details: ["base_release": base, "installed_sha256": installed])
            } else {
                ProtocolError(.deltaBaseMismatch,
                              "the delta applies to release \(base), which is not installed; import that release or the full new one",
                              details: ["base_release": base])
            }
        case .contentMismatch(let detail):
            ProtocolError(.contentHashMismatch, "the database the verifier produced is not the signed content: \(detail)",
                          details: ["check": "content_sha_256"])
        case .formatVersion1NotAllowed:
            ProtocolError(.formatVersionNotAllowed,
                          "the file is .stol format version 1, which signs no content this machine can check against "
                          + "what the verifier produces; re-sign the database as version 2 (stol-pipeline sign), or let "
                          + "stol-importd take version 1 with STOL_ALLOW_FORMAT_1=yes (the weaker guarantee)",
                          details: ["format_version": "1"])
        case .verifierUnavailable(let detail): ProtocolError(.unavailable, "the verifier is not reachable: \(detail)")
        case .verifierFailed(let detail): ProtocolError(.internal, "the verifier failed: \(detail)")
        case .storage(let detail): ProtocolError(.internal, "installing failed: \(detail)")
        case .cancelled(let detail): ProtocolError(.internal, "cancelled: \(detail)")
        }
    }

    /// One sentence naming the check of `protocol/STOL-FORMAT.md` §6 that failed.
    static func protocolError(_ error: StolFormatError) -> ProtocolError {
        let check: String
        switch error {
        case .fileUnreadable: check = "readable file"
        case .fileTooSmall(let bytes) where bytes == 0: check = "file size"
        case .fileTooLarge: check = "file size"
        case .fileTooSmall, .truncatedHeader, .malformedHeader: check = "header"
        case .notAStolFile, .badMagic: check = "magic"
        case .checksumMismatch: check = "SHA-256 checksum"
        case .signatureInvalid, .unknownKey, .keyExpired, .keyRevoked: check = "signature"
        case .contentHashMismatch: check = "content SHA-256"
        case .deltaBaseMismatch: check = "delta base"
        case .incompatibleSchema: check = "schema version"
        case .decompressionLimit, .corruptPayload: check = "decompression"
        case .outputFailed, .cancelled: return ProtocolError(.internal, error.message)
        }
        var details = ["check": check.replacingOccurrences(of: " ", with: "_").replacingOccurrences(of: "-", with: "_").lowercased()]
        switch error {
        case .fileTooSmall(let bytes): details["bytes"] = String(bytes)
        case .truncatedHeader(let bytes): details["bytes"] = String(bytes)
        case .fileTooLarge(let bytes, let limit):
            details["bytes"] = String(bytes)
            details["limit"] = String(limit)
        case .incompatibleSchema(let found, let supported):
            details["found"] = String(found)
            details["supported"] = "\(supported.lowerBound)-\(supported.upperBound)"
        case .decompressionLimit(let limit): details["limit"] = String(limit)
        default: details.merge(error.details) { $1 }
        }
        return ProtocolError(Self.code(error.code), "the \(check) check failed: \(error.message)", details: details)
    }

    private static func code(_ code: StolFormatError.Code) -> Stol_V1_ErrorCode {
        switch code {
        case .fileUnreadable: .fileUnreadable
        case .fileTooSmall: .fileTooSmall
        case .fileTooLarge: .fileTooLarge
        case .notAStolFile: .notAStolFile
        case .checksumMismatch: .checksumMismatch
        case .signatureInvalid: .signatureInvalid
        case .unknownKey: .unknownKey
        case .keyExpired: .keyExpired
        case .keyRevoked: .keyRevoked
        case .contentHashMismatch: .contentHashMismatch
        case .deltaBaseMismatch: .deltaBaseMismatch
        case .incompatibleSchema: .incompatibleSchema
        case .decompressionLimit: .decompressionLimit
        case .databaseCorrupt: .databaseCorrupt
        case .internal: .internal
        }
    }
}

extension ImportError.DatabaseCheck {
    /// The `check` detail: snake_case.
    var detailName: String {
        switch self {
        case .sqliteHeader: "sqlite_header"
        case .schemaVersionRow: "database_schema_version"
        case .integrity: "integrity"
        case .shape: "tables_and_columns"
        case .provenance: "provenance"
        }
    }
}

/// Size limits of the import (`protocol/STOL-FORMAT.md` §5), as the format enforces them.
public enum ImportLimits {
    public static let maximumFileBytes = StolFileLimits.maximumFileBytes
    public static let maximumDecompressedBytes = StolFileLimits.maximumDecompressedBytes
    /// The most SQLite bytes one `VerifiedChunk` carries.
    public static let chunkBytes = 1024 * 1024
}
