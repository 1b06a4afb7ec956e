import Glibc
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import NIOPosix
import ServiceLifecycle

/// The web app's server: Hummingbird's HTTP/1 channel and router on listening sockets the
/// app made or systemd handed over (``WebEndpoint``), with every connection's owner
/// checked by the kernel first (``ConnectionOwner``): a connection of another uid gets a
/// `403` and a close, and nothing of it is read.
///
/// Hummingbird's own server binds an address itself; this one takes sockets, so that the
/// user unit can hand one over and the Unix socket is made private before anyone connects.
public final class WebServer: Service, Sendable {
    public let endpoints: [WebEndpoint]
    /// The only uid served: the user who runs the app.
    public let owner: UInt32
    /// Hummingbird's HTTP/1 handling of one connection: its pipeline and its requests.
    let http: HTTP1Channel
    let logger: Logger
    let group: MultiThreadedEventLoopGroup

    public init(endpoints: [WebEndpoint], owner: UInt32 = getuid(), application: WebApplication, logger: Logger) {
        self.endpoints = endpoints
        self.owner = owner
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let router = application.responder
        let logger = logger
        let responder: HTTPChannelHandler.Responder = { request, writer, channel in
            let context = BasicRequestContext(source: .init(channel: channel, logger: logger))
            let response: Response
            do {
                response = try await router.respond(to: request, context: context)
            } catch {
                logger.debug("request failed", metadata: ["error": "\(error)"])
                response = Response(status: .internalServerError)
            }
            try await writer.write(response: response.head, body: response.body)
        }
        http = HTTP1Channel(responder: responder, configuration: .init(idleTimeout: .seconds(60)))
    }

    deinit { try? group.syncShutdownGracefully() }

    /// A connection: served over HTTP, or refused before a byte was read.
    enum Connection: Sendable {
        case served(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case refused
    }

    /// Serves every endpoint until cancelled or told to shut down gracefully.
    public func run() async throws {
        let channels = try await withThrowingTaskGroup(of: NIOAsyncChannel<Connection, Never>.self) { group in
            for endpoint in endpoints {
                group.addTask { try await self.bind(endpoint) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingDiscardingTaskGroup { group in
                    for channel in channels {
                        group.addTask { try await self.serve(channel) }
                    }
                }
            }
        } catch is CancellationError {
            // Ctrl-C, SIGTERM or the user manager's stop: a normal end.
        }
    }

    private func bind(_ endpoint: WebEndpoint) async throws -> NIOAsyncChannel<Connection, Never> {
        let http = http
        let owner = owner
        let logger = logger
        return try await ServerBootstrap(group: group)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .bind(NIOBSDSocket.Handle(endpoint.fd)) { channel in
                ConnectionOwner.uid(of: channel).flatMap { uid -> EventLoopFuture<Connection> in
                    guard uid == owner else {
                        logger.info("refused a connection of another user")
                        logger.debug("refused", metadata: ["uid": "\(uid.map(String.init) ?? "unknown")"])
                        return channel.eventLoop.makeCompletedFuture {
                            try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                            try channel.pipeline.syncOperations.addHandler(RefusalHandler())
                            return .refused
                        }
                    }
                    return http.setup(channel: channel, logger: logger).map { .served($0) }
                }
            }
    }

    private func serve(_ server: NIOAsyncChannel<Connection, Never>) async throws {
        let http = http
        try await server.executeThenClose { inbound in
            try await withThrowingDiscardingTaskGroup { group in
                for try await connection in inbound {
                    guard case .served(let channel) = connection else { continue }
                    group.addTask { await http.handle(value: channel, logger: self.logger) }
                }
            }
        }
    }
}

/// What another user's connection gets: a `403` written before anything of the connection is
/// read, its side closed, then whatever the peer had sent discarded until it closes too (at
/// most ``drainLimit`` bytes and ``drainTime``). Closing at once with its request unread makes
/// the kernel reset the connection (TCP's RST; a Unix socket's ECONNRESET), and the client may
/// see the reset instead of the answer.
final class RefusalHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let message = "This STOL web app belongs to another user of this machine. Start your own: stol-web\n"
    static let drainLimit = 64 * 1024
    static let drainTime = TimeAmount.seconds(2)
    private var drained = 0

    func channelActive(context: ChannelHandlerContext) {
        let body = Self.message
        let head = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Content-Security-Policy: \(SecurityHeaders<BasicRequestContext>.contentSecurityPolicy)\r\n"
            + "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: head + body))).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
            channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in channel.read() }
            channel.eventLoop.scheduleTask(in: Self.drainTime) { channel.close(promise: nil) }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        drained += unwrapInboundIn(data).readableBytes
        if drained > Self.drainLimit { context.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
