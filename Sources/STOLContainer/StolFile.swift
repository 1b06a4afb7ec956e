import STOLFileSystem
import STOLFormat
import Glibc

/// Writing and verifying `.stol` files (`protocol/STOL-FORMAT.md`).
///
/// ``verify(fileDescriptor:publicKey:options:events:output:)`` is the one
/// implementation of the format checks (checks 1–8 of `protocol/STOL-FORMAT.md` §6).
/// Callers: the verifier's handler (`VerifierService` in STOLImport, run by
/// `stol-verifyd`), which follows them with the database checks (`DatabaseChecks`);
/// `stol-pipeline sign` on its own output and `stol-pipeline verify` (through
/// ``verify(path:publicKey:options:extractTo:events:)``), which run no database
/// checks; `stol-bench import` in-process. `stol-importd` only calls
/// ``checkedSize(ofDescriptor:options:)``. Checks, in order (the first failure is thrown):
///
/// 1. readable regular file — ``StolFormatError/fileUnreadable(_:)``
/// 2. 1 byte … 2 GiB — ``StolFormatError/fileTooSmall(bytes:)`` / ``StolFormatError/fileTooLarge(bytes:limit:)``
/// 3. the first min(size, 8) bytes equal the magic — ``StolFormatError/notAStolFile``
/// 4. the whole 108-byte header is present — ``StolFormatError/fileTooSmall(bytes:)``
/// 5. SHA-256 of bytes 108… equals the header's digest — ``StolFormatError/checksumMismatch``
/// 6. the signature over bytes 0..<44 verifies — ``StolFormatError/signatureInvalid``
/// 7. the (now authentic) schema version is supported — ``StolFormatError/incompatibleSchema(found:supported:)``
/// 8. the payload is one gzip member that inflates to at most 4 GiB —
///    ``StolFormatError/corruptPayload(_:)`` / ``StolFormatError/decompressionLimit(limit:)``;
///    the payload is hashed again while it is decompressed, so a file changed
///    between steps 5 and 8 ends in ``StolFormatError/checksumMismatch``.
///
/// Decompressed bytes reach `output` only during step 8 and are trustworthy only
/// when `verify` returns: on a throw the caller discards whatever it received.
public enum StolFile {
    public static let minimumFileBytes: UInt64 = 1
    public static let maximumFileBytes: UInt64 = 2 * 1024 * 1024 * 1024
    public static let maximumDecompressedBytes: UInt64 = 4 * 1024 * 1024 * 1024
    static let chunkSize = 1024 * 1024

    public struct VerifyOptions: Sendable, Equatable {
        /// Schema versions this reader understands (the service passes `1...TaxonomySchema.currentVersion`).
        public var supportedSchemaVersions: ClosedRange<UInt32>
        public var maximumFileBytes: UInt64
        public var maximumDecompressedBytes: UInt64

        public init(supportedSchemaVersions: ClosedRange<UInt32> = 1...1,
                    maximumFileBytes: UInt64 = StolFile.maximumFileBytes,
                    maximumDecompressedBytes: UInt64 = StolFile.maximumDecompressedBytes) {
            self.supportedSchemaVersions = supportedSchemaVersions
            self.maximumFileBytes = maximumFileBytes
            self.maximumDecompressedBytes = maximumDecompressedBytes
        }
    }

    /// The stages of the protocol's `ImportStage` that verification goes through.
    public enum Stage: String, Sendable, Equatable {
        case checkingHeader, verifyingChecksum, verifyingSignature, decompressing
    }

    /// A check of the list that has passed.
    public enum Check: Sendable, Equatable {
        case fileSize(bytes: UInt64)
        case magic
        case header(schemaVersion: UInt32)
        case checksum(sha256: [UInt8])
        case signature
        case schemaVersion(UInt32)
        case decompression(bytes: UInt64, sha256: [UInt8])
    }

    public enum Event: Sendable, Equatable {
        /// `fraction` 0…1 within `stage`; every stage starts with 0 and ends with 1.
        case progress(Stage, fraction: Double)
        case passed(Check)
    }

