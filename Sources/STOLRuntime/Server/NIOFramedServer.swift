import Glibc
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle
import STOLProtocol

/// Serves a ``FramedService`` on a listening Unix socket with swift-nio.
///
/// Used by the two high-traffic daemons (taxonomy, favourites). Connection limit,
/// idle timeout and frame limits are enforced here once; graceful shutdown
/// (SIGTERM through swift-service-lifecycle) stops accepting, lets every in-flight
/// request finish and be answered, then returns.
public final class NIOFramedServer<Service: FramedService>: ServiceLifecycle.Service {
    private let service: Service
    private let listeningSocket: Int32
    private let configuration: ServerConfiguration
    private let logger: Logger
    private let notifier: SystemdNotifier
    private let group: any EventLoopGroup

    public init(service: Service, listeningSocket: Int32, configuration: ServerConfiguration, logger: Logger,
                notifier: SystemdNotifier = SystemdNotifier(),
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.service = service
        self.listeningSocket = listeningSocket
        self.configuration = configuration
        self.logger = logger
        self.notifier = notifier
        self.group = group
    }

    public func run() async throws {
        let quiesce = ServerQuiescingHelper(group: group)
        let connections = ConnectionCounter(limit: configuration.maximumConnections)
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
            .childChannelInitializer { child in
                Self.initializeConnection(child, service: service, configuration: configuration,
                                          connections: connections, logger: logger)
            }
            .withBoundSocket(listeningSocket)
            .get()
        notifier.ready(status: "serving \(configuration.name)")
        logger.info("ready", metadata: ["service": "\(configuration.name)"])
        let group = self.group
        let notifier = self.notifier
        await withTaskCancellationOrGracefulShutdownHandler {
            await withDiscardingTaskGroup { tasks in
                tasks.addTask { await notifier.runWatchdog(logger: logger) }
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
        logger.info("stopped", metadata: ["service": "\(configuration.name)"])
    }

    private static func initializeConnection(_ child: any Channel, service: Service, configuration: ServerConfiguration,
                                             connections: ConnectionCounter, logger: Logger) -> EventLoopFuture<Void> {
        guard connections.acquire() else {
            // Over the limit: one typed error frame, then close.
            let refusal = Service.Response(requestID: 0, error: ProtocolError(
                .busy, "too many connections (limit \(configuration.maximumConnections)); try again"))
            if let frame = try? FrameEncoding.frame(refusal, maximumFrameBytes: configuration.maximumResponseFrameBytes) {
                child.writeAndFlush(frame).whenComplete { _ in child.close(promise: nil) }
            } else {
                child.close(promise: nil)
            }
            return child.eventLoop.makeSucceededVoidFuture()
        }
        child.closeFuture.whenComplete { _ in connections.release() }
        let peerFuture: EventLoopFuture<UCred> = (child as! any SocketOptionProvider)
            .unsafeGetSocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return peerFuture.flatMapThrowing { credentials in
            let peer = PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
            let sync = child.pipeline.syncOperations
            let idle = configuration.idleTimeout.components
            try sync.addHandler(IdleStateHandler(readTimeout: TimeAmount.nanoseconds(
                idle.seconds * 1_000_000_000 + idle.attoseconds / 1_000_000_000)))
            try sync.addHandler(ByteToMessageHandler(
                LengthPrefixedFrameDecoder(maximumFrameBytes: configuration.maximumRequestFrameBytes)))
            try sync.addHandler(FramedRequestHandler(service: service, configuration: configuration,
                                                     peer: peer, logger: logger))
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

/// Counts open connections across event loops.
final class ConnectionCounter: @unchecked Sendable {
    private let lock = NIOLockLite()
    private var open = 0
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    func acquire() -> Bool {
        lock.withLock {
            guard open < limit else { return false }
            open += 1
            return true
        }
    }

    func release() {
        lock.withLock { open -= 1 }
    }
}
