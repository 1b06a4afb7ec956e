/// Why a `.stol` file was refused (or could not be written).
///
/// The cases correspond one to one with the protocol's error codes (see ``code``),
/// but STOLFormat does not depend on STOLProtocol: the services map ``Code`` to
/// `stol.v1.ErrorCode` themselves. `protocol/STOL-FORMAT.md` §6 lists which check
/// raises which error, in order.
public enum StolFormatError: Error, Equatable, Sendable {
    /// The file cannot be read (not a regular file, an I/O error, it shrank while being read).
    case fileUnreadable(String)
    /// Empty, or shorter than the 108-byte header.
    case fileTooSmall(bytes: UInt64)
    /// Over the file size limit (2 GiB).
    case fileTooLarge(bytes: UInt64, limit: UInt64)
    /// The first 8 bytes are not the magic `STOL\0DB\x01`.
    case notAStolFile
    /// The SHA-256 of the payload differs from the digest in the header.
    case checksumMismatch
    /// The Ed25519 signature over the signed header bytes does not verify: with the key
    /// the file names (version 2, `keyID`), or with any trusted key (version 1, `keyID` nil).
    case signatureInvalid(keyID: KeyID?, trusted: [KeyID])
    /// A version 2 file names a key that is not trusted.
    case unknownKey(id: KeyID, trusted: [KeyID])
    /// The file's key is past its `not-after` (Unix seconds).
    case keyExpired(id: KeyID, notAfter: Int64)
    /// The file's key is on a revocation list.
    case keyRevoked(id: KeyID)
    /// What the payload decompressed to is not the signed content (size or SHA-256).
    case contentHashMismatch(String)
    /// A delta was given a base whose SHA-256 is not the signed base digest.
    case deltaBaseMismatch(String)
    /// The (authentic) header's schema version is outside the supported range.
    case incompatibleSchema(found: UInt32, supported: ClosedRange<UInt32>)
    /// Decompressing the payload would produce more than `limit` bytes.
    case decompressionLimit(limit: UInt64)
    /// The payload is authentic but not exactly one valid gzip member (RFC 1952).
    /// Only a faulty signer can produce this; services report it as `DATABASE_CORRUPT`.
    case corruptPayload(String)
    /// A version 2 header that is validly signed but malformed (check 8). Only a faulty
    /// signer can produce this; services report it as `DATABASE_CORRUPT`.
    case malformedHeader(String)
    /// Writing the output (the decompressed database, or a `.stol` file) failed.
    case outputFailed(String)
    /// The caller stopped verification: its `events` or `output` handler threw this
    /// (the stol-verifyd's coordinator closed the connection).
    case cancelled(String)

    /// Raised by ``StolHeader/init(parsing:)`` only; the same as ``fileTooSmall(bytes:)``.
    case truncatedHeader(bytes: Int)
    /// Raised by ``StolHeader/init(parsing:)`` only; the same as ``notAStolFile``.
    case badMagic

    /// The protocol error code each case is reported as.
    public enum Code: String, Sendable, CaseIterable {
        case fileUnreadable = "FILE_UNREADABLE"
        case fileTooSmall = "FILE_TOO_SMALL"
        case fileTooLarge = "FILE_TOO_LARGE"
        case notAStolFile = "NOT_A_STOL_FILE"
        case checksumMismatch = "CHECKSUM_MISMATCH"
        case signatureInvalid = "SIGNATURE_INVALID"
        case unknownKey = "UNKNOWN_KEY"
        case keyExpired = "KEY_EXPIRED"
        case keyRevoked = "KEY_REVOKED"
        case contentHashMismatch = "CONTENT_HASH_MISMATCH"
        case deltaBaseMismatch = "DELTA_BASE_MISMATCH"
        case incompatibleSchema = "INCOMPATIBLE_SCHEMA"
        case decompressionLimit = "DECOMPRESSION_LIMIT"
        case databaseCorrupt = "DATABASE_CORRUPT"
        case `internal` = "INTERNAL"
    }

