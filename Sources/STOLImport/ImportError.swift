import STOLProtocol

/// The import checklist's failures (seeds/000 §6.1) and the coordinator's own.
public enum ImportError: Error, Equatable, ProtocolErrorConvertible {
    case permissionDenied(String)
    case missingFileDescriptor
    case fileUnreadable(String)
    case fileTooSmall(bytes: UInt64)
    case fileTooLarge(bytes: UInt64, limit: UInt64)
    case notAStolFile
    case importInProgress
    case verifierUnavailable(String)
    case verifierFailed(String)
    case notImplemented(String)

    public var protocolError: ProtocolError {
        switch self {
        case .permissionDenied(let detail): ProtocolError(.permissionDenied, detail)
        case .missingFileDescriptor:
            ProtocolError(.invalidRequest, "this request needs the file's descriptor attached (SCM_RIGHTS)")
        case .fileUnreadable(let detail): ProtocolError(.fileUnreadable, detail)
        case .fileTooSmall(let bytes):
            ProtocolError(.fileTooSmall, "the file is \(bytes) bytes: too small to be a .stol file",
                          details: ["bytes": String(bytes)])
        case .fileTooLarge(let bytes, let limit):
            ProtocolError(.fileTooLarge, "the file is \(bytes) bytes; the limit is \(limit)",
                          details: ["bytes": String(bytes), "limit": String(limit)])
        case .notAStolFile: ProtocolError(.notAStolFile, "the file does not start with the .stol magic bytes")
        case .importInProgress: ProtocolError(.busy, "another import is running; try again when it has finished")
        case .verifierUnavailable(let detail): ProtocolError(.unavailable, "the verifier is not reachable: \(detail)")
        case .verifierFailed(let detail): ProtocolError(.internal, "the verifier failed: \(detail)")
        case .notImplemented(let detail): ProtocolError(.unimplemented, detail)
        }
    }
}

/// Size limits of seeds/000 §5.2.
public enum ImportLimits {
    public static let minimumFileBytes: UInt64 = 1
    public static let maximumFileBytes: UInt64 = 2 * 1024 * 1024 * 1024
    public static let maximumDecompressedBytes: UInt64 = 4 * 1024 * 1024 * 1024
}
