import Glibc
import STOLModel

/// The fixed header of a `.stol` file (`protocol/STOL-FORMAT.md` §1), version 1 or 2.
///
/// Version 2 (288 bytes) signs everything a receiver needs to check what it is
/// handed without trusting whoever decompressed it: the key id, the size and
/// SHA-256 of the database the file yields, its release and id namespace, and for
/// a delta the database it applies to. Version 1 (108 bytes) signs only the
/// schema version and the payload digest; it is read until the date in §1.2.
///
/// Parsing (``init(parsing:)``) takes the fields as they are; nothing is trusted
/// before ``authenticate(with:now:)`` has checked the key and the signature and
/// then the fields' form. The import coordinator runs exactly that on the first
/// 288 bytes of a file, and the verifier runs it as checks 6–8 of the list.
public struct StolHeader: Equatable, Sendable {
    /// `STOL\0DB` and the format version byte.
    public static let magicPrefix: [UInt8] = Array("STOL".utf8) + [0x00] + Array("DB".utf8)
    public static let magic: [UInt8] = magicPrefix + [0x01]
    public static let magicVersion2: [UInt8] = magicPrefix + [0x02]
    public static let supportedFormatVersions: ClosedRange<UInt8> = 1...2
    public static let version1Size = 108
    public static let version2Size = 288
    /// The longest header: what the coordinator reads.
    public static let maximumSize = version2Size
    public static let textFieldBytes = 32

    public enum Kind: UInt8, Sendable {
        case database = 1
        /// A byte delta (§10.1): a zstd frame of the result's bytes against the base's.
        case delta = 2
        /// A row delta (§10.2): a zstd frame, against the base's bytes, of the SQLite
        /// changeset that turns the base's rows into the result's.
        case rowDelta = 3

        /// Whether the file applies to a base (either delta).
        public var isDelta: Bool { self != .database }
    }

    public var formatVersion: UInt8
    public var schemaVersion: UInt32
    /// Raw kind byte (version 2); checked by ``authenticate(with:now:)``.
    public var kindByte: UInt8 = Kind.database.rawValue
    public var reserved: [UInt8] = [0, 0, 0]
    public var keyID: KeyID?
    public var contentSize: UInt64 = 0
    public var payloadSHA256: [UInt8]
    public var contentSHA256: [UInt8] = Self.zeroDigest
    public var baseSHA256: [UInt8] = Self.zeroDigest
    /// The text fields as written (32 bytes, NUL-padded).
    public var releaseField: [UInt8] = Self.emptyText
    public var baseReleaseField: [UInt8] = Self.emptyText
    public var idNamespaceField: [UInt8] = Self.emptyText
    public var signature: [UInt8]

    static let zeroDigest = [UInt8](repeating: 0, count: 32)
    static let emptyText = [UInt8](repeating: 0, count: textFieldBytes)

    /// A version 1 header.
    public init(schemaVersion: UInt32, payloadSHA256: [UInt8], signature: [UInt8]) {
        formatVersion = 1
        self.schemaVersion = schemaVersion
        self.payloadSHA256 = payloadSHA256
        self.signature = signature
    }

    /// What a version 2 header says about the database it yields.
    public struct Content: Sendable, Equatable {
        public var kind: Kind
        public var schemaVersion: UInt32
        public var size: UInt64
        public var sha256: [UInt8]
        public var release: String
        public var idNamespace: String
        /// A delta's base: its SHA-256 and release.
        public var baseSHA256: [UInt8]?
        public var baseRelease: String?

        public init(kind: Kind = .database, schemaVersion: UInt32, size: UInt64, sha256: [UInt8], release: String,
                    idNamespace: String, baseSHA256: [UInt8]? = nil, baseRelease: String? = nil) {
            self.kind = kind
            self.schemaVersion = schemaVersion
            self.size = size
            self.sha256 = sha256
            self.release = release
            self.idNamespace = idNamespace
            self.baseSHA256 = baseSHA256
            self.baseRelease = baseRelease
        }
    }

