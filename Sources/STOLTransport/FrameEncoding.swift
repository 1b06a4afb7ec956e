import NIOCore
import SwiftProtobuf

/// Serialises messages into frames (4-byte big-endian length + body).
public enum FrameEncoding {
    public enum EncodingError: Error, Equatable {
        /// The message is larger than the receiving direction accepts; sending it
        /// would only get the connection closed, so the sender fails instead.
        case messageTooLarge(bytes: Int, limit: Int)
    }

    /// One frame in a fresh buffer.
    public static func frame(_ message: some SwiftProtobuf.Message, maximumFrameBytes: Int,
                             allocator: ByteBufferAllocator = ByteBufferAllocator()) throws -> ByteBuffer {
        let body: [UInt8] = try message.serializedBytes()
        guard body.count <= maximumFrameBytes else {
            throw EncodingError.messageTooLarge(bytes: body.count, limit: maximumFrameBytes)
        }
        var buffer = allocator.buffer(capacity: 4 + body.count)
        buffer.writeInteger(UInt32(body.count), endianness: .big)
        buffer.writeBytes(body)
        return buffer
    }

    /// Decodes one frame body as `M`, mapping any failure to a ``FramingError``.
    public static func decode<M: SwiftProtobuf.Message>(_ type: M.Type, from frame: ByteBuffer) throws(FramingError) -> M {
        do {
            return try M(serializedBytes: Array(frame.readableBytesView))
        } catch {
            throw .undecodableMessage(M.protoMessageName)
        }
    }
}
