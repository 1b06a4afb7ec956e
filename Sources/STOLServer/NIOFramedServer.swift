import Glibc
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import STOLDaemon
import STOLProtocol
import STOLTransport
import ServiceLifecycle

/// Serves a ``FramedService`` on a listening Unix socket with swift-nio.
///
/// Used by the two high-traffic daemons (taxonomy, favourites). Connection limits
/// (in all and per user), idle timeout and frame limits are enforced here once;
/// graceful shutdown (SIGTERM through swift-service-lifecycle, or the idle exit)
/// stops accepting, lets every in-flight request finish and be answered, then
/// returns. Under a watchdog every event loop stamps the ``Heartbeat`` the
/// daemon's ``WatchdogService`` reads, so a stuck loop stops the watchdog's pings.
public final class NIOFramedServer<Service: FramedService>: ServiceLifecycle.Service {
    private let service: Service
    private let listeningSocket: Int32
    private let configuration: ServerConfiguration
    private let logger: Logger
    private let notifier: SystemdNotifier
    private let group: any EventLoopGroup
    /// Stamped by every event loop when systemd watches the daemon (nil: no watchdog).
    private let heartbeat: Heartbeat?

    public init(service: Service, listeningSocket: Int32, configuration: ServerConfiguration, logger: Logger,
                notifier: SystemdNotifier = SystemdNotifier(), heartbeat: Heartbeat? = nil,
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.service = service
        self.listeningSocket = listeningSocket
        self.configuration = configuration
        self.logger = logger
        self.notifier = notifier
        self.group = group
        self.heartbeat = heartbeat
    }