    /// A version 2 header, signed with `key`.
    public static func signed(_ content: Content, payloadSHA256: [UInt8], key: Ed25519.PrivateKey) -> StolHeader {
        var header = StolHeader(schemaVersion: content.schemaVersion, payloadSHA256: payloadSHA256, signature: [])
        header.formatVersion = 2
        header.kindByte = content.kind.rawValue
        header.keyID = key.publicKey.keyID
        header.contentSize = content.size
        header.contentSHA256 = content.sha256
        header.baseSHA256 = content.baseSHA256 ?? zeroDigest
        header.releaseField = textField(content.release)
        header.baseReleaseField = textField(content.baseRelease ?? "")
        header.idNamespaceField = textField(content.idNamespace)
        header.signature = key.sign(header.signedMessage)
        return header
    }

    /// A version 1 header, signed with `key`.
    public static func signedVersion1(schemaVersion: UInt32, payloadSHA256: [UInt8], key: Ed25519.PrivateKey) -> StolHeader {
        var header = StolHeader(schemaVersion: schemaVersion, payloadSHA256: payloadSHA256, signature: [])
        header.signature = key.sign(header.signedMessage)
        return header
    }

    public var size: Int { formatVersion == 1 ? Self.version1Size : Self.version2Size }
    public var kind: Kind? { formatVersion == 1 ? .database : Kind(rawValue: kindByte) }
    public var release: String { Self.text(releaseField) }
    public var baseRelease: String { Self.text(baseReleaseField) }
    public var idNamespace: String { Self.text(idNamespaceField) }

    /// The header size of the format whose magic `prefix` starts with (nil: not a `.stol` magic).
    public static func headerSize(magic prefix: some Collection<UInt8>) -> Int? {
        guard prefix.count >= magic.count, prefix.starts(with: magicPrefix) else { return nil }
        switch prefix[prefix.index(prefix.startIndex, offsetBy: 7)] {
        case 1: return version1Size
        case 2: return version2Size
        default: return nil
        }
    }

    /// True when `prefix` (any length) agrees with the first bytes of a supported magic.
    public static func startsLikeMagic(_ prefix: some Collection<UInt8>) -> Bool {
        [magic, magicVersion2].contains { candidate in zip(prefix, candidate).allSatisfy { $0 == $1 } }
    }

    /// True when `prefix` starts with a whole supported magic.
    public static func hasMagic(_ prefix: some Collection<UInt8>) -> Bool { headerSize(magic: prefix) != nil }

    /// Parses the header at the start of `bytes` (its whole length must be present).
    public init(parsing bytes: [UInt8]) throws(StolFormatError) {
        guard bytes.count >= Self.magic.count else { throw .truncatedHeader(bytes: bytes.count) }
        guard let size = Self.headerSize(magic: bytes) else { throw .badMagic }
        guard bytes.count >= size else { throw .truncatedHeader(bytes: bytes.count) }
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
        formatVersion = bytes[7]
        schemaVersion = UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24
        if formatVersion == 1 {
            payloadSHA256 = Array(bytes[12..<44])
            signature = Array(bytes[44..<108])
            return
        }
        kindByte = bytes[12]
        reserved = Array(bytes[13..<16])
        keyID = KeyID(bytes: bytes[16..<24])
        contentSize = u64(24)
        payloadSHA256 = Array(bytes[32..<64])
        contentSHA256 = Array(bytes[64..<96])
        baseSHA256 = Array(bytes[96..<128])
        releaseField = Array(bytes[128..<160])
        baseReleaseField = Array(bytes[160..<192])
        idNamespaceField = Array(bytes[192..<224])
        signature = Array(bytes[224..<288])
    }

    public func serialized() -> [UInt8] { signedMessage + signature }

    /// The bytes the signature covers: 0 … 43 (version 1) or 0 … 223 (version 2).
    public var signedMessage: [UInt8] {
        var bytes = formatVersion == 1 ? Self.magic : Self.magicVersion2
        bytes += Self.littleEndian(UInt64(schemaVersion), count: 4)
        if formatVersion == 1 { return bytes + payloadSHA256 }
        bytes.append(kindByte)
        bytes += reserved
        bytes += keyID?.bytes ?? [UInt8](repeating: 0, count: KeyID.byteCount)
        bytes += Self.littleEndian(contentSize, count: 8)
        bytes += payloadSHA256 + contentSHA256 + baseSHA256
        bytes += releaseField + baseReleaseField + idNamespaceField
        return bytes
    }

