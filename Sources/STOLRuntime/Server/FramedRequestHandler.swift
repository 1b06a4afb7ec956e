import Logging
import NIOCore
import NIOExtras
import STOLProtocol

/// The per-connection NIO handler of ``NIOFramedServer``: decodes request frames,
/// runs the service, writes response frames in request order.
///
/// Requests are answered one at a time per connection; while one is in flight,
/// reading stops (backpressure) and later frames wait. A framing error is answered
/// with a typed error frame and the connection is closed; other connections and the
/// daemon carry on. On `ChannelShouldQuiesceEvent` (graceful shutdown) the in-flight
/// request is finished and answered, then the connection closes.
final class FramedRequestHandler<Service: FramedService>: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let service: Service
    private let configuration: ServerConfiguration
    private let logger: Logger
    private let peer: PeerCredentials
    private var pending: CircularBuffer<ByteBuffer> = []
    private var busy = false
    private var closing = false
    private var quiescing = false

    init(service: Service, configuration: ServerConfiguration, peer: PeerCredentials, logger: Logger) {
        self.service = service
        self.configuration = configuration
        self.peer = peer
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        pending.append(Self.unwrapInboundIn(data))
        processNext(context: context)
    }

    func read(context: ChannelHandlerContext) {
        // Backpressure: no new reads while a request is in flight.
        if !busy { context.read() }
    }

    private func processNext(context: ChannelHandlerContext) {
        guard !busy, !closing else { return }
        guard let frame = pending.popFirst() else {
            if quiescing { close(context: context) }
            return
        }
        let request: Service.Request
        do {
            request = try FrameEncoding.decode(Service.Request.self, from: frame)
        } catch {
            fail(context: context, error: error)
            return
        }
        busy = true
        let service = self.service
        let requestContext = RequestContext(peer: peer, logger: logger)
        let promise = context.eventLoop.makePromise(of: Service.Response.self)
        promise.completeWithTask {
            await service.respond(to: request, context: requestContext)
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        promise.futureResult.whenSuccess { response in
            let (handler, context) = loopBound.value
            handler.finish(context: context, requestID: request.id, response: response)
        }
    }

    private func finish(context: ChannelHandlerContext, requestID: UInt64, response: Service.Response) {
        busy = false
        guard !closing else { return }
        var response = response
        response.id = requestID
        do {
            let frame = try FrameEncoding.frame(response, maximumFrameBytes: configuration.maximumResponseFrameBytes)
            context.writeAndFlush(Self.wrapOutboundOut(frame), promise: nil)
        } catch {
            logger.error("response could not be encoded", metadata: ["error": "\(error)"])
            let fallback = Service.Response(
                requestID: requestID,
                error: ProtocolError(.internal, "the answer is larger than the protocol allows; narrow the request"))
            if let frame = try? FrameEncoding.frame(fallback, maximumFrameBytes: configuration.maximumResponseFrameBytes) {
                context.writeAndFlush(Self.wrapOutboundOut(frame), promise: nil)
            }
        }
        if pending.isEmpty {
            if quiescing { close(context: context); return }
            context.read()
        } else {
            processNext(context: context)
        }
    }

    /// Answers a framing error with a typed error frame (when the peer can still
    /// read it) and closes this connection.
    private func fail(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        let protocolError = (error as? ProtocolErrorConvertible)?.protocolError
            ?? ProtocolError(.malformedFrame, "unreadable request stream")
        logger.notice("closing connection after framing error", metadata: ["code": "\(protocolError.code.name)"])
        let response = Service.Response(requestID: 0, error: protocolError)
        closing = true
        pending.removeAll()
        if let frame = try? FrameEncoding.frame(response, maximumFrameBytes: configuration.maximumResponseFrameBytes) {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(Self.wrapOutboundOut(frame)).whenComplete { _ in
                loopBound.value.close(promise: nil)
            }
        } else {
            context.close(promise: nil)
        }
    }

    private func close(context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is FramingError || error is ByteToMessageDecoderError {
            fail(context: context, error: error)
        } else {
            logger.debug("connection error", metadata: ["error": "\(error)"])
            close(context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            quiescing = true
            if !busy && pending.isEmpty { close(context: context) }
        } else if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            if !busy { close(context: context) }
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