    /// What a successful verification established.
    public struct Verified: Sendable, Equatable {
        public var header: StolHeader
        public var fileBytes: UInt64
        public var payloadBytes: UInt64 { fileBytes - UInt64(StolHeader.size) }
        /// Size and SHA-256 of the decompressed SQLite database handed to `output`.
        public var sqliteBytes: UInt64
        public var sqliteSHA256: [UInt8]
    }

    // MARK: Verify

    /// Checks 1–2 of the list on an open descriptor without reading it: a regular
    /// file of 1 byte … `maximumFileBytes`. The import coordinator runs this with
    /// `fstat` before it hands the descriptor to a verifier.
    public static func checkedSize(ofDescriptor fd: Int32, options: VerifyOptions = .init()) throws(StolFormatError) -> UInt64 {
        let size = try DescriptorSource(fd).size
        guard size >= minimumFileBytes else { throw .fileTooSmall(bytes: size) }
        guard size <= options.maximumFileBytes else { throw .fileTooLarge(bytes: size, limit: options.maximumFileBytes) }
        return size
    }

    /// Verifies the file open as `fd` (read with `pread`; the file position is not used or moved)
    /// and streams the decompressed database to `output` in chunks of at most 64 KiB.
    public static func verify(fileDescriptor fd: Int32, publicKey: Ed25519.PublicKey, options: VerifyOptions = .init(),
                              events: (Event) throws(StolFormatError) -> Void = { _ in },
                              output: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void) throws(StolFormatError) -> Verified {
        let source = try DescriptorSource(fd)
        return try verify(source, publicKey: publicKey, options: options, events: events, output: output)
    }

    /// Verifies an in-memory file (tests, vectors).
    public static func verify(bytes: [UInt8], publicKey: Ed25519.PublicKey, options: VerifyOptions = .init(),
                              events: (Event) throws(StolFormatError) -> Void = { _ in },
                              output: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void = { _ in }) throws(StolFormatError) -> Verified {
        try verify(MemorySource(bytes: bytes), publicKey: publicKey, options: options, events: events, output: output)
    }

