import NIOCore
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest

final class FrameEncodingTests: XCTestCase {
    private func sampleRequest() -> Stol_V1_TaxonomyRequest {
        var request = Stol_V1_TaxonomyRequest()
        request.id = 77
        request.getTaxon = .with { $0.taxonID = 9689; $0.language = "de" }
        return request
    }

    func testFrameRoundTripsThroughTheDecoder() throws {
        let request = sampleRequest()
        var buffer = try FrameEncoding.frame(request, maximumFrameBytes: 1024)
        let body: [UInt8] = try request.serializedBytes()
        // The prefix is the body length, big-endian, and nothing else is added.
        XCTAssertEqual(buffer.readableBytes, 4 + body.count)
        XCTAssertEqual(buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self), UInt32(body.count))
        XCTAssertEqual(Array(buffer.readableBytesView.dropFirst(4)), body)

        let frame = try XCTUnwrap(try LengthPrefixedFrameDecoder.nextFrame(in: &buffer, maximumFrameBytes: 1024))
        XCTAssertEqual(try FrameEncoding.decode(Stol_V1_TaxonomyRequest.self, from: frame), request)
        XCTAssertEqual(buffer.readableBytes, 0)
    }

    func testEmptyMessageEncodesAsZeroLengthFrame() throws {
        let buffer = try FrameEncoding.frame(Stol_V1_TaxonomyRequest(), maximumFrameBytes: 0)
        XCTAssertEqual(Array(buffer.readableBytesView), [0, 0, 0, 0])
    }

    func testMessageOverTheSendingLimitThrowsMessageTooLarge() throws {
        let request = sampleRequest()
        let size = (try request.serializedBytes() as [UInt8]).count
        XCTAssertNoThrow(try FrameEncoding.frame(request, maximumFrameBytes: size))
        XCTAssertThrowsError(try FrameEncoding.frame(request, maximumFrameBytes: size - 1)) { error in
            XCTAssertEqual(error as? FrameEncoding.EncodingError, .messageTooLarge(bytes: size, limit: size - 1))
        }
    }

    func testUndecodableBodyThrowsUndecodableMessageMappedToMalformedFrame() throws {
        let garbage = ByteBufferAllocator().buffer(bytes: Array(undecodableFrame.dropFirst(4)))
        XCTAssertThrowsError(try FrameEncoding.decode(Stol_V1_TaxonomyRequest.self, from: garbage)) { error in
            XCTAssertEqual(error as? FramingError, .undecodableMessage("stol.v1.TaxonomyRequest"))
            XCTAssertEqual((error as? FramingError)?.protocolError.code, .malformedFrame)
        }
    }

    func testFramingErrorsMapToStableProtocolCodes() {
        XCTAssertEqual(FramingError.frameTooLarge(length: 10, limit: 5).protocolError.code, .frameTooLarge)
        XCTAssertEqual(FramingError.frameTooLarge(length: 10, limit: 5).protocolError.details,
                       ["length": "10", "limit": "5"])
        XCTAssertEqual(FramingError.truncatedFrame(receivedBytes: 3).protocolError.code, .malformedFrame)
    }
}
