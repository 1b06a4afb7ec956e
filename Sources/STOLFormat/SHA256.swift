import CLibCrypto
import Glibc

/// SHA-256 through OpenSSL's libcrypto, incrementally, so large payloads stream
/// through a fixed buffer. Not libsodium's (which verifies the Ed25519 signature):
/// its portable C hashed 190 MB/s on the 2-core test machine against libcrypto's
/// 1,480 MB/s with the CPU's SHA extensions, and a verification hashes every byte
/// of the payload and of the content (4 GiB at most) once each.
public struct SHA256 {
    private var state = SHA256_CTX()

    public init() {
        SHA256_Init(&state)
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        SHA256_Update(&state, base, bytes.count)
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public mutating func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        SHA256_Final(&digest, &state)
        return digest
    }

    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }
}

extension Array where Element == UInt8 {
    public var hexString: String { map { byte in String(byte, radix: 16).leftPadded(to: 2) }.joined() }

    /// The bytes `hexString` wrote: pairs of hex digits (either case); nil for anything else.
    public init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = SigningKeyFile.hexValue(digits[index]), let low = SigningKeyFile.hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self = bytes
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension SHA256 {
    /// SHA-256 of a whole file (1 MiB reads), and its size: the coordinator hashes an
    /// installed release to match a delta's base or a file that is already installed.
    public static func hash(fileAt path: String) throws(StolFormatError) -> (digest: [UInt8], bytes: UInt64) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .fileUnreadable("\(path): \(errnoDescription())") }
        defer { close(fd) }
        do {
            return try hash(fileDescriptor: fd)
        } catch {
            throw .fileUnreadable("\(path): \(error.message)")
        }
    }

    /// SHA-256 of what `fd` holds from `offset` to the end, read with `pread(2)` (1 MiB
    /// reads): the file offset, which a descriptor passed to another process shares, is
    /// left where it was.
    public static func hash(fileDescriptor fd: Int32, from offset: UInt64 = 0) throws(StolFormatError) -> (digest: [UInt8], bytes: UInt64) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var hasher = SHA256()
        var total: UInt64 = 0
        while true {
            let got = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset + total))
            if got < 0 {
                if errno == EINTR { continue }
                throw .fileUnreadable(errnoDescription())
            }
            if got == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            total += UInt64(got)
        }
        return (hasher.finalize(), total)
    }
}
