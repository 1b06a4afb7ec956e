import Logging
import STOLDaemon
import STOLTransport
import STOLSandbox
import ServiceLifecycle

/// What the serving part of a daemon gets once its socket is open and it has
/// sandboxed itself: build the servers (and any other services) from these.
public struct ServingContext: Sendable {
    public let daemon: DaemonContext
    public let socket: SocketSource
    public let configuration: ServerConfiguration
    /// Every serving loop stamps it and the watchdog reads it; nil when systemd
    /// asks for no watchdog (then no loop wakes to stamp anything).
    public let heartbeat: Heartbeat?

    /// The listening socket, for a server that serves many connections.
    public func listeningSocket() throws(DaemonStartupError) -> Int32 {
        guard case .listening(let fd, _) = socket else {
            throw DaemonStartupError(.config, "\(daemon.identity.executable) needs a listening socket but was handed an accepted connection; configure its socket unit with Accept=no")
        }
        return fd
    }
}

/// The one skeleton of the serving daemons (taxonomy, favourites, import):
///
/// 1. logging (`STOL_LOG_LEVEL`) under the label `stol.<name>`, paths from the
///    environment and ``DaemonOptions``;
/// 2. `prepare`: what must happen with full access (open a database, prepare
///    a directory); it returns the function that builds the services;
/// 3. the socket: passed by systemd (`FileDescriptorName=`) or bound;
/// 4. the sandbox (``Sandbox/enterDaemon()``), and the test-only probe;
/// 5. the services, plus a ``WatchdogService`` when systemd asks for one, run as
///    one service group: SIGTERM and SIGINT shut it down gracefully (in-flight
///    requests finish, exit 0).
///
/// A ``DaemonStartupError`` at any step is logged at critical and exits with its
/// sysexits code. The verifier, which must not start a thread before it has
/// sandboxed itself, uses `start` and `openSocket` of STOLDaemon and serves
/// synchronously.
extension DaemonMain {
    public typealias MakeServices = @Sendable (ServingContext) throws(DaemonStartupError) -> [any Service]

    /// - Parameter adjust: the daemon's own limits over those its options give (its
    ///   memory for unsent answers, say).
    public static func run(_ identity: DaemonIdentity, options: DaemonOptions, server: ServerOptions,
                           adjust: (inout ServerConfiguration) -> Void = { _ in },
                           prepare: (DaemonContext) throws(DaemonStartupError) -> MakeServices) async throws {
        let context = start(identity, options: options)
        let logger = context.logger
        // Before any thread starts and before SQLite initializes (``MemoryPolicy``).
        if !MemoryPolicy.apply() { logger.warning("SQLite was initialized before its memory statistics could be turned off") }
        do {
            let makeServices = try prepare(context)
            let socket = try openSocket(context, options: options)
            try enterSandbox(context)
            let watchdogInterval = SystemdNotifier().watchdogInterval
            let heartbeat = watchdogInterval.map { Heartbeat(period: Heartbeat.period(forWatchdog: $0)) }
            var configuration = server.configuration(name: identity.socketName)
            adjust(&configuration)
            var services = try makeServices(ServingContext(daemon: context, socket: socket,
                                                           configuration: configuration,
                                                           heartbeat: heartbeat))
            if let interval = watchdogInterval, let heartbeat {
                services.append(WatchdogService(heartbeat: heartbeat, interval: interval, logger: logger))
            }
            try await runServices(services, logger: logger)
        } catch let error as DaemonStartupError {
            logger.critical("cannot start: \(error.message)")
            throw error.code.exitCode
        }
    }

    /// The serving daemons' sandbox (no programs, no sockets but Unix ones), with the
    /// test-only probes that try the unit's limits before it and the whole sandbox after.
    static func enterSandbox(_ context: DaemonContext) throws(DaemonStartupError) {
        reportUnitLevelProbe(context)
        do {
            try Sandbox.enterDaemon()
        } catch {
            throw DaemonStartupError(.osError, "cannot sandbox itself: \(error)")
        }
        reportSandboxProbe(context)
    }

    /// One service group with SIGTERM and SIGINT as graceful-shutdown signals, so
    /// in-flight requests finish and the process exits 0. A service that returns
    /// has finished its work (the idle exit): that ends the daemon cleanly.
    static func runServices(_ services: [any Service], logger: Logger) async throws {
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
