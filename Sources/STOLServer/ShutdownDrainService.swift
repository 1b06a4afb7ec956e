import ServiceLifecycle

/// Work that must end before the daemon does, as one service of its group: it waits
/// for the group's graceful shutdown (SIGTERM, the idle exit), then runs `drain`.
/// Placed first in the group, it is shut down last, once the servers have answered
/// their last requests (a group shuts its services down in reverse order).
public struct ShutdownDrainService: Service {
    private let drain: @Sendable () async -> Void

    public init(drain: @escaping @Sendable () async -> Void) {
        self.drain = drain
    }

    public func run() async throws {
        // Until the group shuts down; a cancellation (no graceful shutdown) skips the drain.
        try await gracefulShutdown()
        await drain()
    }
}
