import Logging
import NIOCore
import NIOExtras
import STOLDaemon
import STOLProtocol
import STOLTransport

/// The per-connection NIO handler of ``NIOFramedServer``: cuts request frames,
/// runs the service, writes response frames in request order.
///
/// Requests are answered one at a time per connection, each on its user's lane
/// (``UserLanes``: the event loop only reads, cuts frames and writes; a short frame
/// is decoded here to learn its work class, a frame longer than any lookup
/// (``UserLanes/longFrameBytes``) is bulk work decoded on the lane), its answer encoded there
/// too; while one is in flight, reading stops (backpressure) and later frames
/// wait. A request waits for one of its lane's slots (``UserLanes/Lane/slots(for:)``:
/// a user's requests in progress at once, whatever its number of connections), and
/// bulk work then for one of the daemon's bulk slots (``RequestSlots/bulk()``). A connection
/// starts a request only while the daemon's unsent answers, in
/// all and of its user, are within their bounds (``OutputBudget``), and reads no
/// further while its own unsent answers are over the channel's high water mark; a
/// connection that leaves its answers unread for
/// ``ServerConfiguration/slowReaderTimeout`` is closed. When the peer closes, the
/// request in flight is cancelled (its work checks `Task.isCancelled`) and the
/// frames it sent after it are dropped: nobody waits for them. A framing error is
/// answered with a typed error frame and the connection is closed; other
/// connections and the daemon carry on. On `ChannelShouldQuiesceEvent` (graceful
/// shutdown) the in-flight request is finished and answered, then the connection
/// closes; so it does when the client ends its side of the stream
/// (`shutdown(SHUT_WR)`): every request sent before the end is answered first, in order.
final class FramedRequestHandler<Service: FramedService>: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let service: Service
    private let configuration: ServerConfiguration
    private let logger: Logger
    private let peer: PeerCredentials
    private let framingErrors: RateLimitedLog
    private let lanes: UserLanes
    private let budget: OutputBudget
    private let bulkSlots: RequestSlots
    /// The user's lane, held while the connection is open.
    private var lane: UserLanes.Lane?
    /// The user's unsent answers (``OutputBudget/Account``), held while the connection is open.
    private var account: OutputBudget.Account?
    /// The bytes read and not yet taken as requests. Frames are cut off it one at a
    /// time, when the connection is ready for its next request
    /// (``LengthPrefixedFrameDecoder/nextFrame(in:maximumFrameBytes:)``), not all at
    /// once as they arrive: one 64 KiB read of pipelined `list` requests is 6,000
    /// frames, and 512 connections of 8 users each held theirs as decoded buffers
    /// (favoritesd: about 130 of its 305 MiB, issue 33). Reading stops while a whole
    /// frame waits here, so this holds at most one read and the frame it completes.
    private var unread = ByteBuffer()
    private var slowReaderTimer: Scheduled<Void>?
    /// The request being answered on the lane, cancelled if the peer leaves.
    private var inFlight: Task<Void, Never>?
    private var busy = false
    /// Waiting for the output budget to have room (``OutputBudget/whenRoom(for:_:)``).
    private var waitingForRoom = false
    /// That wait's ticket, cancelled if the peer leaves first.
    private var roomTicket: UInt64?
    private var closing = false
    /// Answers written to the channel and not yet to the socket. The high water mark
    /// counts their bytes, but a small answer costs the daemon far more than its bytes
    /// (its buffer, its place in the write queue): 64 connections of one user
    /// pipelining `fav count` without reading queued millions of 16-byte answers under a
    /// 1 MiB mark and grew favoritesd to 236 MiB. A connection starts no request while
    /// ``maximumUnsentAnswers`` of its answers wait; it is then idle, and its idle timeout cuts it.
    private var unsentAnswers = 0
    static var maximumUnsentAnswers: Int { 16 }
    /// What one unsent answer costs beyond its bytes, charged to the ``OutputBudget`` with them.
    static var answerOverheadBytes: Int { 512 }
    private var quiescing = false
    /// ``processPending(context:)`` is running, and has been asked for another pass meanwhile.
    private var processing = false
    private var passRequested = false
    /// The client has ended its side of the stream (`ChannelEvent.inputClosed`).
    private var inputClosed = false
    /// A whole frame waits in ``unread`` (or a length over the limit, which taking it
    /// answers with the typed error).
    private var hasWholeFrame: Bool {
        LengthPrefixedFrameDecoder.hasFrame(in: unread, maximumFrameBytes: configuration.maximumRequestFrameBytes)
    }

    /// Close once nothing is in flight or waiting: on graceful shutdown, or after the client's end of stream.
    private var closesWhenIdle: Bool { quiescing || inputClosed }

    init(service: Service, configuration: ServerConfiguration, peer: PeerCredentials, logger: Logger,
         lanes: UserLanes, budget: OutputBudget, bulkSlots: RequestSlots,
         framingErrors: RateLimitedLog = RateLimitedLog.framingErrors()) {
        self.service = service
        self.configuration = configuration
        self.peer = peer
        self.logger = logger
        self.lanes = lanes
        self.budget = budget
        self.bulkSlots = bulkSlots
        self.framingErrors = framingErrors
    }

    func handlerAdded(context: ChannelHandlerContext) {
        lane = lanes.retain(peer.uid)
        account = budget.open(peer.uid)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        var bytes = Self.unwrapInboundIn(data)
        if unread.readableBytes == 0 {
            unread = bytes  // no copy: the read's own buffer
        } else {
            if unread.readerIndex > 0 { unread.discardReadBytes() }
            unread.writeBuffer(&bytes)  // the rest of a frame begun in an earlier read
        }
        processPending(context: context)
    }

    func read(context: ChannelHandlerContext) {
        // Backpressure: no new reads while a request is in flight, while answers wait
        // unsent, or while a whole request waits for its turn.
        if !busy && context.channel.isWritable && !hasWholeFrame { context.read() }
    }

    /// The peer is gone: its request in flight is cancelled and the frames it sent
    /// after it are dropped, so that no work outlives its client.
    func channelInactive(context: ChannelHandlerContext) {
        abandon()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            slowReaderTimer?.cancel()
            slowReaderTimer = nil
            processPending(context: context)
            if !busy && !closing && !hasWholeFrame { context.read() }
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
        abandon()
    }

    /// Cancels the request in flight, drops the waiting frames and lets the lane go.
    private func abandon() {
        closing = true
        unread = ByteBuffer()
        inFlight?.cancel()
        if let roomTicket {
            self.roomTicket = nil
            budget.cancel(roomTicket)
        }
        if let lane {
            self.lane = nil
            lanes.release(lane)
        }
        if let account {
            self.account = nil
            budget.close(account)
        }
    }

    /// Answers pending requests in order, one at a time, each on the user's lane or
    /// inline. A pass that answers inline goes on to the next frame in a loop, not by
    /// calling itself: the answer's write (and its completion, when the socket takes it
    /// at once) asks for the next pass, and one read of 64 KiB holds 6,000 pipelined
    /// `fav count` frames; answered by recursion they overflowed the event loop's stack
    /// (favoritesd killed by SIGSEGV under eight users pipelining, issue 33). After
    /// ``inlineAnswersPerTurn`` inline answers the loop's other connections get a turn.
    private func processPending(context: ChannelHandlerContext) {
        guard !processing else {
            passRequested = true  // the running pass goes round once more
            return
        }
        processing = true
        defer { processing = false }
        var inlineAnswers = 0
        repeat {
            passRequested = false
            if answerNext(context: context) {
                inlineAnswers += 1
                if inlineAnswers >= Self.inlineAnswersPerTurn && passRequested {
                    let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                    context.eventLoop.execute {
                        let (handler, context) = loopBound.value
                        handler.processPending(context: context)
                    }
                    return
                }
            }
        } while passRequested
    }

    /// Inline answers one pass of ``processPending(context:)`` gives before the event
    /// loop's other connections get a turn.
    static var inlineAnswersPerTurn: Int { 64 }

    /// Starts the next request, if one waits and may start: true when it was answered
    /// inline (written already: the next may start at once).
    private func answerNext(context: ChannelHandlerContext) -> Bool {
        guard !busy, !closing, !waitingForRoom, context.channel.isWritable, unsentAnswers < Self.maximumUnsentAnswers,
              let lane, let account, hasWholeFrame else {
            if !busy, !hasWholeFrame, closesWhenIdle { closeAfterAnswers(context: context) }
            return false
        }
        guard budget.hasRoom(for: account) else {
            // The daemon holds as many unsent answers as it may (in all, or of this
            // user): start nothing until some are written.
            waitingForRoom = true
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            roomTicket = budget.whenRoom(for: account) {
                eventLoop.execute {
                    let (handler, context) = loopBound.value
                    handler.waitingForRoom = false
                    handler.roomTicket = nil
                    handler.processPending(context: context)
                }
            }
            return false
        }
        let pending: PendingRequest
        let requested: WorkClass
        do {
            guard let frame = try LengthPrefixedFrameDecoder.nextFrame(
                in: &unread, maximumFrameBytes: configuration.maximumRequestFrameBytes) else { return false }
            if frame.readableBytes > UserLanes.longFrameBytes {
                // Bulk work from its size alone, decoded on the user's bulk lane: decoding a
                // 64 KiB batch here is event-loop work that no user's priority or meter sees
                // (a merge of 2,000 favourites on 8 connections spent half of favoritesd's
                // CPU decoding on the event loops, issue 33).
                pending = .frame(frame)
                requested = .bulk
            } else {
                let request = try FrameEncoding.decode(Service.Request.self, from: frame)
                pending = .decoded(request)
                requested = service.workClass(of: request)
            }
        } catch {
            fail(context: context, error: error)
            return false
        }
        busy = true
        let requestContext = RequestContext(peer: peer, logger: logger)
        // A heavy user's lookups are bulk work (``UserLanes/Lane/workClass(for:)``), never inline.
        let work = lane.workClass(for: requested)
        if work == .interactive, case .decoded(let request) = pending,
           let frame = answerInline(request, context: requestContext, lane: lane) {
            finish(context: context, frame: frame)
            return true
        }
        let service = self.service
        let lanes = self.lanes
        let maximumFrameBytes = configuration.maximumResponseFrameBytes
        let logger = self.logger
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        // The request holds the lane too: its threads end only after it has.
        lanes.retain(lane)
        // The answer is encoded where it was made, on the user's lane: a 50,000-node
        // subtree or a 1,000-lineage batch takes milliseconds to serialize.
        let finish: @Sendable (Outcome) -> Void = { outcome in
            eventLoop.execute {
                let (handler, context) = loopBound.value
                switch outcome {
                case .answer(let frame): handler.finish(context: context, frame: frame)
                case .undecodable(let error):
                    handler.busy = false
                    handler.inFlight = nil
                    handler.fail(context: context, error: error)
                }
            }
        }
        inFlight = Self.start(pending, on: lane.executor(for: work), laneSlots: lane.slots(for: work),
                              bulkSlots: work == .bulk ? bulkSlots : nil, budget: budget, account: account, service: service,
                              context: requestContext, maximumFrameBytes: maximumFrameBytes, logger: logger) { outcome in
            lanes.release(lane)
            finish(outcome)
        }
        return false
    }

    /// The answer made here, on the event loop, when the service answers the request
    /// inline (``FramedService/respondInline(to:context:)``: microseconds of work that
    /// waits for nothing) and its user is not heavy (``LaneMeter``): two wakeups on
    /// the request's path instead of four, each of which a busy machine may delay by
    /// a tick (docs/benchmarks.md §19.6). Its CPU is counted on the user's meter like
    /// lane work, so a user looping on such requests turns heavy and goes back to its
    /// lanes, where the kernel weighs it against the others.
    private func answerInline(_ request: Service.Request, context: RequestContext, lane: UserLanes.Lane) -> ByteBuffer? {
        let started = LaneMeter.threadCPUSeconds()
        guard let response = service.respondInline(to: request, context: context) else { return nil }
        let frame = Self.encode(response, requestID: request.id, maximumFrameBytes: configuration.maximumResponseFrameBytes,
                                logger: logger)
        lane.meter.add(LaneMeter.threadCPUSeconds() - started)
        lanes.countInline()
        return frame
    }

    /// A request as the event loop hands it to a lane: decoded, or a long frame to decode there.
    enum PendingRequest: Sendable {
        case decoded(Service.Request)
        case frame(ByteBuffer)
    }

    /// What a lane hands back: the answer's frame (nil: cancelled, its peer gone), or the
    /// error of a frame that could not be decoded there (answered as a framing error).
    enum Outcome: Sendable {
        case answer(ByteBuffer?)
        case undecodable(ProtocolError)
    }

    /// Answers `request` on `executor` (a lane) once it holds one of `laneSlots`,
    /// the budget has room for its user's answer and, for bulk work, it holds one of
    /// `bulkSlots`; then hands the frame to `done` (nil when cancelled meanwhile: its
    /// peer left while it waited). The room is checked again here, where at most one
    /// bulk and four lookups of a user pass at once: the connection's check before
    /// the request queued reserved nothing (``OutputBudget/room(for:)``).
    private static func start(_ pending: PendingRequest, on executor: LaneExecutor, laneSlots: RequestSlots,
                              bulkSlots: RequestSlots?, budget: OutputBudget, account: OutputBudget.Account,
                              service: Service, context: RequestContext,
                              maximumFrameBytes: Int, logger: Logger,
                              done: @escaping @Sendable (Outcome) -> Void) -> Task<Void, Never> {
        // The names' build after a start waits for a pause in the users' requests (a
        // long frame, decoded on the lane, is a batch: it counts).
        let active = if case .decoded(let request) = pending { service.holdsBackIdleWork(request) } else { true }
        if active { RequestActivity.begin() }
        return Task(executorPreference: executor) {
            defer { if active { RequestActivity.end() } }
            guard await laneSlots.acquire() else { return done(.answer(nil)) }
            guard await budget.room(for: account) else {
                laneSlots.release()
                return done(.answer(nil))
            }
            if let bulkSlots, !(await bulkSlots.acquire()) {
                laneSlots.release()
                return done(.answer(nil))
            }
            let request: Service.Request
            switch pending {
            case .decoded(let decoded):
                request = decoded
            case .frame(let frame):
                do {
                    request = try FrameEncoding.decode(Service.Request.self, from: frame)
                } catch {
                    bulkSlots?.release()
                    laneSlots.release()
                    return done(.undecodable(Self.framingError(error)))
                }
            }
            let frame = await answer(request, service: service, context: context, maximumFrameBytes: maximumFrameBytes, logger: logger)
            bulkSlots?.release()
            laneSlots.release()
            done(.answer(frame))
        }
    }

    /// The answer's frame, made and encoded on the lane; nil when the request was
    /// cancelled (its peer left) before or while it was answered.
    private static func answer(_ request: Service.Request, service: Service, context: RequestContext,
                               maximumFrameBytes: Int, logger: Logger) async -> ByteBuffer? {
        guard !Task.isCancelled else { return nil }
        let response = await service.respond(to: request, context: context)
        guard !Task.isCancelled else { return nil }
        return encode(response, requestID: request.id, maximumFrameBytes: maximumFrameBytes, logger: logger)
    }

    /// Writes the answer (nil: cancelled, its peer gone) and goes on with the next request.
    private func finish(context: ChannelHandlerContext, frame: ByteBuffer?) {
        busy = false
        inFlight = nil
        guard !closing, let frame, let account else { return }
        // Counted until it has left for the socket (or the connection has gone).
        let bytes = frame.readableBytes + Self.answerOverheadBytes, budget = self.budget
        budget.charge(account, bytes)
        unsentAnswers += 1
        let written = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in
            budget.release(account, bytes)
            let (handler, context) = loopBound.value
            handler.unsentAnswers -= 1
            if handler.unsentAnswers == Self.maximumUnsentAnswers - 1 { handler.processPending(context: context) }
        }
        context.write(Self.wrapOutboundOut(frame), promise: written)
        context.flush()
        if !hasWholeFrame {
            if closesWhenIdle { closeAfterAnswers(context: context); return }
            if context.channel.isWritable { context.read() }
        } else {
            processPending(context: context)
        }
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
        let protocolError = Self.framingError(error)
        framingErrors.record(code: protocolError.code.name, logger: logger)
        let response = Service.Response(requestID: 0, error: protocolError)
        closing = true
        unread = ByteBuffer()
        if let frame = try? FrameEncoding.frame(response, maximumFrameBytes: configuration.maximumResponseFrameBytes) {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(Self.wrapOutboundOut(frame)).whenComplete { _ in
                loopBound.value.close(promise: nil)
            }
        } else {
            context.close(promise: nil)
        }
    }

    /// The typed error a framing or decoding failure is answered with.
    private static func framingError(_ error: any Error) -> ProtocolError {
        (error as? ProtocolErrorConvertible)?.protocolError ?? ProtocolError(.malformedFrame, "unreadable request stream")
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
            if !busy && !hasWholeFrame { closeAfterAnswers(context: context) }
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            // The stream has ended: the whole frames still unread are answered, in
            // order, unless it ends within a frame (or one is over the limit), which is
            // answered MALFORMED_FRAME (or FRAME_TOO_LARGE) at once, and the connection closes.
            var rest = unread
            do {
                while try LengthPrefixedFrameDecoder.nextFrame(
                    in: &rest, maximumFrameBytes: configuration.maximumRequestFrameBytes) != nil {}
                if rest.readableBytes > 0 { throw FramingError.truncatedFrame(receivedBytes: rest.readableBytes) }
            } catch {
                fail(context: context, error: error)
                return
            }
            inputClosed = true
            if !busy && !hasWholeFrame { closeAfterAnswers(context: context) }
        } else if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            if !busy { close(context: context) }
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
