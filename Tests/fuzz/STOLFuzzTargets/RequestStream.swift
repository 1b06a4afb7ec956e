import NIOCore
import STOLProtocol
import STOLTransport

/// One connection's worth of client bytes, cut and decoded exactly as a server
/// does it: ``LengthPrefixedFrameDecoder/nextFrame(in:maximumFrameBytes:)`` at the
/// request limit, then ``FrameEncoding/decode(_:from:)`` into the socket's envelope.
///
/// A fuzz input is therefore what a client could send on one connection: a
/// `protocol/vectors` request file is a valid input as it is, and several of them
/// back to back are a pipelined connection (state carries over between them).
struct RequestStream<Request: RequestEnvelope> {
    enum Item {
        /// A decoded request and its frame body (the import target attaches the body
        /// as the file of an `import_file` request).
        case request(Request, body: [UInt8])
        /// Where the server would answer id 0 and close the connection.
        case framingError(FramingError)
    }

    /// "request 3 (getTaxon)": how a broken invariant names a request (its body's
    /// case; the fields are in the saved input).
    static func describe(_ request: Request, body: Any?) -> String {
        let name = body.map { String(String(describing: $0).prefix { $0 != "(" }) } ?? "no body"
        return "request \(request.id) (\(name))"
    }

    /// At most this many requests are answered per input, so one input's cost stays
    /// small (a fuzzer wants thousands of inputs per second, not one long one).
    static var maximumRequests: Int { 64 }

    /// The items up to the first framing error; bytes left at the end (an incomplete
    /// frame) are the truncated frame a server logs when the peer closes.
    static func cut(_ input: [UInt8]) -> [Item] {
        var buffer = ByteBufferAllocator().buffer(bytes: input)
        var items: [Item] = []
        while items.count < maximumRequests {
            let frame: ByteBuffer
            do {
                guard let next = try LengthPrefixedFrameDecoder.nextFrame(
                    in: &buffer, maximumFrameBytes: ProtocolLimits.maximumRequestFrameBytes) else { break }
                frame = next
            } catch {
                items.append(.framingError(error))
                return items
            }
            do {
                items.append(.request(try FrameEncoding.decode(Request.self, from: frame), body: Array(frame.readableBytesView)))
            } catch {
                items.append(.framingError(error))
                return items
            }
        }
        if items.count < maximumRequests, buffer.readableBytes > 0 {
            items.append(.framingError(.truncatedFrame(receivedBytes: buffer.readableBytes)))
        }
        return items
    }
}
