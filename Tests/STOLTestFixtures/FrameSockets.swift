#if canImport(XCTest)
import Glibc
import STOLProtocol
import STOLTransport
import SwiftProtobuf
import XCTest

// Real sockets for the transport's and the servers' tests (socketpair(2)), no mocks,
// and the frames those tests send whole or broken.

/// A fresh connected pair of Unix stream sockets.
public func makeSocketPair(file: StaticString = #filePath, line: UInt = #line) throws -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        XCTFail("socketpair failed: errno \(errno)", file: file, line: line)
        throw TestSupportError("socketpair: \(String(cString: strerror(errno)))")
    }
    return (fds[0], fds[1])
}

/// Two framed sockets over one socketpair; a receive timeout keeps a broken test
/// from hanging (it is a safety net, never asserted on).
public func makeFrameSocketPair(limit: Int = 1024) throws -> (FrameSocket, FrameSocket) {
    let (a, b) = try makeSocketPair()
    let left = FrameSocket(descriptor: a, maximumIncomingFrameBytes: limit, maximumOutgoingFrameBytes: limit)
    let right = FrameSocket(descriptor: b, maximumIncomingFrameBytes: limit, maximumOutgoingFrameBytes: limit)
    left.setReceiveTimeout(.seconds(5))
    right.setReceiveTimeout(.seconds(5))
    return (left, right)
}

/// The complete frame (length prefix + body) of `message`, as bytes.
public func frameBytes(_ message: some SwiftProtobuf.Message, limit: Int = ProtocolLimits.maximumRequestFrameBytes) throws -> [UInt8] {
    Array(try FrameEncoding.frame(message, maximumFrameBytes: limit).readableBytesView)
}

/// A frame with a valid length prefix whose body is not a protobuf message:
/// 0x07 is field 0 with wire type 7, which no protobuf decoder accepts.
public let undecodableFrame: [UInt8] = [0, 0, 0, 4, 0x07, 0xff, 0xff, 0xff]

/// A bare length prefix announcing `length` bytes.
public func lengthPrefix(_ length: UInt32) -> [UInt8] {
    withUnsafeBytes(of: length.bigEndian, Array.init)
}

extension TransportError {
    /// Receiving on `socket` must fail with exactly this error.
    public static func expect<M: SwiftProtobuf.Message>(_ expected: TransportError, receiving type: M.Type, on socket: FrameSocket,
                                                file: StaticString = #filePath, line: UInt = #line) {
        do {
            let received = try socket.receive(type)
            XCTFail("expected \(expected), received \(received.message)", file: file, line: line)
        } catch {
            XCTAssertEqual(error, expected, file: file, line: line)
        }
    }
}
#endif
