/// The fixed header of a `.stol` reference database file (`protocol/STOL-FORMAT.md` §1):
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 8 | magic `STOL\0DB\x01` |
/// | 8 | 4 | schema version, little-endian |
/// | 12 | 32 | SHA-256 of the gzip payload |
/// | 44 | 64 | Ed25519 signature |
/// | 108 | … | gzip-compressed SQLite database |
///
/// The Ed25519 signature covers the first 44 bytes (magic ‖ schema version ‖
/// digest, ``signedMessage``); the body is covered through its digest.
/// `protocol/STOL-FORMAT.md` specifies the format byte by byte.
public struct StolHeader: Equatable, Sendable {
    public static let magic: [UInt8] = Array("STOL".utf8) + [0x00] + Array("DB".utf8) + [0x01]
    public static let size = 8 + 4 + 32 + 64
    /// Length of the signed prefix: magic ‖ schema version ‖ SHA-256.
    public static let signedSize = 8 + 4 + 32
    public static let signatureOffset = signedSize

    public var schemaVersion: UInt32
    public var payloadSHA256: [UInt8]
    public var signature: [UInt8]

    public init(schemaVersion: UInt32, payloadSHA256: [UInt8], signature: [UInt8]) {
        self.schemaVersion = schemaVersion
        self.payloadSHA256 = payloadSHA256
        self.signature = signature
    }

    /// True when `prefix` starts with the magic (the verifier's first check).
    public static func hasMagic(_ prefix: some Collection<UInt8>) -> Bool {
        prefix.count >= magic.count && zip(prefix, magic).allSatisfy { $0 == $1 }
    }

    /// Parses the first ``size`` bytes of a file.
    public init(parsing bytes: [UInt8]) throws(StolFormatError) {
        guard bytes.count >= Self.size else { throw .truncatedHeader(bytes: bytes.count) }
        guard Self.hasMagic(bytes) else { throw .badMagic }
        schemaVersion = UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24
        payloadSHA256 = Array(bytes[12..<44])
        signature = Array(bytes[44..<108])
    }

    public func serialized() -> [UInt8] {
        Self.signedMessage(schemaVersion: schemaVersion, payloadSHA256: payloadSHA256) + signature
    }

    /// The 44 bytes the Ed25519 signature is made over: magic ‖ schema version (LE) ‖ SHA-256 of the payload.
    public var signedMessage: [UInt8] { Self.signedMessage(schemaVersion: schemaVersion, payloadSHA256: payloadSHA256) }

    public static func signedMessage(schemaVersion: UInt32, payloadSHA256: [UInt8]) -> [UInt8] {
        precondition(payloadSHA256.count == 32, "a SHA-256 digest is 32 bytes")
        var bytes = magic
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: schemaVersion >> UInt32(shift))) }
        return bytes + payloadSHA256
    }
}
