import STOLProtocol

/// Why a byte stream could not be cut into frames. Both end the connection: after
/// either, the stream position is unknown, so nothing later on it can be trusted.
public enum FramingError: Error, Equatable, Sendable, ProtocolErrorConvertible {
    /// The length prefix announced more than the direction's limit. Raised as soon
    /// as the 4 prefix bytes are in, before any of the body is buffered.
    case frameTooLarge(length: Int, limit: Int)
    /// The peer closed the stream in the middle of a frame.
    case truncatedFrame(receivedBytes: Int)
    /// A complete frame whose bytes are not the expected protobuf message.
    case undecodableMessage(String)

    public var protocolError: ProtocolError {
        switch self {
        case .frameTooLarge(let length, let limit):
            ProtocolError(.frameTooLarge, "frame of \(length) bytes exceeds the limit of \(limit) bytes",
                          details: ["length": String(length), "limit": String(limit)])
        case .truncatedFrame(let received):
            ProtocolError(.malformedFrame, "connection closed in the middle of a frame (\(received) bytes buffered)",
                          details: ["received": String(received)])
        case .undecodableMessage(let type):
            ProtocolError(.malformedFrame, "frame does not decode as \(type)")
        }
    }
}
