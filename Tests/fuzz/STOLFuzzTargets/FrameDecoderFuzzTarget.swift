import Foundation
import Glibc
import NIOCore
import NIOEmbedded
import STOLProtocol
import STOLTransport

/// The frame decoder every daemon and the client cut their byte streams with
/// (``LengthPrefixedFrameDecoder``), through all three ways it is used: the static
/// ``LengthPrefixedFrameDecoder/nextFrame(in:maximumFrameBytes:)`` on the whole
/// stream, NIO's `ByteToMessageHandler` fed the stream in input-chosen chunks (the
/// taxonomy and favourites servers), and ``FrameSocket`` reading it from a socket
/// (import, verify and the client).
///
/// Each is compared with a reference cut by plain index arithmetic: the same
/// frames; an error only for a length over the limit — raised by the chunk that
/// completes the prefix, before any of the body — or for a frame cut short by the
/// end of the stream; the static decoder never grows its buffer (it only slices),
/// so an announced length is never allocated. (`make fuzz` also runs this target
/// under AddressSanitizer with `-malloc_limit_mb=1`: every input is far smaller than
/// that, so only an allocation of an announced size could reach it.)
///
/// Input: byte 0 picks the limit from ``limits``, byte 1 the number of cut points
/// (0…15), then two bytes per cut point (big-endian offsets into the stream, modulo
/// its length + 1), then the stream.
public final class FrameDecoderFuzzTarget: FuzzTarget {
    public static let name = "fuzz-frame-decoder"
    public static let maximumInputBytes = 8192

    /// The request limit and the response limit, and small ones that frames reach easily.
    static let limits = [0, 1, 4, 255, 4096, ProtocolLimits.maximumRequestFrameBytes, ProtocolLimits.maximumResponseFrameBytes]
    /// Streams longer than this skip the socket path: written whole before the read,
    /// they could fill the socket's buffer (about 200 KiB) and block the writer.
    static let maximumSocketStream = 128 * 1024

    public static func make() -> FrameDecoderFuzzTarget { FrameDecoderFuzzTarget() }

    /// How a stream ends, by the reference cut.
    enum Ending: Equatable {
        case clean
        /// A prefix announcing `length` (over the limit), whose fourth byte is at `prefixEnd - 1`.
        case tooLarge(length: Int, prefixEnd: Int)
        /// `received` bytes of an incomplete frame (prefix or body) when the stream ends.
        case truncated(received: Int)
    }

    struct Layout {
        var limit: Int
        var chunks: [ArraySlice<UInt8>]
        var stream: [UInt8]
    }

    static func layout(_ input: [UInt8]) -> Layout {
        let limit = limits[Int(input.first ?? 0) % limits.count]
        let cutCount = input.count > 1 ? Int(input[1] % 16) : 0
        let headerBytes = min(input.count, 2 + 2 * cutCount)
        let stream = Array(input[headerBytes...])
        var cuts: [Int] = []
        var index = 2
        while index + 1 < headerBytes {
            cuts.append((Int(input[index]) << 8 | Int(input[index + 1])) % (stream.count + 1))
            index += 2
        }
        let bounds = Array(Set(cuts + [0, stream.count])).sorted()
        let chunks = zip(bounds, bounds.dropFirst()).map { stream[$0..<$1] }
        return Layout(limit: limit, chunks: chunks.isEmpty ? [stream[...]] : chunks, stream: stream)
    }

