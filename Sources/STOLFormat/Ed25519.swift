import CSodium

/// Ed25519 (RFC 8032, pure, no prehash) through libsodium's `crypto_sign_*`.
///
/// libsodium's verifier is strict: it rejects non-canonical `S`, small-order `R`
/// and small-order or non-canonical public keys, so one message and key admit
/// exactly one valid signature (no malleability).
public enum Ed25519 {
    public static let seedBytes = Int(crypto_sign_SEEDBYTES)          // 32
    public static let publicKeyBytes = Int(crypto_sign_PUBLICKEYBYTES) // 32
    public static let signatureBytes = Int(crypto_sign_BYTES)          // 64
    static let secretKeyBytes = Int(crypto_sign_SECRETKEYBYTES)        // 64: seed ‖ public key

    public struct PublicKey: Equatable, Hashable, Sendable {
        public let bytes: [UInt8]

        /// `nil` unless `bytes` is exactly 32 bytes.
        public init?(bytes: [UInt8]) {
            guard bytes.count == Ed25519.publicKeyBytes else { return nil }
            self.bytes = bytes
        }

        /// True when `signature` is a valid Ed25519 signature of `message` by this key.
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            guard signature.count == Ed25519.signatureBytes else { return false }
            Sodium.initialize()
            return crypto_sign_verify_detached(signature, message, UInt64(message.count), bytes) == 0
        }
    }

    /// A private key. The secret bytes live in one heap buffer that is zeroed
    /// when the key is released; they are never part of `description`.
    public final class PrivateKey: @unchecked Sendable, CustomStringConvertible {
        /// libsodium's 64-byte secret key (seed ‖ public key); immutable after `init`.
        private let secret: UnsafeMutablePointer<UInt8>
        public let publicKey: PublicKey

        /// Derives the key pair from a 32-byte seed (`crypto_sign_seed_keypair`). `nil` if the seed is not 32 bytes.
        public convenience init?(seed: [UInt8]) {
            guard seed.count == Ed25519.seedBytes else { return nil }
            self.init(uncheckedSeed: seed)
        }

        /// A fresh key from the operating system's random generator.
        public static func generate() -> PrivateKey {
            Sodium.initialize()
            var seed = [UInt8](repeating: 0, count: Ed25519.seedBytes)
            randombytes_buf(&seed, seed.count)
            defer { sodium_memzero(&seed, seed.count) }
            return PrivateKey(uncheckedSeed: seed)
        }

        private init(uncheckedSeed seed: [UInt8]) {
            Sodium.initialize()
            secret = .allocate(capacity: Ed25519.secretKeyBytes)
            var pk = [UInt8](repeating: 0, count: Ed25519.publicKeyBytes)
            let status = crypto_sign_seed_keypair(&pk, secret, seed)
            precondition(status == 0, "crypto_sign_seed_keypair failed")
            publicKey = PublicKey(bytes: pk)!
        }

        deinit {
            sodium_memzero(secret, Ed25519.secretKeyBytes)
            secret.deallocate()
        }

        /// The 32-byte seed (what the key file stores). Callers should zero their copy when done.
        public func seed() -> [UInt8] {
            var seed = [UInt8](repeating: 0, count: Ed25519.seedBytes)
            crypto_sign_ed25519_sk_to_seed(&seed, secret)
            return seed
        }

        /// The detached 64-byte signature of `message` (deterministic, RFC 8032).
        public func sign(_ message: [UInt8]) -> [UInt8] {
            var signature = [UInt8](repeating: 0, count: Ed25519.signatureBytes)
            var length: UInt64 = 0
            let status = crypto_sign_detached(&signature, &length, message, UInt64(message.count), secret)
            precondition(status == 0 && length == UInt64(Ed25519.signatureBytes), "crypto_sign_detached failed")
            return signature
        }

        public var description: String { "Ed25519.PrivateKey(public: \(publicKey.bytes.hexString))" }
    }
}

/// `sodium_init()` once per process (it is idempotent and thread-safe).
public enum Sodium {
    public static func initialize() {
        _ = sodium_init()
    }
}
