import NIOCore
import Synchronization

/// The connections a server has open, told to finish when it stops: each gets a
/// `ChannelShouldQuiesceEvent` (``FramedRequestHandler`` answers what is in flight,
/// then closes), and ``quiesce()`` returns once the last has closed. What
/// NIOExtras' `ServerQuiescingHelper` does for a server channel's children, for
/// the connections ``PeerAcceptor`` accepts (they have no server channel).
final class OpenConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var quiescing = false
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Tracks `channel` until it closes. One added after ``quiesce()`` began is closed at once.
    func add(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let admitted = state.withLock { state -> Bool in
            guard !state.quiescing else { return false }
            state.channels[key] = channel
            return true
        }
        guard admitted else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { [self] _ in
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.channels[key] = nil
                guard state.quiescing, state.channels.isEmpty else { return [] }
                defer { state.drained = [] }
                return state.drained
            }
            waiters.forEach { $0.resume() }
        }
    }

    /// Tells every open connection to finish and close; returns once all have.
    func quiesce() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let channels = state.withLock { state -> [any Channel]? in
                state.quiescing = true
                guard !state.channels.isEmpty else { return nil }
                state.drained.append(continuation)
                return Array(state.channels.values)
            }
            guard let channels else { return continuation.resume() }
            for channel in channels {
                channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            }
        }
    }
}