    public func run() async throws {
        let quiesce = ServerQuiescingHelper(group: group)
        let connections = ConnectionLimiter(limit: configuration.maximumConnections,
                                            perUserLimit: configuration.maximumConnectionsPerUser)
        let framingErrors = RateLimitedLog.framingErrors()
        let lanes = UserLanes()
        let budget = OutputBudget(total: configuration.maximumUnsentBytesInAll, perUser: configuration.maximumUnsentBytesPerUser)
        let bulkSlots = RequestSlots.bulk()
        let service = self.service
        let configuration = self.configuration
        let logger = self.logger
        let channel = try await ServerBootstrap(group: group)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiesce.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(.autoRead, value: true)
            // A client's end of stream (shutdown(SHUT_WR)) is an event for the handler,
            // which answers what was sent before it, then closes (see FramedRequestHandler).
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: configuration.maximumUnsentBytes / 2,
                                                                   high: configuration.maximumUnsentBytes))
            .childChannelInitializer { child in
                Self.initializeConnection(child, service: service, configuration: configuration, connections: connections,
                                          lanes: lanes, budget: budget, bulkSlots: bulkSlots, framingErrors: framingErrors,
                                          logger: logger)
            }
            .withBoundSocket(listeningSocket)
            .get()
        notifier.ready(status: "serving \(configuration.name)")
        logger.info("ready", metadata: ["service": "\(configuration.name)"])
        let group = self.group
        let notifier = self.notifier
        let beats = heartbeat.map { Self.stampHeartbeat($0, on: group) } ?? []
        defer { beats.forEach { $0.cancel() } }
        let hangHook = ServingLoopHangHook.installIfRequested(logger: logger) { [group] in
            group.next().execute { while true { sleep(3600) } }
        }
        defer { hangHook?.cancel() }
        let window = RateLimitedLog.window.components.seconds
        let summaries = group.next().scheduleRepeatedTask(initialDelay: .seconds(window), delay: .seconds(window)) { _ in
            framingErrors.flushIfDue(logger: logger)
        }
        defer { summaries.cancel() }
        await withTaskCancellationOrGracefulShutdownHandler {
            await withDiscardingTaskGroup { tasks in
                tasks.addTask { await IdleMemoryTrim.run(every: .seconds(2), lanes: lanes, logger: logger) }
                if let idleExit = configuration.idleExit {
                    tasks.addTask {
                        await Self.exitWhenIdle(after: idleExit, connections: connections, logger: logger) {
                            notifier.stopping()
                            quiesce.initiateShutdown(promise: nil)
                        }
                    }
                }
                try? await channel.closeFuture.get()
                tasks.cancelAll()
            }
        } onCancelOrGracefulShutdown: {
            notifier.stopping()
            logger.info("graceful shutdown: finishing in-flight requests")
            quiesce.initiateShutdown(promise: nil)
        }
        // The listening channel is closed, but connections may still be answering
        // in-flight requests: return only once every one of them has closed.
        let drained = group.next().makePromise(of: Void.self)
        quiesce.initiateShutdown(promise: drained)
        try? await drained.futureResult.get()
        framingErrors.flush(logger: logger)  // what was counted is logged, not lost with the process
        logger.info("stopped", metadata: ["service": "\(configuration.name)"])
    }

    /// One heartbeat slot per event loop, stamped from a repeated task on that loop.
    private static func stampHeartbeat(_ heartbeat: Heartbeat, on group: any EventLoopGroup) -> [RepeatedTask] {
        let period = TimeAmount.nanoseconds(Int64(heartbeat.period.components.seconds) * 1_000_000_000
                                            + heartbeat.period.components.attoseconds / 1_000_000_000)
        return group.makeIterator().map { loop in
            let slot = heartbeat.register()
            return loop.scheduleRepeatedTask(initialDelay: .zero, delay: period) { _ in heartbeat.beat(slot) }
        }
    }

    /// Returns (after calling `exit`) once the server has had no connection for `idleExit`.
    static func exitWhenIdle(after idleExit: Duration, connections: ConnectionLimiter, logger: Logger,
                             exit: @Sendable () -> Void) async {
        let check = min(idleExit / 4, .seconds(1))
        while !Task.isCancelled {
            if let idle = connections.idleFor, idle >= idleExit {
                logger.info("no connection for the idle period: exiting (socket activation starts it again)",
                            metadata: ["idle_exit": "\(idleExit)"])
                exit()
                return
            }
            try? await Task.sleep(for: check)
        }
    }

    private static func initializeConnection(_ child: any Channel, service: Service, configuration: ServerConfiguration,
                                             connections: ConnectionLimiter, lanes: UserLanes, budget: OutputBudget,
                                             bulkSlots: RequestSlots, framingErrors: RateLimitedLog,
                                             logger: Logger) -> EventLoopFuture<Void> {
        let peerFuture: EventLoopFuture<UCred> = (child as! any SocketOptionProvider)
            .unsafeGetSocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return peerFuture.flatMapThrowing { credentials in
            // When the daemon is full, this may close the oldest connection of the user
            // holding the most (``ConnectionLimiter``): `close` is how to close this one.
            let admission: ConnectionLimiter.Admission
            switch connections.admit(uid: credentials.uid, close: { child.close(promise: nil) }) {
            case .success(let admitted):
                admission = admitted
            case .failure(let refusal):
                // Over a limit: one typed error frame, then close.
                let response = Service.Response(requestID: 0, error: refusal)
                if let frame = try? FrameEncoding.frame(response, maximumFrameBytes: configuration.maximumResponseFrameBytes) {
                    child.writeAndFlush(frame).whenComplete { _ in child.close(promise: nil) }
                } else {
                    child.close(promise: nil)
                }
                return
            }
            child.closeFuture.whenComplete { _ in connections.release(admission) }
            let peer = PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
            let sync = child.pipeline.syncOperations
            let idle = configuration.idleTimeout.components
            try sync.addHandler(IdleStateHandler(readTimeout: TimeAmount.nanoseconds(
                idle.seconds * 1_000_000_000 + idle.attoseconds / 1_000_000_000)))
            let deadline = configuration.frameDeadline.components
            try sync.addHandler(FrameDeadlineHandler(deadline: .nanoseconds(
                deadline.seconds * 1_000_000_000 + deadline.attoseconds / 1_000_000_000)))
            // No ByteToMessageHandler: FramedRequestHandler cuts each frame off the bytes
            // read when it is ready for it (its `unread`), not every frame of a read at once.
            try sync.addHandler(FramedRequestHandler(service: service, configuration: configuration, peer: peer,
                                                     logger: logger, lanes: lanes, budget: budget, bulkSlots: bulkSlots,
                                                     framingErrors: framingErrors))
        }
    }
}

/// `struct ucred` (SO_PEERCRED) with the kernel's layout, read through NIO's
/// `SocketOptionProvider` because NIO does not expose a channel's descriptor.
struct UCred: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
