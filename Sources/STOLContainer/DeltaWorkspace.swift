import Glibc
import STOLFormat
import STOLModel

/// The files a delta is applied in (checks 11–13 of `protocol/STOL-FORMAT.md` §6):
/// the base (read-only), a private copy of the payload taken while it is hashed,
/// the output the result is written to and, for a row delta, the copy of the base
/// its rows are applied to (`work`).
///
/// The verifier passes its own unnamed scratch files and the base descriptor the
/// coordinator handed it; `stol-pipeline verify` and the tests use temporary files.
/// The payload is copied rather than mapped from the caller's file so that what is
/// applied is exactly what was hashed, however the file changes meanwhile, and so
/// that a file truncated under the verifier cannot fault its mapping.
public final class DeltaWorkspace {
    public let baseDescriptor: Int32?
    public let payloadDescriptor: Int32
    public let outputDescriptor: Int32
    public let workDescriptor: Int32?
    private let ownsDescriptors: Bool
    public private(set) var payloadBytes: UInt64 = 0
    public private(set) var outputBytes: UInt64 = 0

    /// Descriptors owned by the caller (the verifier's scratch files and the base it was handed).
    public init(baseDescriptor: Int32?, payloadDescriptor: Int32, outputDescriptor: Int32, workDescriptor: Int32? = nil) {
        self.baseDescriptor = baseDescriptor
        self.payloadDescriptor = payloadDescriptor
        self.outputDescriptor = outputDescriptor
        self.workDescriptor = workDescriptor
        ownsDescriptors = false
    }

    private init(owning base: Int32?, payload: Int32, output: Int32, work: Int32) {
        baseDescriptor = base
        payloadDescriptor = payload
        outputDescriptor = output
        workDescriptor = work
        ownsDescriptors = true
    }

    /// Three unnamed temporary files (in `$TMPDIR`, else `/var/tmp`) and the base at `basePath`, if any.
    public static func temporary(basePath: String?) throws(StolFormatError) -> DeltaWorkspace {
        var base: Int32?
        if let basePath {
            let fd = open(basePath, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .fileUnreadable("\(basePath): \(errnoDescription())") }
            base = fd
        }
        let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/var/tmp"
        func anonymous() throws(StolFormatError) -> Int32 {
            var template = Array((directory + "/stol-delta-XXXXXX").utf8CString)
            let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else { throw .outputFailed("cannot create a temporary file in \(directory): \(errnoDescription())") }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            return fd
        }
        do {
            let payload = try anonymous()
            let output = try anonymous()
            let work = try anonymous()
            return DeltaWorkspace(owning: base, payload: payload, output: output, work: work)
        } catch {
            if let base { close(base) }
            throw error
        }
    }

    deinit {
        guard ownsDescriptors else { return }
        if let baseDescriptor { close(baseDescriptor) }
        close(payloadDescriptor)
        close(outputDescriptor)
        if let workDescriptor { close(workDescriptor) }
    }

    func resetPayload() throws(StolFormatError) {
        guard ftruncate(payloadDescriptor, 0) == 0 else { throw .outputFailed("cannot empty the delta copy: \(errnoDescription())") }
        payloadBytes = 0
    }

    func keepPayload(_ chunk: UnsafeRawBufferPointer) throws(StolFormatError) {
        var done = 0
        while done < chunk.count {
            let written = pwrite(payloadDescriptor, chunk.baseAddress! + done, chunk.count - done, off_t(payloadBytes) + off_t(done))
            if written < 0 {
                if errno == EINTR { continue }
                throw .outputFailed("cannot copy the delta: \(errnoDescription())")
            }
            done += written
        }
        payloadBytes += UInt64(chunk.count)
    }

