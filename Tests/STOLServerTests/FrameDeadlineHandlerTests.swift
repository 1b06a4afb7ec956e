import NIOCore
import NIOEmbedded
@testable import STOLServer
import XCTest

/// The frame deadline on the event loop's virtual clock: what closes a connection
/// (a frame still incomplete its deadline after its first byte) and what does not
/// (whole frames, however many and for however long), with one timer per connection.
final class FrameDeadlineHandlerTests: XCTestCase {
    private let deadline = TimeAmount.seconds(10)

    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FrameDeadlineHandler(deadline: deadline))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    private func frame(_ body: Int) -> [UInt8] {
        let length = UInt32(body)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
            + [UInt8](repeating: 7, count: body)
    }

    private func send(_ channel: EmbeddedChannel, _ bytes: [UInt8]) throws {
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        while let passed: ByteBuffer = try channel.readInbound() { _ = passed }  // the bytes go on unchanged
    }

    func testAFrameIncompleteAtItsDeadline_closesTheConnection() throws {
        let channel = try channel()
        try send(channel, Array(frame(100).prefix(50)))
        channel.embeddedEventLoop.advanceTime(by: deadline - .milliseconds(1))
        XCTAssertTrue(channel.isActive, "cut before its deadline")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        XCTAssertFalse(channel.isActive, "a frame incomplete at its deadline keeps its connection")
    }

    func testWholeFramesForLongerThanTheDeadline_keepTheConnection() throws {
        let channel = try channel()
        for _ in 0..<50 {  // 50 frames a second apart: five deadlines' worth, in reads cut mid-frame
            let bytes = frame(20)
            try send(channel, Array(bytes.prefix(3)))
            try send(channel, Array(bytes.dropFirst(3)))
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        XCTAssertTrue(channel.isActive)
        XCTAssertNoThrow(try channel.finish())
    }

    /// The one timer fires for the first frame's deadline when that frame is long whole
    /// but a later one is in progress: it must wait for the later frame's own deadline.
    func testALaterFrame_getsItsOwnDeadline_fromTheOneTimer() throws {
        let channel = try channel()
        try send(channel, Array(frame(10).prefix(2)))           // frame 1 starts at 0 s
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        try send(channel, Array(frame(10).dropFirst(2)) + Array(frame(10).prefix(6)))  // 1 ends, 2 starts at 9 s
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(9_900))  // 18.9 s: past 1's deadline, not 2's
        XCTAssertTrue(channel.isActive, "frame 2 was cut at frame 1's deadline")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))  // 19 s: 2's deadline (9 + 10)
        XCTAssertFalse(channel.isActive, "frame 2, incomplete at its deadline, kept its connection")
    }

    func testPipelinedWholeFramesInOneRead_neverCloseTheConnection() throws {
        let channel = try channel()
        try send(channel, (0..<1_000).flatMap { frame($0 % 40) })
        channel.embeddedEventLoop.advanceTime(by: .seconds(3600))
        XCTAssertTrue(channel.isActive)
        XCTAssertNoThrow(try channel.finish())
    }
}