    /// The frames of `stream` and how it ends, by index arithmetic alone (PROTOCOL.md §2).
    static func reference(_ stream: [UInt8], limit: Int) -> (frames: [[UInt8]], ending: Ending) {
        var frames: [[UInt8]] = []
        var offset = 0
        while offset < stream.count {
            guard stream.count - offset >= 4 else { return (frames, .truncated(received: stream.count - offset)) }
            let length = stream[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard length <= limit else { return (frames, .tooLarge(length: length, prefixEnd: offset + 4)) }
            guard stream.count - offset - 4 >= length else { return (frames, .truncated(received: stream.count - offset)) }
            frames.append(Array(stream[offset + 4..<offset + 4 + length]))
            offset += 4 + length
        }
        return (frames, .clean)
    }

    public func run(_ input: [UInt8]) throws(FuzzFailure) {
        let layout = Self.layout(input)
        let expected = Self.reference(layout.stream, limit: layout.limit)
        try Self.checkWhole(layout, expected)
        try Self.checkChunked(layout, expected)
        if layout.stream.count <= Self.maximumSocketStream { try Self.checkSocket(layout, expected) }
    }

    /// The static decoder on the whole stream in one buffer.
    static func checkWhole(_ layout: Layout, _ expected: (frames: [[UInt8]], ending: Ending)) throws(FuzzFailure) {
        var buffer = ByteBufferAllocator().buffer(bytes: layout.stream)
        let capacity = buffer.capacity
        var frames: [[UInt8]] = []
        var ending = Ending.clean
        while true {
            let before = buffer.readerIndex
            let next: ByteBuffer?
            do {
                next = try LengthPrefixedFrameDecoder.nextFrame(in: &buffer, maximumFrameBytes: layout.limit)
            } catch {
                guard case .frameTooLarge(let length, let limit) = error, limit == layout.limit else {
                    throw FuzzFailure("nextFrame threw \(error) (limit \(layout.limit))")
                }
                try expect(buffer.readerIndex == before, "nextFrame moved the buffer before throwing")
                ending = .tooLarge(length: length, prefixEnd: before + 4)
                break
            }
            guard let frame = next else {
                try expect(buffer.readerIndex == before, "nextFrame moved the buffer without returning a frame")
                if buffer.readableBytes > 0 { ending = .truncated(received: buffer.readableBytes) }
                break
            }
            frames.append(Array(frame.readableBytesView))
            try expect(buffer.capacity == capacity, "nextFrame grew its buffer from \(capacity) to \(buffer.capacity) bytes")
        }
        try expect(frames == expected.frames, "whole: \(frames.count) frames, the reference cut \(expected.frames.count)")
        try expect(ending == expected.ending, "whole: ended \(ending), the reference \(expected.ending)")
    }

    /// NIO's ByteToMessageHandler fed the chunks one by one, then the end of the stream.
    static func checkChunked(_ layout: Layout, _ expected: (frames: [[UInt8]], ending: Ending)) throws(FuzzFailure) {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maximumFrameBytes: layout.limit)))
        defer { _ = try? channel.finish() }
        var frames: [[UInt8]] = []
        func drain() throws(FuzzFailure) {
            do {
                while let frame = try channel.readInbound(as: ByteBuffer.self) { frames.append(Array(frame.readableBytesView)) }
            } catch {
                throw FuzzFailure("readInbound: \(error)")
            }
        }
        var offset = 0
        for chunk in layout.chunks {
            do {
                try channel.writeInbound(ByteBufferAllocator().buffer(bytes: chunk))
            } catch {
                try drain()
                guard case .tooLarge(let length, let prefixEnd) = expected.ending,
                      error as? FramingError == .frameTooLarge(length: length, limit: layout.limit) else {
                    throw FuzzFailure("chunked: \(error) in the chunk at \(offset), the reference ends \(expected.ending)")
                }
                try expect(offset < prefixEnd && prefixEnd <= offset + chunk.count,
                           "chunked: frame too large raised by the chunk \(offset)..<\(offset + chunk.count), not the one completing the prefix at \(prefixEnd)")
                try expect(frames == expected.frames, "chunked: \(frames.count) frames before the error, the reference \(expected.frames.count)")
                return
            }
            try drain()
            offset += chunk.count
        }
        try expect(frames == expected.frames, "chunked: \(frames.count) frames, the reference cut \(expected.frames.count)")
        do {
            let left = try channel.finish()
            try expect(expected.ending == .clean, "chunked: the end of the stream was clean, the reference ends \(expected.ending)")
            try expect(left.isClean, "chunked: left over after the end: \(left)")
        } catch let failure as FuzzFailure {
            throw failure
        } catch {
            guard case .truncated(let received) = expected.ending,
                  error as? FramingError == .truncatedFrame(receivedBytes: received) else {
                throw FuzzFailure("chunked: the end of the stream threw \(error), the reference ends \(expected.ending)")
            }
        }
    }

    /// FrameSocket reading the chunks, each sent with its own `send`, from a socket pair.
    static func checkSocket(_ layout: Layout, _ expected: (frames: [[UInt8]], ending: Ending)) throws(FuzzFailure) {
        var pair: [Int32] = [-1, -1]
        try expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0,
                   "socketpair: \(String(cString: strerror(errno)))")
        let reader = FrameSocket(descriptor: pair[1], maximumIncomingFrameBytes: layout.limit,
                                 maximumOutgoingFrameBytes: layout.limit)
        defer { reader.close() }
        for chunk in layout.chunks where !chunk.isEmpty {
            let sent = chunk.withUnsafeBytes { send(pair[0], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            try expect(sent == chunk.count, "socket: sent \(sent) of \(chunk.count) bytes")
        }
        close(pair[0])
        var frames: [[UInt8]] = []
        var ending = Ending.clean
        var consumed = 0
        receiving: while true {
            let frame: ByteBuffer
            do {
                let descriptor: OwnedFileDescriptor?
                (frame, descriptor) = try reader.receiveFrame()
                if descriptor != nil { throw FuzzFailure("socket: a descriptor came with a plain frame") }
            } catch let failure as FuzzFailure {
                throw failure
            } catch {
                switch error as? TransportError {
                case .closedByPeer: break
                case .framing(.frameTooLarge(let length, let limit)) where limit == layout.limit:
                    ending = .tooLarge(length: length, prefixEnd: consumed + 4)
                case .framing(.truncatedFrame(let received)):
                    ending = .truncated(received: received)
                default:
                    throw FuzzFailure("socket: \(error)")
                }
                break receiving
            }
            frames.append(Array(frame.readableBytesView))
            consumed += 4 + frame.readableBytes
        }
        try expect(frames == expected.frames, "socket: \(frames.count) frames, the reference cut \(expected.frames.count)")
        try expect(ending == expected.ending, "socket: ended \(ending), the reference \(expected.ending)")
    }

    /// Every vector frame (requests at the request limit, responses at the response
    /// limit); all of them in one stream cut at several points; an over-limit
    /// prefix; a stream that ends inside a frame.
    public static func generatedSeeds() throws -> [(name: String, bytes: [UInt8])] {
        let request = UInt8(limits.firstIndex(of: ProtocolLimits.maximumRequestFrameBytes)!)
        let response = UInt8(limits.firstIndex(of: ProtocolLimits.maximumResponseFrameBytes)!)
        var seeds: [(name: String, bytes: [UInt8])] = []
        var all: [UInt8] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: FuzzSeeds.vectorsDirectory).sorted() where file.hasSuffix(".hex") {
            let frame = try FuzzSeeds.hexFile(FuzzSeeds.vectorsDirectory + "/" + file)
            seeds.append(("vector-" + file.replacingOccurrences(of: ".hex", with: ""),
                          [file.contains("-request") ? request : response, 0] + frame))
            all += frame
        }
        seeds.append(("seed-all-vectors-cut", [response, 4, 0, 1, 0, 4, 0, 17, 0, 200] + all))
        seeds.append(("seed-over-the-limit", [request, 1, 0, 3] + [0, 1, 0, 1] + Array(repeating: 0x41, count: 8)))
        seeds.append(("seed-truncated", [request, 2, 0, 2, 0, 9, 0, 0, 0, 5, 1, 2, 3, 0, 0, 0, 9, 1, 2]))
        return seeds
    }
}