    /// Checks 11–12: the base's SHA-256, the frame's form, the frame applied into the output
    /// (a row delta's: its patchset applied to a copy of the base, written to the output).
    /// Returns the size and SHA-256 of the result (check 13 compares them).
    func apply(_ header: StolHeader) throws(StolFormatError) -> (UInt64, [UInt8]) {
        guard let baseDescriptor else {
            throw .deltaBaseMismatch("no base database was given for this delta of release \(header.baseRelease)")
        }
        var info = stat()
        guard fstat(baseDescriptor, &info) == 0 else { throw .fileUnreadable("the base: \(errnoDescription())") }
        // (The signed result's size was checked by StolFile.verify's check 10.)
        guard header.contentSize <= ZstdDelta.maximumDatabaseBytes else {
            throw .decompressionLimit(limit: ZstdDelta.maximumDatabaseBytes)
        }
        guard UInt64(info.st_size) <= ZstdDelta.maximumDatabaseBytes else {
            throw .deltaBaseMismatch("the base of release \(header.baseRelease) is \(info.st_size) bytes, "
                + "over the \(ZstdDelta.maximumDatabaseBytes) bytes a delta applies to")
        }
        let base = try MappedFile(readOnly: baseDescriptor, size: UInt64(info.st_size))
        func checkBase(_ digest: [UInt8]) throws(StolFormatError) {
            guard digest == header.baseSHA256 else {
                throw .deltaBaseMismatch("the base given has SHA-256 \(digest.hexString.prefix(16))…; the delta applies to release \(header.baseRelease) with SHA-256 \(header.baseSHA256.hexString.prefix(16))…")
            }
        }
        let payload = try MappedFile(readOnly: payloadDescriptor, size: payloadBytes)
        let size: UInt64
        if header.kind == .rowDelta {
            guard let workDescriptor else { throw .outputFailed("a row delta needs a file to apply its rows in") }
            // Check 11 runs on another thread while the rows are applied to the copy (the
            // verifier has two cores): the copy is scratch until the base is proven, and
            // check 11's verdict is given first, whatever applying the rows said.
            nonisolated(unsafe) let baseBytes = base.bytes  // mapped until this function returns, after the join
            let hashing = BackgroundWork { () -> [UInt8] in
                var hasher = SHA256()
                hasher.update(baseBytes)
                return hasher.finalize()
            }
            let applied: Result<UInt64, StolFormatError>
            do throws(StolFormatError) {
                applied = .success(try RowDelta.apply(payload.bytes, base: base.bytes, baseDescriptor: baseDescriptor,
                                                      work: workDescriptor, output: outputDescriptor))
            } catch {
                applied = .failure(error)
            }
            try checkBase(hashing.join())
            size = try applied.get()
        } else {
            var baseHasher = SHA256()
            baseHasher.update(base.bytes)
            try checkBase(baseHasher.finalize())
            try ZstdDelta.checkFrame(payload.bytes, expectedSize: header.contentSize)
            let output = try MappedFile(writable: outputDescriptor, size: header.contentSize)
            try ZstdDelta.apply(payload.bytes, base: base.bytes, into: output.buffer)
            size = header.contentSize
        }
        outputBytes = size
        // A result of another size cannot be the signed one (check 13 says so); only hash what can be.
        guard size == header.contentSize else { return (size, []) }
        let output = try MappedFile(readOnly: outputDescriptor, size: size)
        var hasher = SHA256()
        hasher.update(output.bytes)
        return (size, hasher.finalize())
    }

    /// Streams the result (after a successful ``apply(_:)``) to `sink` in 1 MiB chunks.
    public func copyOutput(to sink: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void) throws(StolFormatError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: UInt64 = 0
        while offset < outputBytes {
            let want = Int(min(UInt64(buffer.count), outputBytes - offset))
            let got = pread(outputDescriptor, buffer.baseAddress!, want, off_t(offset))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw .fileUnreadable("the delta's result: \(errnoDescription())") }
            try sink(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            offset += UInt64(got)
        }
    }
}

extension MappedFile {
    /// Maps the file at `path` read-only (the pipeline's inputs).
    public static func open(path: String) throws(StolFormatError) -> MappedFile {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .fileUnreadable("\(path): \(errnoDescription())") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .fileUnreadable("\(path): \(errnoDescription())") }
        return try MappedFile(readOnly: fd, size: UInt64(info.st_size))
    }
}
