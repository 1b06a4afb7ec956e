import STOLFileSystem
import Glibc
import CSodium

/// Key files of the `.stol` signer (`protocol/STOL-FORMAT.md` §7).
///
/// Both are one line of ASCII, a label, a colon and 64 hexadecimal digits,
/// optionally followed by a newline:
///
///     STOL-ED25519-PRIVATE-KEY-V1:<hex of the 32-byte Ed25519 seed>
///     STOL-ED25519-PUBLIC-KEY-V1:<hex of the 32-byte Ed25519 public key>
///
/// The private key is the RFC 8032 seed (what `crypto_sign_seed_keypair`, Python's
/// `Ed25519PrivateKey.from_private_bytes` and OpenSSL take), not libsodium's 64-byte
/// expanded form. Leading and trailing ASCII whitespace is ignored; hex digits may be
/// upper or lower case (writers use lower case). The private key is read from a file
/// (mode 0600 or stricter: group or other permission bits are refused, as ssh does)
/// or from the environment variable `STOL_SIGNING_KEY`, which holds the same text.
/// Key material never appears in an error, a log line or `description`.
public enum SigningKeyFile {
    public static let environmentVariable = "STOL_SIGNING_KEY"
    public static let privateLabel = "STOL-ED25519-PRIVATE-KEY-V1:"
    public static let publicLabel = "STOL-ED25519-PUBLIC-KEY-V1:"
    /// Key files are tiny; anything larger is refused before it is read.
    static let maximumFileBytes = 4096

    // MARK: Text

    public static func privateKeyText(_ key: Ed25519.PrivateKey) -> String {
        var seed = key.seed()
        defer { sodium_memzero(&seed, seed.count) }
        return privateLabel + seed.hexString + "\n"
    }

    public static func publicKeyText(_ key: Ed25519.PublicKey) -> String {
        publicLabel + key.bytes.hexString + "\n"
    }

    public static func parsePrivateKey(_ text: [UInt8], source: String) throws(SigningKeyError) -> Ed25519.PrivateKey {
        var seed = try parse(text, label: privateLabel, otherLabel: publicLabel, source: source)
        defer { sodium_memzero(&seed, seed.count) }
        return Ed25519.PrivateKey(seed: seed)!
    }

    public static func parsePublicKey(_ text: [UInt8], source: String) throws(SigningKeyError) -> Ed25519.PublicKey {
        Ed25519.PublicKey(bytes: try parse(text, label: publicLabel, otherLabel: privateLabel, source: source))!
    }

    // MARK: Files and the environment

    /// A public key file's key (its optional `not-after` line is read by ``PublicKeyFile``).
    public static func loadPublicKey(path: String) throws(SigningKeyError) -> Ed25519.PublicKey {
        try PublicKeyFile.load(path: path).key
    }

    /// A small public text file (a public key file, a revocation list) as UTF-8.
    static func readText(path: String, limit: Int) throws(SigningKeyError) -> String {
        String(decoding: try readFile(path, secret: false, limit: limit), as: UTF8.self)
    }