    /// Verifies the file at `path`; with `extractTo`, the decompressed database is written there
    /// (mode 0644, atomically: the path appears only when every check has passed).
    public static func verify(path: String, publicKey: Ed25519.PublicKey, options: VerifyOptions = .init(),
                              extractTo destination: String? = nil,
                              events: (Event) -> Void = { _ in }) throws(StolFormatError) -> Verified {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .fileUnreadable("\(path): \(errnoDescription())") }
        defer { close(fd) }
        guard let destination else {
            return try verify(fileDescriptor: fd, publicKey: publicKey, options: options, events: events) { _ in }
        }
        let file = try typed { try AtomicFile(path: destination) }
        let verified = try verify(fileDescriptor: fd, publicKey: publicKey, options: options, events: events) {
            (chunk) throws(StolFormatError) in try typed { try file.append(chunk) }
        }
        try typed { try file.commit(mode: 0o644) }
        return verified
    }

    static func verify(_ source: some ByteSource, publicKey: Ed25519.PublicKey, options: VerifyOptions,
                       events: (Event) throws(StolFormatError) -> Void,
                       output: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void) throws(StolFormatError) -> Verified {
        // 1–2. size limits
        let size = source.size
        guard size >= minimumFileBytes else { throw .fileTooSmall(bytes: size) }
        guard size <= options.maximumFileBytes else { throw .fileTooLarge(bytes: size, limit: options.maximumFileBytes) }
        try events(.passed(.fileSize(bytes: size)))
        try events(.progress(.checkingHeader, fraction: 0))

        // 3. magic, on as many of its 8 bytes as the file has
        let prefix = try source.read(count: Int(min(size, UInt64(StolHeader.size))), at: 0)
        guard zip(prefix, StolHeader.magic).allSatisfy({ $0 == $1 }) else { throw .notAStolFile }
        // 4. the whole header
        guard prefix.count == StolHeader.size else { throw .fileTooSmall(bytes: size) }
        try events(.passed(.magic))
        let header = try StolHeader(parsing: prefix)
        try events(.passed(.header(schemaVersion: header.schemaVersion)))
        try events(.progress(.checkingHeader, fraction: 1))

        // 5. SHA-256 of the payload
        try events(.progress(.verifyingChecksum, fraction: 0))
        let payloadStart = UInt64(StolHeader.size)
        let payloadBytes = size - payloadStart
        var hasher = SHA256()
        try forEachChunk(of: source, from: payloadStart, to: size) { (chunk, done) throws(StolFormatError) in
            hasher.update(chunk)
            if done < payloadBytes { try events(.progress(.verifyingChecksum, fraction: fraction(done, of: payloadBytes))) }
        }
        let digest = hasher.finalize()
        guard digest == header.payloadSHA256 else { throw .checksumMismatch }
        try events(.passed(.checksum(sha256: digest)))
        try events(.progress(.verifyingChecksum, fraction: 1))

        // 6. Ed25519 over magic ‖ schema version ‖ digest
        try events(.progress(.verifyingSignature, fraction: 0))
        guard publicKey.isValidSignature(header.signature, for: header.signedMessage) else { throw .signatureInvalid }
        try events(.passed(.signature))
        try events(.progress(.verifyingSignature, fraction: 1))

        // 7. schema version, now that it is authentic
        guard options.supportedSchemaVersions.contains(header.schemaVersion) else {
            throw .incompatibleSchema(found: header.schemaVersion, supported: options.supportedSchemaVersions)
        }
        try events(.passed(.schemaVersion(header.schemaVersion)))

        // 8. decompress (hashing the payload again: the file may have changed since step 5)
        try events(.progress(.decompressing, fraction: 0))
        let inflater = try GzipInflater(limit: options.maximumDecompressedBytes)
        var rehash = SHA256()
        var sqliteHash = SHA256()
        var inflateError: StolFormatError?
        try forEachChunk(of: source, from: payloadStart, to: size) { (chunk, done) throws(StolFormatError) in
            rehash.update(chunk)
            guard inflateError == nil else { return }
            do throws(StolFormatError) {
                try inflater.update(chunk) { (out) throws(StolFormatError) in
                    sqliteHash.update(out)
                    try output(out)
                }
            } catch {
                switch error {
                case .corruptPayload, .decompressionLimit: inflateError = error  // reported after the re-hash
                default: throw error
                }
            }
            if done < payloadBytes { try events(.progress(.decompressing, fraction: fraction(done, of: payloadBytes))) }
        }
        guard rehash.finalize() == header.payloadSHA256 else { throw .checksumMismatch }
        if let inflateError { throw inflateError }
        try inflater.finish()
        let sqliteDigest = sqliteHash.finalize()
        try events(.passed(.decompression(bytes: inflater.outputBytes, sha256: sqliteDigest)))
        try events(.progress(.decompressing, fraction: 1))
        return Verified(header: header, fileBytes: size, sqliteBytes: inflater.outputBytes, sqliteSHA256: sqliteDigest)
    }

    private static func fraction(_ done: UInt64, of total: UInt64) -> Double {
        total == 0 ? 1 : Double(done) / Double(total)
    }

    /// Reads `[start, end)` in chunks; `body` gets each chunk and the bytes read so far.
    private static func forEachChunk(of source: some ByteSource, from start: UInt64, to end: UInt64,
                                     _ body: (UnsafeRawBufferPointer, UInt64) throws(StolFormatError) -> Void) throws(StolFormatError) {
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        var offset = start
        while offset < end {
            let count = Int(min(UInt64(chunkSize), end - offset))
            try typed {
                try buffer.withUnsafeMutableBytes { raw in
                    let slice = UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])
                    try source.readExactly(into: slice, at: offset)
                    try body(UnsafeRawBufferPointer(slice), offset + UInt64(count) - start)
                }
            }
            offset += UInt64(count)
        }
    }

    // MARK: Write

    /// What ``write(sqliteAt:to:schemaVersion:signingKey:level:)`` produced.
    public struct Written: Sendable, Equatable {
        public var header: StolHeader
        public var fileBytes: UInt64
        public var inputBytes: UInt64
    }

    /// Compresses the file at `input` (streaming), hashes and signs the payload, and writes
    /// header + payload to `output` atomically (temporary file, fsync, rename, fsync of the
    /// directory). Refuses an input the verifier would refuse after decompression (over 4 GiB)
    /// and a result over 2 GiB. The caller checks that `input` is a database of `schemaVersion`.
    @discardableResult
    public static func write(sqliteAt input: String, to output: String, schemaVersion: UInt32,
                             signingKey: Ed25519.PrivateKey, level: Int32 = 9) throws(StolFormatError) -> Written {
        let fd = open(input, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .fileUnreadable("\(input): \(errnoDescription())") }
        defer { close(fd) }
        let source = try DescriptorSource(fd)
        guard source.size <= maximumDecompressedBytes else { throw .decompressionLimit(limit: maximumDecompressedBytes) }
        let file = try typed { try AtomicFile(path: output) }
        try typed { try file.append([UInt8](repeating: 0, count: StolHeader.size)) }
        let deflater = GzipDeflater(level: level)
        var hasher = SHA256()
        var payloadBytes: UInt64 = 0
        let sink = { (chunk: UnsafeRawBufferPointer) throws(StolFormatError) in
            payloadBytes += UInt64(chunk.count)
            guard payloadBytes + UInt64(StolHeader.size) <= maximumFileBytes else {
                throw .fileTooLarge(bytes: payloadBytes + UInt64(StolHeader.size), limit: maximumFileBytes)
            }
            hasher.update(chunk)
            try typed { try file.append(chunk) }
        }
        try forEachChunk(of: source, from: 0, to: source.size) { (chunk, _) throws(StolFormatError) in
            try deflater.update(chunk, sink: sink)
        }
        try deflater.finish(sink: sink)
        let header = signedHeader(schemaVersion: schemaVersion, payloadSHA256: hasher.finalize(), signingKey: signingKey)
        try typed { try file.overwrite(header.serialized(), at: 0) }
        try typed { try file.commit(mode: 0o644) }
        return Written(header: header, fileBytes: payloadBytes + UInt64(StolHeader.size), inputBytes: source.size)
    }

    /// A complete `.stol` file around an already compressed `payload` (in memory: tests and vectors).
    public static func assemble(payload: [UInt8], schemaVersion: UInt32, signingKey: Ed25519.PrivateKey) -> [UInt8] {
        signedHeader(schemaVersion: schemaVersion, payloadSHA256: SHA256.hash(payload), signingKey: signingKey)
            .serialized() + payload
    }

    public static func signedHeader(schemaVersion: UInt32, payloadSHA256: [UInt8],
                                    signingKey: Ed25519.PrivateKey) -> StolHeader {
        let message = StolHeader.signedMessage(schemaVersion: schemaVersion, payloadSHA256: payloadSHA256)
        return StolHeader(schemaVersion: schemaVersion, payloadSHA256: payloadSHA256, signature: signingKey.sign(message))
    }
}

