/// A signing key's id (`protocol/STOL-FORMAT.md` §7): the first 8 bytes of
/// SHA-256 of the 32-byte Ed25519 public key, written as 16 lower-case hex digits.
///
/// Like minisign's and signify's key numbers it lets a verifier pick the key a
/// version 2 file claims before trying the signature, and lets errors and logs
/// name keys; unlike theirs it is derived from the key, so it cannot be chosen.
public struct KeyID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let byteCount = 8
    public let bytes: [UInt8]

    public init(publicKey: Ed25519.PublicKey) {
        bytes = Array(SHA256.hash(publicKey.bytes).prefix(Self.byteCount))
    }

    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses 16 hex digits (either case).
    public init?(hex: some StringProtocol) {
        guard let bytes = [UInt8](hex: hex), bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    public var description: String { bytes.hexString }

    public static func < (lhs: KeyID, rhs: KeyID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}

extension Ed25519.PublicKey {
    /// This key's id (§7 of the format).
    public var keyID: KeyID { KeyID(publicKey: self) }
}
