import CZstd
import STOLFormat
import Glibc

/// The payload of a delta (`protocol/STOL-FORMAT.md` §10): one zstd frame made with
/// the base database as its reference prefix (zstd's `--patch-from`).
///
/// zstd is the well-kept library that does this job (Debian's libzstd): the frame
/// copies the runs of the base that survive into the new release, and carries the
/// rest. Applying decompresses in one call into a buffer of the signed size (the
/// verifier maps its unnamed scratch file there), so no window buffer of the
/// database's size is ever allocated: memory is the page cache of three files.
public enum ZstdDelta {
    /// zstd's largest window, and so the largest base or result: 2 GiB.
    public static let maximumWindowLog: Int32 = 31
    public static let maximumDatabaseBytes: UInt64 = 1 << 31

    /// Compresses `target` against `base` into one frame with its content size,
    /// handing the compressed bytes to `sink` in chunks.
    public static func create(base: UnsafeRawBufferPointer, target: UnsafeRawBufferPointer, level: Int32,
                              sink: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void) throws(StolFormatError) {
        guard UInt64(base.count) <= maximumDatabaseBytes, UInt64(target.count) <= maximumDatabaseBytes else {
            throw .fileTooLarge(bytes: UInt64(max(base.count, target.count)), limit: maximumDatabaseBytes)
        }
        guard let context = ZSTD_createCCtx() else { throw .outputFailed("zstd: out of memory") }
        defer { ZSTD_freeCCtx(context) }
        let largest = max(base.count, target.count, 1)
        var windowLog: Int32 = 10
        while (1 << Int(windowLog)) < largest && windowLog < maximumWindowLog { windowLog += 1 }
        try check(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level))
        try check(ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, windowLog))
        try check(ZSTD_CCtx_setParameter(context, ZSTD_c_enableLongDistanceMatching, 1))
        try check(ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1))
        try check(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 0))
        try check(ZSTD_CCtx_setPledgedSrcSize(context, UInt64(target.count)))
        if base.count > 0 { try check(ZSTD_CCtx_refPrefix(context, base.baseAddress, base.count)) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(ZSTD_CStreamOutSize()), alignment: 16)
        defer { buffer.deallocate() }
        var input = ZSTD_inBuffer(src: target.baseAddress, size: target.count, pos: 0)
        while true {
            var output = ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
            let remaining = try check(ZSTD_compressStream2(context, &output, &input, ZSTD_e_end))
            if output.pos > 0 { try sink(UnsafeRawBufferPointer(rebasing: buffer[0..<output.pos])) }
            if remaining == 0 { break }
        }
    }

    /// The frame's form (check 12's first half): exactly one zstd frame, its
    /// content size present and equal to `expectedSize`, nothing after it.
    public static func checkFrame(_ payload: UnsafeRawBufferPointer, expectedSize: UInt64) throws(StolFormatError) {
        let contentSize = try statedSize(payload)
        guard contentSize == expectedSize else {
            throw .corruptPayload("the zstd frame states \(contentSize) bytes, the header signs \(expectedSize)")
        }
    }

    /// The same form for a row delta's frame, whose content (a patchset) has no signed
    /// size: its stated size at most `maximumSize`.
    public static func checkFrame(_ payload: UnsafeRawBufferPointer, maximumSize: UInt64) throws(StolFormatError) {
        let contentSize = try statedSize(payload)
        guard contentSize <= maximumSize else {
            throw .corruptPayload("the zstd frame states \(contentSize) bytes, over the \(maximumSize) a row delta may hold")
        }
    }

    /// Exactly one frame, nothing after it, its content size stated: that size.
    private static func statedSize(_ payload: UnsafeRawBufferPointer) throws(StolFormatError) -> UInt64 {
        guard payload.count >= 4, let base = payload.baseAddress else { throw .corruptPayload("the delta is not a zstd frame") }
        guard payload.loadUnaligned(as: UInt32.self).littleEndian == UInt32(ZSTD_MAGICNUMBER) else {
            throw .corruptPayload("the delta is not a zstd frame")
        }
        let frameSize = ZSTD_findFrameCompressedSize(base, payload.count)
        guard ZSTD_isError(frameSize) == 0 else {
            throw .corruptPayload("the zstd frame is malformed: \(String(cString: ZSTD_getErrorName(frameSize)))")
        }
        guard frameSize == payload.count else {
            throw .corruptPayload("\(payload.count - frameSize) bytes after the zstd frame")
        }
        let contentSize = ZSTD_getFrameContentSize(base, payload.count)
        guard contentSize != ZSTD_CONTENTSIZE_UNKNOWN, contentSize != ZSTD_CONTENTSIZE_ERROR else {
            throw .corruptPayload("the zstd frame does not state its content size")
        }
        return UInt64(contentSize)
    }

    /// The content size a frame states, if it states one (tools and the fuzz target).
    public static func declaredContentSize(_ payload: [UInt8]) -> UInt64? {
        let size = payload.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        return size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR ? nil : UInt64(size)
    }

    /// Decompresses the frame against `base` into `output` (exactly the frame's content size).
    public static func apply(_ payload: UnsafeRawBufferPointer, base: UnsafeRawBufferPointer,
                             into output: UnsafeMutableRawBufferPointer) throws(StolFormatError) {
        guard let context = ZSTD_createDCtx() else { throw .outputFailed("zstd: out of memory") }
        defer { ZSTD_freeDCtx(context) }
        try check(ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, maximumWindowLog), corrupt: true)
        if base.count > 0 { try check(ZSTD_DCtx_refPrefix(context, base.baseAddress, base.count), corrupt: true) }
        let written = ZSTD_decompressDCtx(context, output.baseAddress, output.count, payload.baseAddress, payload.count)
        guard ZSTD_isError(written) == 0 else {
            throw .corruptPayload("the delta does not apply: \(String(cString: ZSTD_getErrorName(written)))")
        }
        guard written == output.count else {
            throw .corruptPayload("the delta produced \(written) bytes, not the \(output.count) its frame states")
        }
    }

    @discardableResult
    private static func check(_ code: Int, corrupt: Bool = false) throws(StolFormatError) -> Int {
        guard ZSTD_isError(code) != 0 else { return code }
        let message = "zstd: \(String(cString: ZSTD_getErrorName(code)))"
        throw corrupt ? .corruptPayload(message) : .outputFailed(message)
    }
}

