import NIOCore
import NIOEmbedded
import NIOTestUtils
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest

/// The frame decoder shared by the NIO server and the blocking transport.
final class LengthPrefixedFrameDecoderTests: XCTestCase {
    private func frame(_ body: [UInt8]) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: 4 + body.count)
        buffer.writeInteger(UInt32(body.count), endianness: .big)
        buffer.writeBytes(body)
        return buffer
    }

    private func body(_ bytes: [UInt8]) -> ByteBuffer {
        ByteBufferAllocator().buffer(bytes: bytes)
    }

    private func makeChannel(limit: Int) -> EmbeddedChannel {
        EmbeddedChannel(handler: ByteToMessageHandler(LengthPrefixedFrameDecoder(maximumFrameBytes: limit)))
    }

    /// NIOTestUtils feeds the inputs whole, byte by byte (drip feed), and many at once,
    /// and checks that exactly the expected frames come out and nothing is left over.
    func testDecoderPassesByteToMessageDecoderVerifierWithSeveralFrames() throws {
        let bodies: [[UInt8]] = [
            Array("hello".utf8),
            [],                                        // a zero-length frame
            [0x00, 0x00, 0x00, 0x05],                  // a body that looks like a prefix
            Array(repeating: 0xab, count: 300),        // several reads' worth when drip-fed
            Array(repeating: 0x42, count: 1024),       // exactly at the limit
        ]
        let pairs = bodies.map { (frame($0), [body($0)]) }
        XCTAssertNoThrow(try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) {
            LengthPrefixedFrameDecoder(maximumFrameBytes: 1024)
        })
    }

    /// Two frames in one stream, split into two writes at every possible offset.
    func testTwoFramesSplitAtEveryOffsetDecodeIdentically() throws {
        var stream = frame(Array("first".utf8))
        var second = frame([1, 2, 3])
        stream.writeBuffer(&second)
        let bytes = Array(stream.readableBytesView)
        for split in 0...bytes.count {
            let channel = makeChannel(limit: 64)
            try channel.writeInbound(body(Array(bytes[..<split])))
            try channel.writeInbound(body(Array(bytes[split...])))
            XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), body(Array("first".utf8)), "split at \(split)")
            XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), body([1, 2, 3]), "split at \(split)")
            XCTAssertNil(try channel.readInbound(as: ByteBuffer.self), "split at \(split)")
            XCTAssertTrue(try channel.finish().isClean, "split at \(split)")
        }
    }

    func testOversizedLengthPrefixThrowsFrameTooLargeAsSoonAsThePrefixArrives() throws {
        let channel = makeChannel(limit: 16)
        let prefix = lengthPrefix(17)
        // Three prefix bytes: not yet decidable, nothing happens.
        XCTAssertNoThrow(try channel.writeInbound(body(Array(prefix[0..<3]))))
        // The fourth byte completes the prefix: the error comes now, with no body sent.
        XCTAssertThrowsError(try channel.writeInbound(body([prefix[3]]))) { error in
            XCTAssertEqual(error as? FramingError, .frameTooLarge(length: 17, limit: 16))
        }
        _ = try? channel.finish()
    }

    func testHugeLengthPrefixIsRejectedWithoutWaitingForTheBody() throws {
        let channel = makeChannel(limit: ProtocolLimits.maximumRequestFrameBytes)
        XCTAssertThrowsError(try channel.writeInbound(body(lengthPrefix(UInt32.max)))) { error in
            XCTAssertEqual(error as? FramingError,
                           .frameTooLarge(length: Int(UInt32.max), limit: ProtocolLimits.maximumRequestFrameBytes))
        }
        _ = try? channel.finish()
    }

    func testEndOfStreamInTheMiddleOfAFrameThrowsTruncatedFrame() throws {
        let channel = makeChannel(limit: 64)
        var partial = frame(Array("complete".utf8))
        partial.writeBytes(lengthPrefix(10) + [1, 2, 3])   // a second frame, 7 of its 14 bytes
        try channel.writeInbound(partial)
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), body(Array("complete".utf8)))
        XCTAssertThrowsError(try channel.finish()) { error in
            XCTAssertEqual(error as? FramingError, .truncatedFrame(receivedBytes: 7))
        }
    }

    func testEndOfStreamInsideTheLengthPrefixThrowsTruncatedFrame() throws {
        let channel = makeChannel(limit: 64)
        try channel.writeInbound(body([0, 0]))
        XCTAssertThrowsError(try channel.finish()) { error in
            XCTAssertEqual(error as? FramingError, .truncatedFrame(receivedBytes: 2))
        }
    }

    func testEndOfStreamBetweenFramesIsClean() throws {
        let channel = makeChannel(limit: 64)
        try channel.writeInbound(frame([9]))
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), body([9]))
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testZeroLengthFramesAreDeliveredAsEmptyFrames() throws {
        let channel = makeChannel(limit: 64)
        var stream = frame([])
        var next = frame([])
        stream.writeBuffer(&next)
        try channel.writeInbound(stream)
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self)?.readableBytes, 0)
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self)?.readableBytes, 0)
        XCTAssertNil(try channel.readInbound(as: ByteBuffer.self))
        XCTAssertTrue(try channel.finish().isClean)
    }

    func testFrameExactlyAtTheLimitPassesAndOneByteMoreDoesNot() throws {
        let atLimit = Array(repeating: UInt8(7), count: 32)
        let channel = makeChannel(limit: 32)
        try channel.writeInbound(frame(atLimit))
        XCTAssertEqual(try channel.readInbound(as: ByteBuffer.self), body(atLimit))
        XCTAssertTrue(try channel.finish().isClean)

        let over = makeChannel(limit: 32)
        XCTAssertThrowsError(try over.writeInbound(frame(atLimit + [7]))) { error in
            XCTAssertEqual(error as? FramingError, .frameTooLarge(length: 33, limit: 32))
        }
        _ = try? over.finish()
    }

    func testNextFrameLeavesAnIncompleteBufferUntouched() throws {
        var buffer = ByteBufferAllocator().buffer(bytes: lengthPrefix(5) + [1, 2])
        XCTAssertNil(try LengthPrefixedFrameDecoder.nextFrame(in: &buffer, maximumFrameBytes: 8))
        XCTAssertEqual(buffer.readableBytes, 6)
        buffer.writeBytes([3, 4, 5, 6])   // the rest of the frame and one byte of the next
        let frame = try LengthPrefixedFrameDecoder.nextFrame(in: &buffer, maximumFrameBytes: 8)
        XCTAssertEqual(frame.map { Array($0.readableBytesView) }, [1, 2, 3, 4, 5])
        XCTAssertEqual(Array(buffer.readableBytesView), [6])
    }
}