    /// Checks 6–8 of the list: the key (version 2: the one the file names, not revoked,
    /// trusted, not expired; version 1: any that verifies), the signature, then the
    /// form of the now-authentic fields. Returns the id of the key that signed.
    @discardableResult
    public func authenticate(with keys: TrustedKeys, now: Int64) throws(StolFormatError) -> KeyID {
        guard formatVersion == 2, let keyID else {
            return try keys.verifyVersion1(signature: signature, message: signedMessage, now: now)
        }
        let key = try keys.key(for: keyID, now: now)
        guard key.isValidSignature(signature, for: signedMessage) else {
            throw .signatureInvalid(keyID: keyID, trusted: keys.trustedIDs)
        }
        try checkForm()
        return keyID
    }

    /// Check 8: a signed header can still be malformed, but only by a faulty signer.
    func checkForm() throws(StolFormatError) {
        guard let kind else {
            throw .malformedHeader("the header's kind is \(kindByte), not 1 (database), 2 (delta) or 3 (row delta)")
        }
        guard reserved.allSatisfy({ $0 == 0 }) else { throw .malformedHeader("the header's reserved bytes are not zero") }
        guard Self.isValidText(releaseField), ReleaseName.isValid(release) else {
            throw .malformedHeader("the header's release is not a valid release name")
        }
        guard Self.isValidText(idNamespaceField) else { throw .malformedHeader("the header's id namespace is not a valid name") }
        switch kind {
        case .database:
            guard baseSHA256 == Self.zeroDigest, baseReleaseField == Self.emptyText else {
                throw .malformedHeader("a whole database names a base")
            }
        case .delta, .rowDelta:
            guard Self.isValidText(baseReleaseField), ReleaseName.isValid(baseRelease) else {
                throw .malformedHeader("a delta's base release is not a valid release name")
            }
        }
    }

    /// 1 … 32 bytes of `A–Z a–z 0–9 . _ + -`, the first a letter or digit, NUL-padded
    /// (a release is also never `bundled`: ``ReleaseName/isValid(_:)``).
    public static func isValidText(_ field: [UInt8]) -> Bool {
        guard field.count == textFieldBytes else { return false }
        let length = field.firstIndex(of: 0) ?? field.count
        guard length > 0, field[length...].allSatisfy({ $0 == 0 }) else { return false }
        return field[..<length].enumerated().allSatisfy { ReleaseName.isNameByte($1, first: $0 == 0) }
    }

    public static func isValidText(_ text: String) -> Bool { text.utf8.count <= textFieldBytes && isValidText(textField(text)) }

    /// A release (or a delta's base release) a header can sign: a release name
    /// (``ReleaseName/isValid(_:)``: the text field's grammar, and never `bundled`).
    public static func isValidRelease(_ text: String) -> Bool { ReleaseName.isValid(text) }

    static func textField(_ text: String) -> [UInt8] {
        Array(Array(text.utf8).prefix(textFieldBytes)) + [UInt8](repeating: 0, count: max(0, textFieldBytes - text.utf8.count))
    }

    static func text(_ field: [UInt8]) -> String {
        String(decoding: field.prefix { $0 != 0 }, as: UTF8.self)
    }

    static func littleEndian(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    /// Reads and parses the header of the file open as `fd` (`pread`, position unmoved).
    /// The coordinator's only parse of an untrusted file: at most 288 bytes, fixed offsets
    /// (it hashes the payload after them, never interpreting it).
    public static func read(fromDescriptor fd: Int32) throws(StolFormatError) -> StolHeader {
        var bytes = [UInt8](repeating: 0, count: maximumSize)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + count, $0.count - count, off_t(count)) }
            if got < 0 {
                if errno == EINTR { continue }
                throw .fileUnreadable("read failed: \(errnoDescription())")
            }
            if got == 0 { break }
            count += got
        }
        let prefix = Array(bytes.prefix(count))
        guard startsLikeMagic(prefix.prefix(magic.count)) else { throw .notAStolFile }
        guard prefix.count >= magic.count else { throw .fileTooSmall(bytes: UInt64(count)) }
        do {
            return try StolHeader(parsing: prefix)
        } catch {
            switch error {
            case .truncatedHeader: throw .fileTooSmall(bytes: UInt64(count))
            case .badMagic: throw .notAStolFile
            default: throw error
            }
        }
    }
}
