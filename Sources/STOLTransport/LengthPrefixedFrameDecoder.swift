import NIOCore
import STOLProtocol

/// Cuts a byte stream into frames: a 4-byte big-endian length, then that many bytes.
///
/// The same ``nextFrame(in:maximumFrameBytes:)`` serves the NIO pipeline (as a
/// `ByteToMessageDecoder`) and the blocking ``FrameSocket``, so both transports
/// enforce the limit identically: the length is checked before the body is waited
/// for, so an oversized frame never causes an allocation of its announced size.
public struct LengthPrefixedFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    public let maximumFrameBytes: Int

    public init(maximumFrameBytes: Int) {
        self.maximumFrameBytes = maximumFrameBytes
    }

    /// Takes one complete frame body off the front of `buffer`, or returns nil if
    /// the buffer does not hold one yet (leaving it untouched).
    public static func nextFrame(in buffer: inout ByteBuffer, maximumFrameBytes: Int) throws(FramingError) -> ByteBuffer? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return nil
        }
        guard length <= maximumFrameBytes else {
            throw .frameTooLarge(length: Int(length), limit: maximumFrameBytes)
        }
        guard buffer.readableBytes >= ProtocolLimits.lengthPrefixBytes + Int(length) else {
            return nil
        }
        buffer.moveReaderIndex(forwardBy: ProtocolLimits.lengthPrefixBytes)
        return buffer.readSlice(length: Int(length))
    }

    /// Whether ``nextFrame(in:maximumFrameBytes:)`` would now take a frame off
    /// `buffer` or throw (its length over the limit), without taking it.
    public static func hasFrame(in buffer: ByteBuffer, maximumFrameBytes: Int) -> Bool {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return false
        }
        return length > maximumFrameBytes || buffer.readableBytes >= ProtocolLimits.lengthPrefixBytes + Int(length)
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = try Self.nextFrame(in: &buffer, maximumFrameBytes: maximumFrameBytes) else {
            return .needMoreData
        }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 {
            let received = buffer.readableBytes
            buffer.moveReaderIndex(forwardBy: received)
            throw FramingError.truncatedFrame(receivedBytes: received)
        }
        return .needMoreData
    }
}
