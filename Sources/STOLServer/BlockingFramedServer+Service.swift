import Foundation
import Logging
import STOLDaemon
import STOLTransport
import ServiceLifecycle

/// The blocking server (STOLDaemon) as one service of a daemon's group: what the
/// import coordinator runs under ``DaemonMain/run(_:options:server:prepare:)``.
/// It tells systemd READY once it serves and STOPPING on a graceful shutdown or
/// the idle exit. The verifier does not use this: it calls `serve()` itself, so
/// it links neither swift-service-lifecycle nor libsystemd.
extension BlockingFramedServer: ServiceLifecycle.Service {
    public func run() async throws {
        let notifier = SystemdNotifier()
        notifier.ready(status: "serving \(configuration.name)")
        let finished: @Sendable () async -> Void = {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let thread = Thread(named: "stol.serve") { [self] in
                    serve(beforeIdleExit: { notifier.stopping() })
                    continuation.resume()
                }
                thread.start()
            }
        }
        // Like NIOFramedServer: a graceful shutdown or a cancelled task stops
        // accepting, and run() returns once every started request is answered.
        await withTaskCancellationOrGracefulShutdownHandler {
            await finished()
        } onCancelOrGracefulShutdown: { [self] in
            notifier.stopping()
            logger.info("graceful shutdown: finishing in-flight requests")
            shutdown()
        }
        logger.info("stopped", metadata: ["service": "\(configuration.name)"])
    }
}