    public static func loadPrivateKey(path: String) throws(SigningKeyError) -> Ed25519.PrivateKey {
        var text = try readFile(path, secret: true)
        defer { text.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        return try parsePrivateKey(text, source: path)
    }

    /// The private key from `path` when given, else from `STOL_SIGNING_KEY` in `environment`.
    public static func loadPrivateKey(path: String?, environment: [String: String]) throws(SigningKeyError) -> Ed25519.PrivateKey {
        if let path { return try loadPrivateKey(path: path) }
        guard let value = environment[environmentVariable] else { throw .missing }
        var text = Array(value.utf8)
        defer { text.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        return try parsePrivateKey(text, source: "$\(environmentVariable)")
    }

    /// Writes the private key file, mode 0600, atomically; refuses to replace an existing file unless `overwrite`.
    public static func writePrivateKey(_ key: Ed25519.PrivateKey, to path: String, overwrite: Bool) throws(SigningKeyError) {
        var text = Array(privateKeyText(key).utf8)
        defer { text.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        try write(text, to: path, mode: 0o600, overwrite: overwrite)
    }

    /// Writes the public key file, mode 0644, atomically; refuses to replace an existing file unless `overwrite`.
    public static func writePublicKey(_ key: Ed25519.PublicKey, to path: String, overwrite: Bool) throws(SigningKeyError) {
        try write(Array(publicKeyText(key).utf8), to: path, mode: 0o644, overwrite: overwrite)
    }

    /// Writes a public key file's whole text (the key line and a `not-after` line), mode 0644, atomically.
    public static func writePublicKeyFile(_ text: String, to path: String, overwrite: Bool) throws(SigningKeyError) {
        try write(Array(text.utf8), to: path, mode: 0o644, overwrite: overwrite)
    }

    // MARK: Internals

    private static func parse(_ text: [UInt8], label: String, otherLabel: String,
                              source: String) throws(SigningKeyError) -> [UInt8] {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0a || $0 == 0x0d }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }) else {
            throw .malformed(source: source, reason: "empty")
        }
        let line = text[first...last]
        let labelBytes = Array(label.utf8)
        guard line.starts(with: labelBytes) else {
            if line.starts(with: Array(otherLabel.utf8)) {
                throw .malformed(source: source, reason: "this is a \(otherLabel.dropLast()), not a \(label.dropLast())")
            }
            throw .malformed(source: source, reason: "does not start with \(label)")
        }
        let hex = line.dropFirst(labelBytes.count)
        guard hex.count == 64 else { throw .malformed(source: source, reason: "expected 64 hexadecimal digits after the label") }
        var bytes = [UInt8](repeating: 0, count: 32)
        var index = hex.startIndex
        for i in 0..<32 {
            guard let high = hexValue(hex[index]), let low = hexValue(hex[index + 1]) else {
                sodium_memzero(&bytes, bytes.count)
                throw .malformed(source: source, reason: "expected 64 hexadecimal digits after the label")
            }
            bytes[i] = high << 4 | low
            index += 2
        }
        return bytes
    }

    /// One hex digit's value (either case); key files and key ids share it.
    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }

    private static func readFile(_ path: String, secret: Bool, limit: Int = maximumFileBytes) throws(SigningKeyError) -> [UInt8] {
        let maximumFileBytes = limit
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: path, reason: errnoDescription()) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadable(path: path, reason: errnoDescription()) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .unreadable(path: path, reason: "not a regular file") }
        if secret, info.st_mode & 0o077 != 0 {
            throw .permissionsTooOpen(path: path, mode: UInt32(info.st_mode & 0o777))
        }
        guard info.st_size <= maximumFileBytes else { throw .malformed(source: path, reason: "larger than a key file") }
        var bytes = [UInt8](repeating: 0, count: maximumFileBytes + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, reason: errnoDescription())
            }
            if got == 0 { break }
            count += got
        }
        let text = Array(bytes.prefix(count))
        sodium_memzero(&bytes, bytes.count)
        guard count <= maximumFileBytes else { throw .malformed(source: path, reason: "larger than a key file") }
        return text
    }

    private static func write(_ text: [UInt8], to path: String, mode: mode_t, overwrite: Bool) throws(SigningKeyError) {
        do {
            let file = try typed { try AtomicFile(path: path) }
            try typed { try file.append(text) }
            try typed { try file.commit(mode: mode, replace: overwrite) }
        } catch {
            if case .outputFailed(let reason) = error { throw .unwritable(path: path, reason: reason) }
            throw .unwritable(path: path, reason: error.message)
        }
    }
}

/// Why a key could not be read or written. Never carries key material.
public enum SigningKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Neither `--key` nor `STOL_SIGNING_KEY` was given.
    case missing
    case unreadable(path: String, reason: String)
    /// A private key file readable or writable by group or others.
    case permissionsTooOpen(path: String, mode: UInt32)
    case malformed(source: String, reason: String)
    case unwritable(path: String, reason: String)

    public var description: String {
        switch self {
        case .missing: "no signing key: pass --key FILE or set \(SigningKeyFile.environmentVariable)"
        case .unreadable(let path, let reason): "cannot read the key file \(path): \(reason)"
        case .permissionsTooOpen(let path, let mode):
            "the private key file \(path) has mode \(String(mode, radix: 8)); it must not be accessible by group or others (chmod 600)"
        case .malformed(let source, let reason): "\(source) is not a STOL key: \(reason)"
        case .unwritable(let path, let reason): "cannot write \(path): \(reason)"
        }
    }
}

extension Ed25519.PublicKey {
    /// A key from 64 hexadecimal digits; `nil` otherwise. (No key is compiled into the
    /// service: the verifier reads a key file, `TrustedKey`. Used by the tests.)
    public init?(hex: String) {
        guard let key = try? SigningKeyFile.parsePublicKey(Array((SigningKeyFile.publicLabel + hex).utf8), source: "hex") else {
            return nil
        }
        self = key
    }
}
