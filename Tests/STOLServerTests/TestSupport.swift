import CSTOLSocket
import Dispatch
import Foundation
import Glibc
import Logging
import NIOCore
import STOLDaemon
import STOLProtocol
import STOLServer
import STOLTestFixtures
import STOLTransport
import SwiftProtobuf
import XCTest

/// Shared helpers of the runtime tests: real sockets only (socketpair(2) and Unix
/// sockets bound in short temporary directories under /tmp, from the kit), no mocks.


/// A fresh connected pair of Unix stream sockets.
func makeSocketPair(file: StaticString = #filePath, line: UInt = #line) throws -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        XCTFail("socketpair failed: errno \(errno)", file: file, line: line)
        throw POSIXError(.EIO)
    }
    return (fds[0], fds[1])
}

/// Two framed sockets over one socketpair; a receive timeout keeps a broken test
/// from hanging (it is a safety net, never asserted on).
func makeFrameSocketPair(limit: Int = 1024) throws -> (FrameSocket, FrameSocket) {
    let (a, b) = try makeSocketPair()
    let left = FrameSocket(descriptor: a, maximumIncomingFrameBytes: limit, maximumOutgoingFrameBytes: limit)
    let right = FrameSocket(descriptor: b, maximumIncomingFrameBytes: limit, maximumOutgoingFrameBytes: limit)
    left.setReceiveTimeout(.seconds(5))
    right.setReceiveTimeout(.seconds(5))
    return (left, right)
}

/// Makes sure no activation variables leak into the fallback path of a test.
func clearSocketActivationEnvironment() {
    unsetenv("LISTEN_FDS")
    unsetenv("LISTEN_PID")
    unsetenv("LISTEN_FDNAMES")
}

/// Binds `path` through the production fallback path of ``SocketActivation``.
func bindTestSocket(_ path: String, mode: mode_t = 0o600) throws -> Int32 {
    clearSocketActivationEnvironment()
    let source = try SocketActivation.socket(named: "test", fallbackPath: path, mode: mode, logger: quietLogger)
    guard case .listening(let fd, activated: false) = source else {
        XCTFail("expected a self-bound listening socket, got \(source)")
        throw POSIXError(.EINVAL)
    }
    return fd
}

/// Connects a blocking client to `path` (requests out, responses in) with a safety timeout.
func connectClient(_ path: String) throws -> FrameSocket {
    let socket = try FrameSocket.connect(path: path)
    socket.setReceiveTimeout(.seconds(5))
    return socket
}

/// The complete frame (length prefix + body) of `message`, as bytes.
func frameBytes(_ message: some SwiftProtobuf.Message, limit: Int = ProtocolLimits.maximumRequestFrameBytes) throws -> [UInt8] {
    Array(try FrameEncoding.frame(message, maximumFrameBytes: limit).readableBytesView)
}

/// A frame with a valid length prefix whose body is not a protobuf message:
/// 0x07 is field 0 with wire type 7, which no protobuf decoder accepts.
let undecodableFrame: [UInt8] = [0, 0, 0, 4, 0x07, 0xff, 0xff, 0xff]

/// A bare length prefix announcing `length` bytes.
func lengthPrefix(_ length: UInt32) -> [UInt8] {
    withUnsafeBytes(of: length.bigEndian, Array.init)
}

/// A thread-safe ordered log of events, to assert on the order in which things happened.
typealias EventLog = LockedLog<String>

extension LockedLog<String> {
    func record(_ event: String) { append(contentsOf: [event]) }
    var events: [String] { all }
}

/// A one-shot gate a test opens to let a slow request finish: a synchronous
/// service waits for it on its thread, an async one suspends.
final class Gate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func open() {
        condition.lock()
        isOpen = true
        let toResume = waiters
        waiters = []
        condition.broadcast()
        condition.unlock()
        toResume.forEach { $0.resume() }
    }

    /// Blocks until the gate is opened (or a generous safety timeout passes).
    func waitUntilOpen() {
        condition.lock()
        let deadline = Date().addingTimeInterval(10)
        while !isOpen && condition.wait(until: deadline) {}
        condition.unlock()
    }

    /// Suspends until the gate is opened.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            let resumeNow = isOpen
            if !resumeNow { waiters.append(continuation) }
            condition.unlock()
            if resumeNow { continuation.resume() }
        }
    }
}

/// Retries `connect` until the listener at `path` refuses connections, which is
/// how a test observes that a server stopped accepting (bounded by a safety limit).
func waitUntilRefusingConnections(_ path: String) -> Bool {
    waitUntil(seconds: 5) {
        let fd = stol_connect_unix(path)
        if fd >= 0 { close(fd) }
        return fd < 0
    }
}

extension TransportError {
    /// Receiving on `socket` must fail with exactly this error.
    static func expect<M: SwiftProtobuf.Message>(_ expected: TransportError, receiving type: M.Type, on socket: FrameSocket,
                                                file: StaticString = #filePath, line: UInt = #line) {
        do {
            let received = try socket.receive(type)
            XCTFail("expected \(expected), received \(received.message)", file: file, line: line)
        } catch {
            XCTAssertEqual(error, expected, file: file, line: line)
        }
    }
}
