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
        /// The key that signed.
        public var keyID: KeyID
        public var payloadBytes: UInt64 { fileBytes - UInt64(header.size) }
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
        try verify(fileDescriptor: fd, trust: .trusting(publicKey), options: options, events: events, output: output)
    }

    /// Verifies the file open as `fd` against the trusted keys at `now` (Unix seconds).
    /// A delta (kind 2) needs `delta`: its base, and the files it is applied in; its
    /// result is left in `delta`'s output file and `output` is not called.
    public static func verify(fileDescriptor fd: Int32, trust: TrustedKeys, now: Int64 = TrustedKeys.currentTime(),
                              options: VerifyOptions = .init(), delta: DeltaWorkspace? = nil,
                              events: (Event) throws(StolFormatError) -> Void = { _ in },
                              output: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void) throws(StolFormatError) -> Verified {
        let source = try DescriptorSource(fd)
        return try verify(source, trust: trust, now: now, options: options, delta: delta, events: events, output: output)
    }

    /// Verifies an in-memory file (tests, vectors).
    public static func verify(bytes: [UInt8], publicKey: Ed25519.PublicKey, options: VerifyOptions = .init(),
                              events: (Event) throws(StolFormatError) -> Void = { _ in },
                              output: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void = { _ in }) throws(StolFormatError) -> Verified {
        try verify(MemorySource(bytes: bytes), trust: .trusting(publicKey), now: TrustedKeys.currentTime(), options: options, delta: nil,
                   events: events, output: output)
    }

    /// Verifies an in-memory file against a set of keys (tests, vectors).
    public static func verify(bytes: [UInt8], trust: TrustedKeys, now: Int64 = TrustedKeys.currentTime(), options: VerifyOptions = .init(),
                              delta: DeltaWorkspace? = nil,
                              output: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void = { _ in }) throws(StolFormatError) -> Verified {
        try verify(MemorySource(bytes: bytes), trust: trust, now: now, options: options, delta: delta, events: { _ in }, output: output)
    }

    /// Verifies the file at `path`; with `extractTo`, the database it yields is written there
    /// (mode 0644, atomically: the path appears only when every check has passed). A delta
    /// needs `basePath`.
    public static func verify(path: String, publicKey: Ed25519.PublicKey, options: VerifyOptions = .init(),
                              extractTo destination: String? = nil,
                              events: (Event) -> Void = { _ in }) throws(StolFormatError) -> Verified {
        try verify(path: path, trust: .trusting(publicKey), options: options, extractTo: destination, events: events)
    }

    public static func verify(path: String, trust: TrustedKeys, now: Int64 = TrustedKeys.currentTime(), options: VerifyOptions = .init(),
                              basePath: String? = nil, extractTo destination: String? = nil,
                              events: (Event) -> Void = { _ in }) throws(StolFormatError) -> Verified {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .fileUnreadable("\(path): \(errnoDescription())") }
        defer { close(fd) }
        let delta = try DeltaWorkspace.temporary(basePath: basePath)
        guard let destination else {
            return try verify(fileDescriptor: fd, trust: trust, now: now, options: options, delta: delta, events: events) { _ in }
        }
        let file = try typed { try AtomicFile(path: destination) }
        let verified = try verify(fileDescriptor: fd, trust: trust, now: now, options: options, delta: delta, events: events) {
            (chunk) throws(StolFormatError) in try typed { try file.append(chunk) }
        }
        if verified.header.kind?.isDelta == true { try delta.copyOutput { (chunk) throws(StolFormatError) in try typed { try file.append(chunk) } } }
        try typed { try file.commit(mode: 0o644) }
        return verified
    }

    static func verify(_ source: some ByteSource, trust: TrustedKeys, now: Int64, options: VerifyOptions, delta: DeltaWorkspace?,
                       events: (Event) throws(StolFormatError) -> Void,
                       output: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void) throws(StolFormatError) -> Verified {
        // 1–2. size limits
        let size = source.size
        guard size >= minimumFileBytes else { throw .fileTooSmall(bytes: size) }
        guard size <= options.maximumFileBytes else { throw .fileTooLarge(bytes: size, limit: options.maximumFileBytes) }
        try events(.passed(.fileSize(bytes: size)))
        try events(.progress(.checkingHeader, fraction: 0))

        // 3. magic (of either version), on as many of its 8 bytes as the file has
        let prefix = try source.read(count: Int(min(size, UInt64(StolHeader.maximumSize))), at: 0)
        guard StolHeader.startsLikeMagic(prefix.prefix(StolHeader.magic.count)) else { throw .notAStolFile }
        // 4. the whole header
        guard let headerSize = StolHeader.headerSize(magic: prefix), prefix.count >= headerSize else { throw .fileTooSmall(bytes: size) }
        try events(.passed(.magic))
        let header = try StolHeader(parsing: prefix)
        try events(.passed(.header(schemaVersion: header.schemaVersion)))
        try events(.progress(.checkingHeader, fraction: 1))

        // 5. SHA-256 of the payload (a delta's payload is copied while it is hashed:
        // what is applied later is exactly what was hashed, whatever the file does)
        try events(.progress(.verifyingChecksum, fraction: 0))
        let payloadStart = UInt64(headerSize)
        let payloadBytes = size - payloadStart
        let keepsPayload = header.formatVersion == 2 && StolHeader.Kind(rawValue: header.kindByte)?.isDelta == true
        if keepsPayload { try delta?.resetPayload() }
        var hasher = SHA256()
        try forEachChunk(of: source, from: payloadStart, to: size) { (chunk, done) throws(StolFormatError) in
            hasher.update(chunk)
            if keepsPayload { try delta?.keepPayload(chunk) }
            if done < payloadBytes { try events(.progress(.verifyingChecksum, fraction: fraction(done, of: payloadBytes))) }
        }
        let digest = hasher.finalize()
        guard digest == header.payloadSHA256 else { throw .checksumMismatch }
        try events(.passed(.checksum(sha256: digest)))
        try events(.progress(.verifyingChecksum, fraction: 1))

        // 6–8. the key, the signature, then the form of the authentic header
        try events(.progress(.verifyingSignature, fraction: 0))
        let keyID = try header.authenticate(with: trust, now: now)
        try events(.passed(.signature))
        try events(.progress(.verifyingSignature, fraction: 1))

        // 9. schema version, now that it is authentic
        guard options.supportedSchemaVersions.contains(header.schemaVersion) else {
            throw .incompatibleSchema(found: header.schemaVersion, supported: options.supportedSchemaVersions)
        }
        try events(.passed(.schemaVersion(header.schemaVersion)))
        // 10. the signed content size: within the limit, and for a delta within the largest
        // database a delta yields (its result is mapped whole), before any base is looked at
        if header.formatVersion == 2, header.contentSize > options.maximumDecompressedBytes {
            throw .decompressionLimit(limit: options.maximumDecompressedBytes)
        }
        if header.formatVersion == 2, header.kind?.isDelta == true, header.contentSize > ZstdDelta.maximumDatabaseBytes {
            throw .decompressionLimit(limit: ZstdDelta.maximumDatabaseBytes)
        }

        if header.kind?.isDelta == true {
            // 11–13. the base, the frame applied to it, the result against the signed content
            guard let delta else { throw .deltaBaseMismatch("no base database was given for this delta of \(header.baseRelease)") }
            try events(.progress(.decompressing, fraction: 0))
            let (bytes, sha) = try delta.apply(header)
            try checkContent(header, bytes: bytes, sha256: sha)
            try events(.passed(.decompression(bytes: bytes, sha256: sha)))
            try events(.progress(.decompressing, fraction: 1))
            return Verified(header: header, fileBytes: size, keyID: keyID, sqliteBytes: bytes, sqliteSHA256: sha)
        }

        // 12. decompress (hashing the payload again: the file may have changed since step 5)
        try events(.progress(.decompressing, fraction: 0))
        let inflater = try GzipInflater(limit: options.maximumDecompressedBytes)
        // Version 2 signs the size: inflating stops one byte past it, so a bomb costs no more than an
        // honest file. That byte is CONTENT_HASH_MISMATCH (check 13: it cannot be the signed content),
        // unless it is also past the limit (DECOMPRESSION_LIMIT, check 12, thrown by the inflater first).
        let signedSize: UInt64? = header.formatVersion == 2 ? header.contentSize : nil
        var rehash = SHA256()
        var sqliteHash = SHA256()
        var inflateError: StolFormatError?
        try forEachChunk(of: source, from: payloadStart, to: size) { (chunk, done) throws(StolFormatError) in
            rehash.update(chunk)
            guard inflateError == nil else { return }
            do throws(StolFormatError) {
                try inflater.update(chunk) { (out) throws(StolFormatError) in
                    if let signedSize, inflater.outputBytes > signedSize {
                        throw .contentHashMismatch("it decompresses to more than the \(signedSize) bytes the header signs")
                    }
                    sqliteHash.update(out)
                    try output(out)
                }
            } catch {
                switch error {
                case .corruptPayload, .decompressionLimit, .contentHashMismatch: inflateError = error  // reported after the re-hash
                default: throw error
                }
            }
            if done < payloadBytes { try events(.progress(.decompressing, fraction: fraction(done, of: payloadBytes))) }
        }
        guard rehash.finalize() == header.payloadSHA256 else { throw .checksumMismatch }
        if let inflateError { throw inflateError }
        try inflater.finish()
        let sqliteDigest = sqliteHash.finalize()
        // 13. what it decompressed to is the signed content
        try checkContent(header, bytes: inflater.outputBytes, sha256: sqliteDigest)
        try events(.passed(.decompression(bytes: inflater.outputBytes, sha256: sqliteDigest)))
        try events(.progress(.decompressing, fraction: 1))
        return Verified(header: header, fileBytes: size, keyID: keyID, sqliteBytes: inflater.outputBytes, sqliteSHA256: sqliteDigest)
    }

    /// Check 13 (version 2): size and SHA-256 of the result equal the signed content's.
    static func checkContent(_ header: StolHeader, bytes: UInt64, sha256: [UInt8]) throws(StolFormatError) {
        guard header.formatVersion == 2 else { return }
        guard bytes == header.contentSize else {
            throw .contentHashMismatch("it is \(bytes) bytes, the header signs \(header.contentSize)")
        }
        guard sha256 == header.contentSHA256 else {
            throw .contentHashMismatch("its SHA-256 is \(sha256.hexString.prefix(16))…, the header signs \(header.contentSHA256.hexString.prefix(16))…")
        }
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

    /// What ``write(sqliteAt:to:schemaVersion:signingKey:level:labels:)`` produced.
    public struct Written: Sendable, Equatable {
        public var header: StolHeader
        public var fileBytes: UInt64
        public var inputBytes: UInt64
    }

    /// The release and id namespace a version 2 header names (the database's provenance).
    public struct Labels: Sendable, Equatable {
        public var release: String
        public var idNamespace: String
        public init(release: String, idNamespace: String) {
            self.release = release
            self.idNamespace = idNamespace
        }
        /// A database without provenance.
        public static let unknown = Labels(release: "unknown", idNamespace: "unknown")
    }

    /// Compresses the file at `input` (streaming), hashes the input and the payload, signs,
    /// and writes header + payload to `output` atomically (temporary file, fsync, rename,
    /// fsync of the directory). Version 2 unless `labels` is nil (the legacy version 1,
    /// for tests of old files). Refuses an input the verifier would refuse after
    /// decompression (over 4 GiB) and a result over 2 GiB. The caller checks that `input`
    /// is a database of `schemaVersion` whose provenance matches `labels`.
    @discardableResult
    public static func write(sqliteAt input: String, to output: String, schemaVersion: UInt32,
                             signingKey: Ed25519.PrivateKey, level: Int32 = 9,
                             labels: Labels? = .unknown) throws(StolFormatError) -> Written {
        if let labels {
            guard StolHeader.isValidRelease(labels.release), StolHeader.isValidText(labels.idNamespace) else {
                throw .outputFailed("the release \"\(labels.release)\" or id namespace \"\(labels.idNamespace)\" cannot be written in a header (1–32 of A–Z a–z 0–9 . _ + -, the first a letter or digit; a release never 'bundled')")
            }
        }
        let fd = open(input, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .fileUnreadable("\(input): \(errnoDescription())") }
        defer { close(fd) }
        let source = try DescriptorSource(fd)
        guard source.size <= maximumDecompressedBytes else { throw .decompressionLimit(limit: maximumDecompressedBytes) }
        let headerSize = labels == nil ? StolHeader.version1Size : StolHeader.version2Size
        let file = try typed { try AtomicFile(path: output) }
        try typed { try file.append([UInt8](repeating: 0, count: headerSize)) }
        let deflater = GzipDeflater(level: level)
        var hasher = SHA256()
        var contentHasher = SHA256()
        var payloadBytes: UInt64 = 0
        let sink = { (chunk: UnsafeRawBufferPointer) throws(StolFormatError) in
            payloadBytes += UInt64(chunk.count)
            guard payloadBytes + UInt64(headerSize) <= maximumFileBytes else {
                throw .fileTooLarge(bytes: payloadBytes + UInt64(headerSize), limit: maximumFileBytes)
            }
            hasher.update(chunk)
            try typed { try file.append(chunk) }
        }
        try forEachChunk(of: source, from: 0, to: source.size) { (chunk, _) throws(StolFormatError) in
            contentHasher.update(chunk)
            try deflater.update(chunk, sink: sink)
        }
        try deflater.finish(sink: sink)
        let header: StolHeader
        if let labels {
            let content = StolHeader.Content(schemaVersion: schemaVersion, size: source.size, sha256: contentHasher.finalize(),
                                              release: labels.release, idNamespace: labels.idNamespace)
            header = StolHeader.signed(content, payloadSHA256: hasher.finalize(), key: signingKey)
        } else {
            header = StolHeader.signedVersion1(schemaVersion: schemaVersion, payloadSHA256: hasher.finalize(), key: signingKey)
        }
        try typed { try file.overwrite(header.serialized(), at: 0) }
        try typed { try file.commit(mode: 0o644) }
        return Written(header: header, fileBytes: payloadBytes + UInt64(headerSize), inputBytes: source.size)
    }

    /// Writes a signed delta (§10 of the format) that turns the database at `base` into
    /// the one at `input`: a zstd frame with the base as its prefix, of the new database's
    /// bytes (`kind` `.delta`) or of the patchset of its rows (`.rowDelta`, ``RowDelta``;
    /// it throws when a patchset cannot express the difference).
    @discardableResult
    public static func writeDelta(base: String, baseRelease: String, input: String, to output: String, schemaVersion: UInt32,
                                  signingKey: Ed25519.PrivateKey, labels: Labels, level: Int32 = 12,
                                  kind: StolHeader.Kind = .delta) throws(StolFormatError) -> Written {
        guard kind.isDelta else { throw .outputFailed("a delta is of kind 2 or 3") }
        guard StolHeader.isValidRelease(labels.release), StolHeader.isValidText(labels.idNamespace), StolHeader.isValidRelease(baseRelease) else {
            throw .outputFailed("a release or id namespace cannot be written in a header (1–32 of A–Z a–z 0–9 . _ + -, the first a letter or digit; a release never 'bundled')")
        }
        let baseFile = try MappedFile.open(path: base)
        let target = try MappedFile.open(path: input)
        let patchset = kind == .rowDelta ? try RowDelta.patchset(base: base, target: input) : nil
        let file = try typed { try AtomicFile(path: output) }
        try typed { try file.append([UInt8](repeating: 0, count: StolHeader.version2Size)) }
        var hasher = SHA256()
        var payloadBytes: UInt64 = 0
        try ZstdDelta.create(base: baseFile.bytes, target: patchset?.bytes ?? target.bytes, level: level) { (chunk) throws(StolFormatError) in
            payloadBytes += UInt64(chunk.count)
            guard payloadBytes + UInt64(StolHeader.version2Size) <= maximumFileBytes else {
                throw .fileTooLarge(bytes: payloadBytes + UInt64(StolHeader.version2Size), limit: maximumFileBytes)
            }
            hasher.update(chunk)
            try typed { try file.append(chunk) }
        }
        var contentHasher = SHA256()
        contentHasher.update(target.bytes)
        var baseHasher = SHA256()
        baseHasher.update(baseFile.bytes)
        let content = StolHeader.Content(kind: kind, schemaVersion: schemaVersion, size: UInt64(target.bytes.count),
                                          sha256: contentHasher.finalize(), release: labels.release, idNamespace: labels.idNamespace,
                                          baseSHA256: baseHasher.finalize(), baseRelease: baseRelease)
        let header = StolHeader.signed(content, payloadSHA256: hasher.finalize(), key: signingKey)
        try typed { try file.overwrite(header.serialized(), at: 0) }
        try typed { try file.commit(mode: 0o644) }
        return Written(header: header, fileBytes: payloadBytes + UInt64(StolHeader.version2Size), inputBytes: UInt64(target.bytes.count))
    }

    /// A complete version 1 `.stol` file around an already compressed `payload` (in memory: tests and vectors).
    public static func assemble(payload: [UInt8], schemaVersion: UInt32, signingKey: Ed25519.PrivateKey) -> [UInt8] {
        StolHeader.signedVersion1(schemaVersion: schemaVersion, payloadSHA256: SHA256.hash(payload), key: signingKey)
            .serialized() + payload
    }

    /// A complete version 2 file around `payload`, its header saying `content` (tests: any
    /// field can be made to lie, and the header is still validly signed).
    public static func assemble(payload: [UInt8], content: StolHeader.Content, signingKey: Ed25519.PrivateKey,
                                edit: (inout StolHeader) -> Void = { _ in }) -> [UInt8] {
        var header = StolHeader.signed(content, payloadSHA256: SHA256.hash(payload), key: signingKey)
        edit(&header)
        header.signature = signingKey.sign(header.signedMessage)
        return header.serialized() + payload
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
