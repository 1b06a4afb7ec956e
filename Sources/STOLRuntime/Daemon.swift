import Logging
import ServiceLifecycle

/// The run loop every daemon's `main` uses: one service group with SIGTERM and
/// SIGINT as graceful-shutdown signals, so in-flight requests finish and the
/// process exits 0.
public enum Daemon {
    public static func run(_ services: [any Service], logger: Logger) async throws {
        // A server that returns has finished its work (the per-connection verifier
        // after its one connection): that ends the daemon cleanly, not as a failure.
        let configuration = ServiceGroupConfiguration(
            services: services.map {
                .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup)
            },
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: logger
        )
        try await ServiceGroup(configuration: configuration).run()
    }
}
