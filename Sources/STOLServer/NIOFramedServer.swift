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
/// Used by the two high-traffic daemons (taxonomy, favourites). Connections are
/// accepted on a thread of their own (``PeerAcceptor``) and each is read and
/// written on its user's event loop (``UserEventLoops``: one user's connections
/// never keep another's loop busy). Connection limits (in all and per user), idle
/// timeout and frame limits are enforced here once; graceful shutdown (SIGTERM
/// through swift-service-lifecycle, or the idle exit) stops accepting, lets every
/// in-flight request finish and be answered, then returns. Under a watchdog every
/// event loop and the accepting thread stamp the ``Heartbeat`` the daemon's
/// ``WatchdogService`` reads, so a stuck loop stops the watchdog's pings.
public final class NIOFramedServer<Service: FramedService>: ServiceLifecycle.Service {
    private let service: Service
    private let listeningSocket: Int32
    private let configuration: ServerConfiguration
    private let logger: Logger
    private let notifier: SystemdNotifier
    /// Stamped by every event loop when systemd watches the daemon (nil: no watchdog).
    private let heartbeat: Heartbeat?

    public init(service: Service, listeningSocket: Int32, configuration: ServerConfiguration, logger: Logger,
                notifier: SystemdNotifier = SystemdNotifier(), heartbeat: Heartbeat? = nil) {
        self.service = service
        self.listeningSocket = listeningSocket
        self.configuration = configuration
        self.logger = logger
        self.notifier = notifier
        self.heartbeat = heartbeat
    }

    public func run() async throws {
        let loops = UserEventLoops(count: configuration.eventLoops)
        let group = loops.group
        let open = OpenConnections()
        let connections = ConnectionLimiter(limit: configuration.maximumConnections,
                                            perUserLimit: configuration.maximumConnectionsPerUser)
        let framingErrors = RateLimitedLog.framingErrors()
        let lanes = UserLanes()
        let budget = OutputBudget(total: configuration.maximumUnsentBytesInAll, perUser: configuration.maximumUnsentBytesPerUser)
        let bulkSlots = RequestSlots.bulk()
        let service = self.service
        let configuration = self.configuration
        let logger = self.logger
        let acceptor: PeerAcceptor
        do {
            acceptor = try PeerAcceptor(listeningSocket: listeningSocket, finishedOn: group.next(), heartbeat: heartbeat,
                                        logger: logger) { socket, peer in
                // Admitted here, before the connection has a channel: a refusal is one
                // typed error frame the acceptor writes to the socket, then the close
                // (``PeerAcceptor/refusalDelay`` later), and costs no event loop anything.
                // When the daemon is full, this may close the oldest connection of the
                // user holding the most (``ConnectionLimiter``).
                let slot = ConnectionSlot(limiter: connections)
                switch connections.admit(uid: peer.uid, close: { slot.close() }) {
                case .failure(let refusal):
                    let response = Service.Response(requestID: 0, error: refusal)
                    let frame = try? FrameEncoding.frame(response, maximumFrameBytes: configuration.maximumResponseFrameBytes)
                    return .refused(frame: frame.map { Array($0.readableBytesView) } ?? [])
                case .success(let admission):
                    let loop = loops.acquire(peer.uid)
                    slot.admitted(admission, on: loop)
                    Self.serve(socket, on: loop.loop, slot: slot, open: open, configuration: configuration) { child in
                        Self.initializeConnection(child, peer: peer, service: service, configuration: configuration,
                                                  lanes: lanes, budget: budget, bulkSlots: bulkSlots,
                                                  framingErrors: framingErrors, logger: logger)
                    }
                    return .served
                }
            }
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        let beats = heartbeat.map { Self.stampHeartbeat($0, on: group) } ?? []
        acceptor.start()
        notifier.ready(status: "serving \(configuration.name)")
        logger.info("ready", metadata: ["service": "\(configuration.name)"])
        let notifier = self.notifier
        let hangHook = ServingLoopHangHook.installIfRequested(logger: logger) { [group] in
            group.next().execute { while true { sleep(3600) } }
        }
        let window = RateLimitedLog.window.components.seconds
        let summaries = group.next().scheduleRepeatedTask(initialDelay: .seconds(window), delay: .seconds(window)) { _ in
            framingErrors.flushIfDue(logger: logger)
        }
        await withTaskCancellationOrGracefulShutdownHandler {
            await withDiscardingTaskGroup { tasks in
                tasks.addTask { await IdleMemoryTrim.run(every: .seconds(2), lanes: lanes, logger: logger) }
                if let idleExit = configuration.idleExit {
                    tasks.addTask {
                        await Self.exitWhenIdle(after: idleExit, connections: connections, logger: logger) {
                            notifier.stopping()
                            acceptor.stop()
                        }
                    }
                }
                try? await acceptor.finished.futureResult.get()
                tasks.cancelAll()
            }
        } onCancelOrGracefulShutdown: {
            notifier.stopping()
            logger.info("graceful shutdown: finishing in-flight requests")
            acceptor.stop()
        }
        // No connection is accepted any more, but some may still be answering
        // in-flight requests: return only once every one of them has closed.
        await open.quiesce()
        framingErrors.flush(logger: logger)  // what was counted is logged, not lost with the process
        hangHook?.cancel()
        summaries.cancel()
        beats.forEach { $0.cancel() }
        try? await group.shutdownGracefully()
        logger.info("stopped", metadata: ["service": "\(configuration.name)"])
    }

    /// Registers the accepted `socket` on its user's event loop `loop`, with the
    /// options every connection has and `initialize`'s handlers; `slot` is given back
    /// when the connection closes (or could not be registered).
    private static func serve(_ socket: Int32, on loop: any EventLoop, slot: ConnectionSlot, open: OpenConnections,
                              configuration: ServerConfiguration,
                              initialize: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>) {
        ClientBootstrap(group: loop)
            .channelOption(.autoRead, value: true)
            // A client's end of stream (shutdown(SHUT_WR)) is an event for the handler,
            // which answers what was sent before it, then closes (see FramedRequestHandler).
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelOption(.writeBufferWaterMark, value: .init(low: configuration.maximumUnsentBytes / 2,
                                                               high: configuration.maximumUnsentBytes))
            .channelInitializer { child in
                child.closeFuture.whenComplete { _ in slot.release() }
                return initialize(child)
            }
            .withConnectedSocket(socket)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    // Registered: only now may it be closed (a close asked for meanwhile, or
                    // the server's stop); NIO registers a channel it was handed open.
                    slot.attach(channel)
                    open.add(channel)
                case .failure:
                    // Not registered: the bootstrap has closed the socket (or the channel).
                    slot.release()
                }
            }
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

    private static func initializeConnection(_ child: any Channel, peer: PeerCredentials, service: Service,
                                             configuration: ServerConfiguration, lanes: UserLanes, budget: OutputBudget,
                                             bulkSlots: RequestSlots, framingErrors: RateLimitedLog,
                                             logger: Logger) -> EventLoopFuture<Void> {
        child.eventLoop.makeCompletedFuture {
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