// MARK: Sources of bytes

protocol ByteSource {
    /// The size fixed when verification starts; a file that changes later is caught by the re-hash.
    var size: UInt64 { get }
    /// Fills `buffer` from `offset` completely, else throws ``StolFormatError/fileUnreadable(_:)``.
    func readExactly(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(StolFormatError)
}

extension ByteSource {
    func read(count: Int, at offset: UInt64) throws(StolFormatError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try typed { try bytes.withUnsafeMutableBytes { try readExactly(into: $0, at: offset) } }
        return bytes
    }
}

struct DescriptorSource: ByteSource {
    let fd: Int32
    let size: UInt64

    init(_ fd: Int32) throws(StolFormatError) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .fileUnreadable("fstat failed: \(errnoDescription())") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .fileUnreadable("not a regular file") }
        self.fd = fd
        size = UInt64(info.st_size)
    }

    func readExactly(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(StolFormatError) {
        var done = 0
        while done < buffer.count {
            let got = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if got < 0 {
                if errno == EINTR { continue }
                throw .fileUnreadable("read failed: \(errnoDescription())")
            }
            if got == 0 { throw .fileUnreadable("the file shrank while it was being read") }
            done += got
        }
    }
}

struct MemorySource: ByteSource {
    let bytes: [UInt8]
    var size: UInt64 { UInt64(bytes.count) }

    func readExactly(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(StolFormatError) {
        guard offset + UInt64(buffer.count) <= size else { throw .fileUnreadable("read past the end") }
        bytes.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[Int(offset)..<Int(offset) + buffer.count]))
        }
    }
}