/// A file mapped into memory: the base of a delta (read-only) or the buffer a delta
/// is applied into (read-write, shared, so the bytes land in the file).
public final class MappedFile {
    public let buffer: UnsafeMutableRawBufferPointer

    /// Maps `size` bytes of `fd` read-only (`size` 0: an empty buffer).
    public init(readOnly fd: Int32, size: UInt64) throws(StolFormatError) {
        buffer = try Self.map(fd, size: size, protection: PROT_READ, flags: MAP_PRIVATE)
    }

    /// Sets the file's length to `size` and maps it read-write.
    public init(writable fd: Int32, size: UInt64) throws(StolFormatError) {
        guard ftruncate(fd, off_t(size)) == 0 else { throw .outputFailed("cannot size the output: \(errnoDescription())") }
        buffer = try Self.map(fd, size: size, protection: PROT_READ | PROT_WRITE, flags: MAP_SHARED)
    }

    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(buffer) }

    deinit { if let base = buffer.baseAddress { munmap(base, buffer.count) } }

    private static func map(_ fd: Int32, size: UInt64, protection: Int32, flags: Int32) throws(StolFormatError) -> UnsafeMutableRawBufferPointer {
        guard size > 0 else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
        guard size <= UInt64(Int.max), let address = mmap(nil, Int(size), protection, flags, fd, 0), address != MAP_FAILED else {
            throw .fileUnreadable("cannot map \(size) bytes: \(errnoDescription())")
        }
        return UnsafeMutableRawBufferPointer(start: address, count: Int(size))
    }
}
