import Logging
import ServiceLifecycle

/// The run loop every daemon's `main` uses: one service group with SIGTERM and
/// SIGINT as graceful-shutdown signals, so in-flight requests finish and the
/// process exits 0.
public enum Daemon {
    public static func run(_ services: [any Service], logger: Logger) async throws {
        let group = ServiceGroup(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: logger
        )
        try await group.run()
    }
}
