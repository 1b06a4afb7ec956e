import Logging
import NIOCore
import NIOExtras
import STOLDaemon
import STOLProtocol
import STOLTransport

/// The per-connection NIO handler of ``NIOFramedServer``: decodes request frames,
/// runs the service, writes response frames in request order.
///
/// Requests are answered one at a time per connection, short ones inline on the
/// event loop (``FramedService/respondInline(to:context:)``), others on the task
/// pool; while one of those is in flight, reading stops (backpressure) and later
/// frames wait. Reading also stops while the connection's unsent answers are over
/// the channel's high water mark (a client that pipelines without reading holds
/// at most that plus one answer), and a connection that leaves its answers unread
/// for ``ServerConfiguration/slowReaderTimeout`` is closed. A framing error is answered with a typed error frame and the
/// connection is closed; other connections and the daemon carry on. On `ChannelShouldQuiesceEvent` (graceful shutdown) the in-flight
/// request is finished and answered, then the connection closes; so it does when the client ends its side of the
/// stream (`shutdown(SHUT_WR)`): every request sent before the end is answered first, in order.
final class FramedRequestHandler<Service: FramedService>: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let service: Service
    private let configuration: ServerConfiguration
    private let logger: Logger
    private let peer: PeerCredentials
    private let framingErrors: RateLimitedLog
    private var pending: CircularBuffer<ByteBuffer> = []
    private var slowReaderTimer: Scheduled<Void>?
    private var busy = false
    private var closing = false
    private var quiescing = false
    /// The client has ended its side of the stream (`ChannelEvent.inputClosed`).
    private var inputClosed = false
    /// Close once nothing is in flight or waiting: on graceful shutdown, or after the client's end of stream.
    private var closesWhenIdle: Bool { quiescing || inputClosed }

    init(service: Service, configuration: ServerConfiguration, peer: PeerCredentials, logger: Logger,
         framingErrors: RateLimitedLog = RateLimitedLog.framingErrors()) {
        self.service = service
        self.configuration = configuration
        self.peer = peer
        self.logger = logger
        self.framingErrors = framingErrors
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        pending.append(Self.unwrapInboundIn(data))
        processPending(context: context)
    }

    func read(context: ChannelHandlerContext) {
        // Backpressure: no new reads while a request is in flight, while answers wait
        // unsent, or while decoded requests wait for their turn.
        if !busy && context.channel.isWritable && pending.isEmpty { context.read() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            slowReaderTimer?.cancel()
            slowReaderTimer = nil
            processPending(context: context)
            if !busy && !closing && pending.isEmpty { context.read() }
        } else if slowReaderTimer == nil {
            logger.debug("reading paused: the connection's unsent answers are over the high water mark")
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let timeout = configuration.slowReaderTimeout.components
            slowReaderTimer = context.eventLoop.scheduleTask(
                in: .nanoseconds(timeout.seconds * 1_000_000_000 + timeout.attoseconds / 1_000_000_000)) {
                let (handler, context) = loopBound.value
                guard !context.channel.isWritable else { return }
                handler.logger.debug("closing a connection that does not read its answers")
                handler.closing = true
                context.close(promise: nil)  // also when already closing after its answers
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        slowReaderTimer?.cancel()
        slowReaderTimer = nil
    }

    /// Answers pending requests in order: short ones inline (their answers are
    /// written, then flushed together, so a pipelined burst costs one syscall),
    /// until one has to go to the task pool; the rest wait for its answer.
    private func processPending(context: ChannelHandlerContext) {
        var wrote = false
        while !busy, !closing, context.channel.isWritable, let frame = pending.popFirst() {
            let request: Service.Request
            do {
                request = try FrameEncoding.decode(Service.Request.self, from: frame)
            } catch {
                if wrote { context.flush() }
                fail(context: context, error: error)
                return
            }
            let requestContext = RequestContext(peer: peer, logger: logger)
            if let response = service.respondInline(to: request, context: requestContext) {
                write(context: context, requestID: request.id, response: response)
                wrote = true
                continue
            }
            busy = true
            let service = self.service
            let maximumFrameBytes = configuration.maximumResponseFrameBytes
            let logger = self.logger
            // The answer is encoded where it was computed: a 50,000-node subtree or
            // a 1,000-lineage batch takes milliseconds to serialize, and on the event
            // loop that would delay every other connection it serves.
            let promise = context.eventLoop.makePromise(of: ByteBuffer.self)
            promise.completeWithTask {
                let response = await service.respond(to: request, context: requestContext)
                return await service.encoding(response, to: request, context: requestContext) {
                    Self.encode(response, requestID: request.id, maximumFrameBytes: maximumFrameBytes, logger: logger)
                }
            }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            promise.futureResult.whenSuccess { frame in
                let (handler, context) = loopBound.value
                handler.finish(context: context, frame: frame)
            }
        }
        if wrote { context.flush() }
        if !busy, pending.isEmpty, closesWhenIdle { closeAfterAnswers(context: context) }
    }

    private func finish(context: ChannelHandlerContext, frame: ByteBuffer) {
        busy = false
        guard !closing else { return }
        context.write(Self.wrapOutboundOut(frame), promise: nil)
        context.flush()
        if pending.isEmpty {
            if closesWhenIdle { closeAfterAnswers(context: context); return }
            if context.channel.isWritable { context.read() }
        } else {
            processPending(context: context)
        }
    }

    /// Writes (without flushing) the response frame, or a typed error when the
    /// answer is larger than the protocol allows.
    private func write(context: ChannelHandlerContext, requestID: UInt64, response: Service.Response) {
        let frame = Self.encode(response, requestID: requestID,
                                maximumFrameBytes: configuration.maximumResponseFrameBytes, logger: logger)
        context.write(Self.wrapOutboundOut(frame), promise: nil)
    }

    /// The response's frame, or a typed error's when the answer is larger than the
    /// protocol allows.
    private static func encode(_ response: Service.Response, requestID: UInt64, maximumFrameBytes: Int,
                               logger: Logger) -> ByteBuffer {
        var response = response
        response.id = requestID
        do {
            return try FrameEncoding.frame(response, maximumFrameBytes: maximumFrameBytes)
        } catch {
            logger.error("response could not be encoded", metadata: ["error": "\(error)"])
            let fallback = Service.Response(
                requestID: requestID,
                error: ProtocolError(.internal, "the answer is larger than the protocol allows; narrow the request"))
            // An error frame is a few dozen bytes: it always fits.
            return (try? FrameEncoding.frame(fallback, maximumFrameBytes: maximumFrameBytes)) ?? ByteBuffer()
        }
    }

    /// Answers a framing error with a typed error frame (when the peer can still
    /// read it) and closes this connection.
    private func fail(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        let protocolError = (error as? ProtocolErrorConvertible)?.protocolError
            ?? ProtocolError(.malformedFrame, "unreadable request stream")
        framingErrors.record(code: protocolError.code.name, logger: logger)
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

    /// Closes once the answers written so far have left: a close drops writes still
    /// queued, and an answer larger than the socket's buffer is still being written.
    /// (A client that never reads them is cut by the slow-reader timer.)
    private func closeAfterAnswers(context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(Self.wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).whenComplete { _ in
            loopBound.value.close(promise: nil)
        }
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
            if !busy && pending.isEmpty { closeAfterAnswers(context: context) }
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            // After ByteToMessageHandler has passed on every whole frame (an incomplete
            // one has been answered MALFORMED_FRAME and the connection is closing).
            inputClosed = true
            if !busy && pending.isEmpty { closeAfterAnswers(context: context) }
        } else if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            if !busy { close(context: context) }
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
