import Dispatch
import Foundation
import Glibc
import STOLProtocol
import STOLServer
import STOLTestFixtures
import STOLTransport
import ServiceLifecycle
import XCTest

/// A server on a Unix socket in a short temporary directory, run in a
/// `ServiceGroup` as the daemons run it, from a synchronous test (the test thread
/// may block on sockets without starving Swift's cooperative pool).
final class ServerHarness: @unchecked Sendable {
    let path: String
    let events: EventLog
    private let group: ServiceGroup
    private let task: Task<Void, Never>
    private let finished = DispatchSemaphore(value: 0)
    private var didFinish = false

    /// `makeServer` gets the listening descriptor bound through ``SocketActivation``;
    /// the socket has `mode`, its directory `directoryMode` (mkdtemp's 0700 when nil).
    init(_ testCase: XCTestCase, events: EventLog = EventLog(), mode: mode_t = 0o600, directoryMode: mode_t? = nil,
         makeServer: (Int32) -> any ServiceLifecycle.Service) throws {
        path = try makeTemporaryDirectory(testCase, mode: directoryMode) + "/server.sock"
        self.events = events
        let fd = try bindTestSocket(path, mode: mode)
        group = ServiceGroup(services: [makeServer(fd)], gracefulShutdownSignals: [], cancellationSignals: [],
                             logger: quietLogger)
        let group = self.group
        let finished = self.finished
        task = Task {
            do {
                try await group.run()
                events.record("run returned")
            } catch {
                events.record("run threw \(error)")
            }
            finished.signal()
        }
        testCase.addTeardownBlock { [self] in
            if !didFinish { triggerGracefulShutdown(); _ = waitUntilFinished() }
        }
    }

    func connect() throws -> FrameSocket { try connectClient(path) }

    func triggerGracefulShutdown() {
        let group = self.group
        Task { await group.triggerGracefulShutdown() }
    }

    func cancel() { task.cancel() }

    /// Waits for the service group's `run()` to return (`timeout` is a safety net).
    @discardableResult
    func waitUntilFinished(timeout: Double = 10) -> Bool {
        if didFinish { return true }
        didFinish = finished.wait(timeout: .now() + timeout) == .success
        return didFinish
    }
}

extension ResponseEnvelope {
    /// The error code of an error answer, nil for a result.
    var errorCode: Stol_V1_ErrorCode? { protocolError?.code }
}