    public var code: Code {
        switch self {
        case .fileUnreadable: .fileUnreadable
        case .fileTooSmall, .truncatedHeader: .fileTooSmall
        case .fileTooLarge: .fileTooLarge
        case .notAStolFile, .badMagic: .notAStolFile
        case .checksumMismatch: .checksumMismatch
        case .signatureInvalid: .signatureInvalid
        case .unknownKey: .unknownKey
        case .keyExpired: .keyExpired
        case .keyRevoked: .keyRevoked
        case .contentHashMismatch: .contentHashMismatch
        case .deltaBaseMismatch: .deltaBaseMismatch
        case .incompatibleSchema: .incompatibleSchema
        case .decompressionLimit: .decompressionLimit
        case .corruptPayload, .malformedHeader: .databaseCorrupt
        case .outputFailed, .cancelled: .internal
        }
    }

    /// One line for people; never contains key material.
    public var message: String {
        switch self {
        case .fileUnreadable(let detail): "the file cannot be read: \(detail)"
        case .fileTooSmall(let bytes): "the file is \(bytes) bytes: too small to be a .stol file"
        case .truncatedHeader(let bytes): "the file is \(bytes) bytes: too small to be a .stol file"
        case .fileTooLarge(let bytes, let limit): "the file is \(bytes) bytes; the limit is \(limit)"
        case .notAStolFile, .badMagic: "the file does not start with the .stol magic bytes"
        case .checksumMismatch: "the SHA-256 of the payload differs from the header"
        case .signatureInvalid(let keyID, let trusted):
            if let keyID {
                "the Ed25519 signature does not verify with key \(keyID), the key the file names (trusted: \(Self.list(trusted)))"
            } else {
                "the Ed25519 signature does not verify with any trusted key (trusted: \(Self.list(trusted)))"
            }
        case .unknownKey(let id, let trusted):
            "the file is signed by key \(id), which is not trusted (trusted: \(Self.list(trusted)))"
        case .keyExpired(let id, let notAfter):
            "the file is signed by key \(id), which expired at \(PublicKeyFile.formatDate(notAfter))"
        case .keyRevoked(let id): "the file is signed by key \(id), which is revoked"
        case .contentHashMismatch(let detail): "the database the file yields is not the signed content: \(detail)"
        case .deltaBaseMismatch(let detail): "the delta does not apply to this database: \(detail)"
        case .incompatibleSchema(let found, let supported):
            "schema version \(found) is not supported (supported: \(supported.lowerBound)…\(supported.upperBound))"
        case .decompressionLimit(let limit): "the payload decompresses to more than \(limit) bytes"
        case .corruptPayload(let detail): "the payload is malformed: \(detail)"
        case .malformedHeader(let detail): "the signed header is malformed: \(detail)"
        case .outputFailed(let detail): "writing the output failed: \(detail)"
        case .cancelled(let reason): "verification was cancelled: \(reason)"
        }
    }
}

extension StolFormatError {
    static func list(_ ids: [KeyID]) -> String { ids.isEmpty ? "none" : ids.map(\.description).joined(separator: ", ") }

    /// Machine-readable context for the protocol's error `details`: the key ids involved.
    public var details: [String: String] {
        switch self {
        case .signatureInvalid(let keyID, let trusted):
            var details = ["trusted_key_ids": trusted.map(\.description).joined(separator: ",")]
            if let keyID { details["key_id"] = keyID.description }
            return details
        case .unknownKey(let id, let trusted):
            return ["key_id": id.description, "trusted_key_ids": trusted.map(\.description).joined(separator: ",")]
        case .keyExpired(let id, let notAfter):
            return ["key_id": id.description, "not_after": PublicKeyFile.formatDate(notAfter)]
        case .keyRevoked(let id):
            return ["key_id": id.description]
        default:
            return [:]
        }
    }
}

extension StolFormatError: CustomStringConvertible {
    public var description: String { "\(code.rawValue): \(message)" }
}
