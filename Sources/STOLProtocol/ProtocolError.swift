/// A typed error as it travels on the wire: a stable ``Stol_V1_ErrorCode``, a
/// human-readable message and machine-readable details.
///
/// Every library maps its own typed error enum onto this through
/// ``ProtocolErrorConvertible``, so the daemons never invent codes ad hoc and the
/// client can turn any code into an exit status and a clear sentence.
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Stol_V1_ErrorCode
    public var message: String
    public var details: [String: String]

    public init(_ code: Stol_V1_ErrorCode, _ message: String, details: [String: String] = [:]) {
        self.code = code
        self.message = message
        self.details = details
    }

    public init(_ proto: Stol_V1_Error) {
        self.init(proto.code, proto.message, details: proto.details)
    }

    /// The wire form of this error.
    public var proto: Stol_V1_Error {
        var error = Stol_V1_Error()
        error.code = code
        error.message = message
        error.details = details
        return error
    }

    public var description: String { "\(code.name): \(message)" }

    public static func unimplemented(_ operation: String) -> ProtocolError {
        ProtocolError(.unimplemented, "\(operation) is declared in the protocol but not implemented by this server yet")
    }
}

/// A library error that knows its wire representation.
public protocol ProtocolErrorConvertible: Error {
    var protocolError: ProtocolError { get }
}

extension ProtocolError: ProtocolErrorConvertible {
    public var protocolError: ProtocolError { self }
}

extension Stol_V1_ErrorCode {
    /// The stable upper-case name used in PROTOCOL.md, logs and `--json` output.
    public var name: String {
        switch self {
        case .unspecified: "UNSPECIFIED"
        case .invalidRequest: "INVALID_REQUEST"
        case .frameTooLarge: "FRAME_TOO_LARGE"
        case .malformedFrame: "MALFORMED_FRAME"
        case .unimplemented: "UNIMPLEMENTED"
        case .notFound: "NOT_FOUND"
        case .permissionDenied: "PERMISSION_DENIED"
        case .unavailable: "UNAVAILABLE"
        case .internal: "INTERNAL"
        case .busy: "BUSY"
        case .taxonDeleted: "TAXON_DELETED"
        case .fileUnreadable: "FILE_UNREADABLE"
        case .fileTooLarge: "FILE_TOO_LARGE"
        case .notAStolFile: "NOT_A_STOL_FILE"
        case .checksumMismatch: "CHECKSUM_MISMATCH"
        case .signatureInvalid: "SIGNATURE_INVALID"
        case .incompatibleSchema: "INCOMPATIBLE_SCHEMA"
        case .databaseCorrupt: "DATABASE_CORRUPT"
        case .decompressionLimit: "DECOMPRESSION_LIMIT"
        case .fileTooSmall: "FILE_TOO_SMALL"
        case .downgradeRefused: "DOWNGRADE_REFUSED"
        case .noSpace: "NO_SPACE"
        case .idNamespaceMismatch: "ID_NAMESPACE_MISMATCH"
        case .releaseNotInstalled: "RELEASE_NOT_INSTALLED"
        case .unknownKey: "UNKNOWN_KEY"
        case .keyExpired: "KEY_EXPIRED"
        case .keyRevoked: "KEY_REVOKED"
        case .contentHashMismatch: "CONTENT_HASH_MISMATCH"
        case .deltaBaseMismatch: "DELTA_BASE_MISMATCH"
        case .formatVersionNotAllowed: "FORMAT_VERSION_NOT_ALLOWED"
        case .UNRECOGNIZED(let value): "UNRECOGNIZED_\(value)"
        }
    }
}
