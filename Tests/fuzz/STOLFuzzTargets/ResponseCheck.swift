import NIOCore
import STOLProtocol
import STOLTransport

/// What every answer of every daemon must be, whatever was asked (PROTOCOL.md §2–3, §8).
enum ResponseCheck {
    /// `response` as the server sends it: it echoes `requestID`, encodes into one
    /// frame within the response limit, and reads back through the client's own
    /// decoder as the same message; an error carries a code from `allowed`, a
    /// sentence, and snake_case detail keys.
    static func wellFormed<Response: ResponseEnvelope>(_ response: Response, requestID: UInt64,
                                                       allowed: Set<Stol_V1_ErrorCode>,
                                                       _ what: @autoclosure () -> String) throws(FuzzFailure) {
        try expect(response.id == requestID, "\(what()): answered with id \(response.id), not \(requestID)")
        var frame: ByteBuffer
        do {
            frame = try FrameEncoding.frame(response, maximumFrameBytes: ProtocolLimits.maximumResponseFrameBytes)
        } catch {
            throw FuzzFailure("\(what()): the answer does not fit a response frame: \(error)")
        }
        let cut: ByteBuffer?
        do {
            cut = try LengthPrefixedFrameDecoder.nextFrame(in: &frame, maximumFrameBytes: ProtocolLimits.maximumResponseFrameBytes)
        } catch {
            throw FuzzFailure("\(what()): the encoded answer does not cut as a frame: \(error)")
        }
        guard let body = cut else { throw FuzzFailure("\(what()): the encoded answer is not one whole frame") }
        try expect(frame.readableBytes == 0, "\(what()): bytes after the answer's frame")
        let decoded: Response
        do {
            decoded = try FrameEncoding.decode(Response.self, from: body)
        } catch {
            throw FuzzFailure("\(what()): the answer does not decode: \(error)")
        }
        try expect(decoded.isEqualTo(message: response), "\(what()): the answer reads back differently")
        guard let error = response.protocolError else { return }
        try expect(allowed.contains(error.code), "\(what()): unexpected error \(error)")
        try expect(!error.message.isEmpty, "\(what()): an error without a message")
        for key in error.details.keys {
            try expect(!key.isEmpty && key.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f },
                       "\(what()): detail key \"\(key)\" is not snake_case")
        }
    }

    /// The answer a server sends for a framing error before it closes (id 0).
    static func framingError<Response: ResponseEnvelope>(_ error: FramingError, as: Response.Type) throws(FuzzFailure) {
        let response = Response(requestID: 0, error: error.protocolError)
        try wellFormed(response, requestID: 0, allowed: [.frameTooLarge, .malformedFrame], "framing error \(error)")
        if case .frameTooLarge(let length, let limit) = error {
            try expect(length > limit && limit == ProtocolLimits.maximumRequestFrameBytes,
                       "frame too large: \(length) over \(limit)?")
            try expect(response.error.details == ["length": String(length), "limit": String(limit)],
                       "frame too large without its length and limit: \(response.error.details)")
        }
    }
}
