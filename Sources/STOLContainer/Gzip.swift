import CZlib
import STOLFormat

/// Streaming gzip (RFC 1952) through zlib, in fixed-size buffers.
///
/// `.stol` payloads are exactly one gzip member with nothing after it
/// (`protocol/STOL-FORMAT.md` §4): ``GzipInflater`` decodes only the gzip
/// wrapper (not zlib or raw deflate), checks the CRC-32 and ISIZE trailer,
/// refuses bytes after the member (a second member included), and stops with
/// ``StolFormatError/decompressionLimit(limit:)`` before handing out a byte
/// beyond its output limit.
public enum Gzip {
    /// zlib's `windowBits` for "32 KiB window, gzip wrapper".
    static let gzipWindowBits: Int32 = 15 + 16
    static let bufferSize = 64 * 1024

    /// Compresses `bytes` into one gzip member (MTIME 0, no file name).
    public static func compress(_ bytes: [UInt8], level: Int32 = 9) -> [UInt8] {
        var output: [UInt8] = []
        let deflater = GzipDeflater(level: level)
        bytes.withUnsafeBytes { deflater.update($0) { output.append(contentsOf: $0) } }
        deflater.finish { output.append(contentsOf: $0) }
        return output
    }

    /// Decompresses one complete gzip member of at most `limit` decompressed bytes.
    public static func decompress(_ bytes: [UInt8], limit: UInt64) throws(StolFormatError) -> [UInt8] {
        var output: [UInt8] = []
        let inflater = try GzipInflater(limit: limit)
        try typed {
            try bytes.withUnsafeBytes { input in
                try inflater.update(input) { (chunk) throws(StolFormatError) in output.append(contentsOf: chunk) }
            }
        }
        try inflater.finish()
        return output
    }

    static func zlibMessage(_ stream: UnsafeMutablePointer<z_stream>, _ status: Int32) -> String {
        if let message = stream.pointee.msg { return String(cString: message) }
        return "zlib status \(status)"
    }
}

/// Incremental gzip compression: feed input with ``update(_:sink:)``, end with ``finish(sink:)``.
public final class GzipDeflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private let buffer: UnsafeMutablePointer<UInt8>
    private var finished = false

    /// `level` 0…9 (9: smallest). The header has MTIME 0, no name and zlib's OS byte.
    public init(level: Int32 = 9) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        buffer = .allocate(capacity: Gzip.bufferSize)
        // deflateInit2 is a macro; call the function behind it (docs/design/architecture.md §12).
        let status = deflateInit2_(stream, level, Z_DEFLATED, Gzip.gzipWindowBits, 8, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "deflateInit2_ failed: \(status)")
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        buffer.deallocate()
    }

    public func update<E: Error>(_ input: UnsafeRawBufferPointer, sink: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
        precondition(!finished, "update after finish")
        guard let base = input.baseAddress, input.count > 0 else { return }
        var offset = 0
        while offset < input.count {
            let slice = min(input.count - offset, 1 << 30)
            stream.pointee.next_in = UnsafeMutablePointer(mutating: (base + offset).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = UInt32(slice)
            repeat {
                try run(flush: Z_NO_FLUSH, sink: sink)
            } while stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0
            offset += slice
        }
    }

    public func finish<E: Error>(sink: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
        precondition(!finished, "finish twice")
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        while try run(flush: Z_FINISH, sink: sink) != Z_STREAM_END {}
        finished = true
    }

    @discardableResult
    private func run<E: Error>(flush: Int32, sink: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) -> Int32 {
        stream.pointee.next_out = buffer
        stream.pointee.avail_out = UInt32(Gzip.bufferSize)
        let status = deflate(stream, flush)
        precondition(status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR, "deflate failed: \(status)")
        let produced = Gzip.bufferSize - Int(stream.pointee.avail_out)
        if produced > 0 { try sink(UnsafeRawBufferPointer(start: buffer, count: produced)) }
        return status
    }
}

/// Incremental gzip decompression with a hard limit on the output.
public final class GzipInflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private let buffer: UnsafeMutablePointer<UInt8>
    /// The most decompressed bytes ``update(_:sink:)`` hands out; one more is ``StolFormatError/decompressionLimit(limit:)``.
    public let limit: UInt64
    /// Decompressed bytes handed to the sink so far.
    public private(set) var outputBytes: UInt64 = 0
    /// True once the gzip member's trailer (CRC-32, ISIZE) has been read and checked.
    public private(set) var isFinished = false

    public init(limit: UInt64) throws(StolFormatError) {
        self.limit = limit
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        buffer = .allocate(capacity: Gzip.bufferSize)
        // windowBits 15+16: gzip wrapper only (no zlib, no raw deflate, no auto-detection).
        let status = inflateInit2_(stream, Gzip.gzipWindowBits, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            buffer.deallocate()
            throw .outputFailed("inflateInit2_ failed: \(status)")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        buffer.deallocate()
    }

    /// Feeds the next compressed bytes; decompressed bytes go to `sink` in chunks of at most 64 KiB.
    public func update(_ input: UnsafeRawBufferPointer,
                       sink: (UnsafeRawBufferPointer) throws(StolFormatError) -> Void) throws(StolFormatError) {
        guard let base = input.baseAddress, input.count > 0 else { return }
        guard !isFinished else { throw .corruptPayload("\(input.count) bytes after the end of the gzip member") }
        var offset = 0
        while offset < input.count {
            let slice = min(input.count - offset, 1 << 30)
            stream.pointee.next_in = UnsafeMutablePointer(mutating: (base + offset).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = UInt32(slice)
            while true {
                stream.pointee.next_out = buffer
                stream.pointee.avail_out = UInt32(Gzip.bufferSize)
                let status = inflate(stream, Z_NO_FLUSH)
                switch status {
                case Z_OK, Z_BUF_ERROR: break
                case Z_STREAM_END: isFinished = true
                default: throw .corruptPayload(Gzip.zlibMessage(stream, status))
                }
                let produced = Gzip.bufferSize - Int(stream.pointee.avail_out)
                if produced > 0 {
                    guard UInt64(produced) <= limit - outputBytes else { throw .decompressionLimit(limit: limit) }
                    outputBytes += UInt64(produced)
                    try sink(UnsafeRawBufferPointer(start: buffer, count: produced))
                }
                if isFinished {
                    let trailing = Int(stream.pointee.avail_in) + (input.count - offset - slice)
                    guard trailing == 0 else { throw .corruptPayload("\(trailing) bytes after the end of the gzip member") }
                    return
                }
                // A full buffer may mean more output is pending; otherwise zlib has used up this input.
                if status == Z_BUF_ERROR || (stream.pointee.avail_out != 0 && stream.pointee.avail_in == 0) { break }
            }
            offset += slice
        }
    }

    /// Call after the last input: throws unless the gzip member ended (trailer checked).
    public func finish() throws(StolFormatError) {
        guard isFinished else { throw .corruptPayload("the gzip member is truncated") }
    }
}
