import NIOCore
import STOLDaemon
import Synchronization

/// One admitted connection from its admission, on the accepting thread, to its
/// close: what it holds (its place in the ``ConnectionLimiter``, its user's loop),
/// given back once whichever of its close and a failed registration comes first;
/// and a close the limiter asks for (to make room for another user) before the
/// connection's channel exists, carried out as soon as it does.
///
/// Admission comes before the channel so that a refused connection costs the daemon
/// no channel at all (``NIOFramedServer``): eight users holding the daemon's 512
/// connections reopen each one it refuses, thousands of times a second.
final class ConnectionSlot: Sendable {
    private struct State {
        var admission: ConnectionLimiter.Admission?
        var loop: UserEventLoops.Ticket?
        var channel: (any Channel)?
        var closeRequested = false
        var released = false
    }

    private let state = Mutex(State())
    private let limiter: ConnectionLimiter

    /// Made before the admission, so that the close the limiter may ask for later
    /// can name it.
    init(limiter: ConnectionLimiter) {
        self.limiter = limiter
    }

    /// The connection was admitted, and goes on `loop`.
    func admitted(_ admission: ConnectionLimiter.Admission, on loop: UserEventLoops.Ticket) {
        state.withLock { state in
            state.admission = admission
            state.loop = loop
        }
    }

    /// The connection's channel, registered: closed at once if a close came first.
    func attach(_ channel: any Channel) {
        let closeNow = state.withLock { state -> Bool in
            state.channel = channel
            return state.closeRequested
        }
        if closeNow { channel.close(promise: nil) }
    }

    /// Closes the connection, now or as soon as its channel exists.
    func close() {
        let channel = state.withLock { state -> (any Channel)? in
            if state.channel == nil { state.closeRequested = true }
            return state.channel
        }
        channel?.close(promise: nil)
    }

    /// The connection has closed, or was never registered: its place and its loop are
    /// given back (once, however many times this is called).
    func release() {
        let held = state.withLock { state -> (ConnectionLimiter.Admission?, UserEventLoops.Ticket?) in
            guard !state.released else { return (nil, nil) }
            state.released = true
            state.channel = nil
            return (state.admission, state.loop)
        }
        if let admission = held.0 { limiter.release(admission) }
        held.1?.release()
    }
}
