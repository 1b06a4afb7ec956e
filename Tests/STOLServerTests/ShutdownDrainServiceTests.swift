import Logging
import ServiceLifecycle
import STOLServer
import Synchronization
import XCTest

/// ``ShutdownDrainService``: placed first in a daemon's group, its drain runs after
/// the other services have ended and before the group (the daemon) returns, on an
/// idle exit (a service that returns) as on a signal's graceful shutdown.
final class ShutdownDrainServiceTests: XCTestCase {
    /// A service that records its end, then returns: at once (the idle exit) or when the group shuts down.
    private struct Server: Service {
        let events: Events
        let returnsAtOnce: Bool
        func run() async throws {
            if !returnsAtOnce { try? await gracefulShutdown() }
            events.append("server ended")
        }
    }

    private final class Events: Sendable {
        private let list = Mutex<[String]>([])
        func append(_ event: String) { list.withLock { $0.append(event) } }
        var all: [String] { list.withLock { $0 } }
    }

    private func group(_ events: Events, serverReturnsAtOnce: Bool) -> ServiceGroup {
        let drain = ShutdownDrainService {
            // Work that outlasts the server's end: the group must wait for it.
            try? await Task.sleep(for: .milliseconds(50))
            events.append("drained")
        }
        let configuration = ServiceGroupConfiguration(
            services: [.init(service: drain, successTerminationBehavior: .gracefullyShutdownGroup),
                       .init(service: Server(events: events, returnsAtOnce: serverReturnsAtOnce),
                             successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [], cancellationSignals: [], logger: Logger(label: "test"))
        return ServiceGroup(configuration: configuration)
    }

    func testOnAnIdleExit_theDrainRunsAfterTheServerEnds_andTheGroupWaitsForIt() async throws {
        let events = Events()
        try await group(events, serverReturnsAtOnce: true).run()
        XCTAssertEqual(events.all, ["server ended", "drained"])
    }

    func testOnAGracefulShutdown_theServerEndsFirst_thenTheDrain_beforeTheGroupReturns() async throws {
        let events = Events()
        let group = group(events, serverReturnsAtOnce: false)
        async let running: Void = group.run()
        await group.triggerGracefulShutdown()
        try await running
        XCTAssertEqual(events.all, ["server ended", "drained"])
    }
}
