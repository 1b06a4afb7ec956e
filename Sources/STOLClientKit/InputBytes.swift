import CZlib
import Glibc

/// The bytes a batch command reads from a descriptor: as they are, or inflated when
/// they start with gzip's magic (`1f 8b`), so that `stol-client lineage < reads.txt.gz`
/// reads the lines of the text (issue 34). Members one after another (`cat a.gz b.gz`)
/// are read one after another, as `zcat` reads them. What is inflated is read in
/// pieces of at most the caller's buffer: a small file that inflates to gigabytes
/// costs no more memory than the plain text would.
///
/// The container's `GzipInflater` (STOLContainer) is not this: a `.stol` file holds
/// exactly one member, under a signed size limit, and the client links no container code.
final class InputBytes {
    /// Why the input could not be read.
    enum Failure: Error {
        /// `read(2)` failed with this errno.
        case unreadable(Int32)
        /// The gzip data is damaged (zlib's message).
        case corrupt(String)
    }

    private let descriptor: Int32
    /// nil until the first bytes tell whether the input is gzip; then the stream, or none.
    private var stream: UnsafeMutablePointer<z_stream>?
    private var decided = false
    private var compressed = [UInt8](repeating: 0, count: 1 << 16)
    private var compressedStart = 0
    private var compressedEnd = 0
    private var compressedEOF = false
    /// A member ended and nothing was read after it yet: the end of the input is not an error.
    private var betweenMembers = false

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        if let stream {
            inflateEnd(stream)
            stream.deallocate()
        }
    }

    /// Reads up to `count` bytes of the text into `buffer`; 0 at its end.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(Failure) -> Int {
        if !decided { try decide(firstRead: count) }
        guard let stream else {
            // Plain text: what was read to decide comes first.
            if compressedStart < compressedEnd {
                let taken = min(count, compressedEnd - compressedStart)
                compressed.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + compressedStart, byteCount: taken) }
                compressedStart += taken
                return taken
            }
            return try readDescriptor(buffer, count)
        }
        while true {
            if compressedStart == compressedEnd && !compressedEOF { try refill() }
            if compressedStart == compressedEnd && compressedEOF {
                guard betweenMembers else { throw .corrupt("the gzip data ends before its end (truncated)") }
                return 0
            }
            let available = compressedEnd - compressedStart, from = compressedStart
            let status: Int32 = compressed.withUnsafeMutableBytes { bytes in
                stream.pointee.next_in = bytes.baseAddress!.assumingMemoryBound(to: Bytef.self) + from
                stream.pointee.avail_in = uInt(available)
                stream.pointee.next_out = buffer.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(count)
                return inflate(stream, Z_NO_FLUSH)
            }
            compressedStart = compressedEnd - Int(stream.pointee.avail_in)
            let produced = count - Int(stream.pointee.avail_out)
            switch status {
            case Z_OK, Z_BUF_ERROR:
                if produced > 0 || compressedStart > from { betweenMembers = false }
            case Z_STREAM_END:
                // Another member may follow.
                betweenMembers = true
                inflateReset(stream)
            default:
                throw .corrupt(stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)")
            }
            if produced > 0 { return produced }
            if betweenMembers && compressedStart == compressedEnd && compressedEOF { return 0 }
        }
    }

    /// Reads the first bytes, no more than the caller asked for (so that a bounded reader
    /// stays bounded): gzip when they are `1f 8b`. A second read only when the first gave
    /// just `1f`: a person typing at a terminal is never kept waiting for a second byte.
    private func decide(firstRead: Int) throws(Failure) {
        decided = true
        try refill(atMost: max(firstRead, 1))
        if compressedEnd == 1 && compressed[0] == 0x1F && !compressedEOF { try refill(atMost: 1) }
        guard compressedEnd >= 2, compressed[0] == 0x1F, compressed[1] == 0x8B else { return }
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 15 + 16: a gzip wrapper, the largest window.
        guard inflateInit2_(stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            stream.deallocate()
            throw .corrupt("zlib could not start")
        }
        self.stream = stream
    }

    /// More compressed bytes after those not yet used (at most `limit`).
    private func refill(atMost limit: Int = .max) throws(Failure) {
        if compressedStart > 0 {
            let rest = compressedEnd - compressedStart
            compressed.withUnsafeMutableBytes { bytes in
                if rest > 0 { memmove(bytes.baseAddress!, bytes.baseAddress! + compressedStart, rest) }
            }
            compressedStart = 0
            compressedEnd = rest
        }
        let room = min(limit, compressed.count - compressedEnd), at = compressedEnd, descriptor = self.descriptor
        let got = compressed.withUnsafeMutableBytes { bytes in Self.read(descriptor, bytes.baseAddress! + at, room) }
        if got < 0 { throw .unreadable(errno) }
        if got == 0 { compressedEOF = true } else { compressedEnd += got }
    }

    private func readDescriptor(_ buffer: UnsafeMutableRawPointer, _ count: Int) throws(Failure) -> Int {
        let got = Self.read(descriptor, buffer, count)
        if got < 0 { throw .unreadable(errno) }
        return got
    }

    /// `read(2)`, again after EINTR; -1 with errno set on a failure.
    private static func read(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        while true {
            let got = Glibc.read(descriptor, buffer, count)
            if got >= 0 || errno != EINTR { return got }
        }
    }
}
