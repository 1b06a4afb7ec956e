import NIOCore

/// Closes a connection whose current frame has not arrived whole within the
/// deadline of its first byte.
///
/// The idle timeout (`IdleStateHandler`) restarts with every byte, so a client
/// trickling one byte every minute into a declared 1,000-byte frame would keep
/// its connection, and its slot, for ever. This handler sits before the frame
/// decoder, follows the frame boundaries from the length prefixes (it never
/// copies or changes the bytes), and arms one timer per incomplete frame.
final class FrameDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let deadline: TimeAmount
    /// Prefix bytes seen of the current frame (0…4), its length once all 4 are in,
    /// and the body bytes still to come.
    private var prefixSeen = 0
    private var length: UInt32 = 0
    private var bodyLeft = 0
    private var timer: Scheduled<Void>?

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    private var inFrame: Bool { prefixSeen > 0 }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        var view = buffer.readableBytesView[...]
        while !view.isEmpty {
            if prefixSeen < 4 {
                if prefixSeen == 0 { arm(context) }
                length = length << 8 | UInt32(view.first!)
                view = view.dropFirst()
                prefixSeen += 1
                if prefixSeen == 4 { bodyLeft = Int(length) }
            } else {
                let take = min(bodyLeft, view.count)
                view = view.dropFirst(take)
                bodyLeft -= take
            }
            if prefixSeen == 4 && bodyLeft == 0 {  // a whole frame: the next one starts afresh
                prefixSeen = 0
                length = 0
                timer?.cancel()
                timer = nil
            }
        }
        context.fireChannelRead(data)
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: deadline) {
            loopBound.value.close(promise: nil)  // like the idle timeout: no frame, the stream is cut
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }
}
