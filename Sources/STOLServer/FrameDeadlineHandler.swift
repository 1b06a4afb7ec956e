import NIOCore

/// Closes a connection whose current frame has not arrived whole within the
/// deadline of its first byte.
///
/// The idle timeout (`IdleStateHandler`) restarts with every byte, so a client
/// trickling one byte every minute into a declared 1,000-byte frame would keep
/// its connection, and its slot, for ever. This handler sits before the frame
/// decoder, follows the frame boundaries from the length prefixes (it never
/// copies or changes the bytes), and keeps at most one timer per connection.
///
/// Why one timer and not one per frame: a client pipelining small frames made a
/// timer for each (scheduled, then cancelled a few microseconds later), and after
/// such an attack perf put 71 % of the daemon's CPU in this handler and 22 % in the
/// event loop's timer queue. Now a frame left incomplete at the end of a read
/// records when it started; the one timer, when it fires, closes the connection if
/// that frame is still incomplete and past its deadline, and otherwise is armed
/// again for the frame in progress, or not at all when none is.
final class FrameDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let deadline: TimeAmount
    /// Prefix bytes seen of the current frame (0…4), its length once all 4 are in,
    /// and the body bytes still to come.
    private var prefixSeen = 0
    private var length: UInt32 = 0
    private var bodyLeft = 0
    /// When the incomplete frame in progress started (the end of the read that
    /// left it incomplete: a frame that starts and ends within one read costs no
    /// clock read), on the event loop's clock (virtual in tests); nil between frames.
    private var frameStart: NIODeadline?
    private var timer: Scheduled<Void>?

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    private var inFrame: Bool { prefixSeen > 0 }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        var index = buffer.readerIndex
        let end = buffer.writerIndex
        let frameWasInProgress = inFrame
        var framesEnded = false
        while index < end {
            if prefixSeen == 0, end - index >= 4 {  // a whole prefix: one read
                length = buffer.getInteger(at: index, as: UInt32.self)!
                index += 4
                prefixSeen = 4
                bodyLeft = Int(length)
            } else if prefixSeen < 4 {
                length = length << 8 | UInt32(buffer.getInteger(at: index, as: UInt8.self)!)
                index += 1
                prefixSeen += 1
                if prefixSeen == 4 { bodyLeft = Int(length) }
            } else {
                let take = min(bodyLeft, end - index)
                index += take
                bodyLeft -= take
            }
            if prefixSeen == 4 && bodyLeft == 0 {  // a whole frame: the next one starts afresh
                prefixSeen = 0
                length = 0
                framesEnded = true
            }
        }
        if !inFrame {
            frameStart = nil
        } else if frameStart == nil || framesEnded || !frameWasInProgress {
            frameStart = context.eventLoop.now  // a new frame left incomplete by this read
        }
        if frameStart != nil && timer == nil { arm(context, at: frameStart! + deadline) }
        context.fireChannelRead(data)
    }

    private func arm(_ context: ChannelHandlerContext, at when: NIODeadline) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: when) {
            let (handler, context) = loopBound.value
            handler.timerFired(context)
        }
    }

    private func timerFired(_ context: ChannelHandlerContext) {
        timer = nil
        guard let frameStart else { return }  // no frame in progress: no timer until the next one
        let due = frameStart + deadline
        if context.eventLoop.now >= due {
            context.close(promise: nil)  // like the idle timeout: no frame, the stream is cut
        } else {
            arm(context, at: due)  // a later frame, still within its time
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        frameStart = nil
        context.fireChannelInactive()
    }
}
