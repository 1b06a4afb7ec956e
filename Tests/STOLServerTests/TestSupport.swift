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

/// Shared helpers of the servers' tests: real sockets only (socketpair(2) and framed
/// pairs from the kit, `FrameSockets.swift`; Unix sockets bound in short temporary
/// directories under /tmp), no mocks.

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
