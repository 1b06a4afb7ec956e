import Glibc

/// Noticing that the other side of a Unix stream socket has gone, without reading it.
///
/// A peer that closes its end (or dies) makes the socket report `POLLRDHUP`
/// (and `POLLHUP` once both directions are shut). The import coordinator asks
/// this of the client's connection while it waits on the verifier, and the
/// verifier of the coordinator's while it checks a database, so a cancelled
/// import stops within a moment instead of running to its end.
public enum ConnectionWatch {
    /// POLLRDHUP (Linux, `_GNU_SOURCE`: Glibc's Swift module does not export it).
    static let POLLRDHUP: Int32 = 0x2000

    /// True when the peer of `fd` has closed its end; never blocks.
    public static func hasClosed(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLRDHUP), revents: 0)
        let rc = poll(&entry, 1, 0)
        guard rc > 0 else { return false }
        return entry.revents & Int16(POLLRDHUP | POLLHUP | POLLERR | POLLNVAL) != 0
    }

    /// What ``wait(readable:orClosed:timeoutMilliseconds:)`` saw.
    public enum Event: Equatable {
        case readable
        case peerClosed
        case timedOut
    }

    /// Waits until `readable` has data (or EOF) or the peer of `watched` closes its end.
    public static func wait(readable: Int32, orClosed watched: Int32, timeoutMilliseconds: Int32 = -1) -> Event {
        var entries = [pollfd(fd: readable, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: watched, events: Int16(POLLRDHUP), revents: 0)]
        while true {
            let rc = poll(&entries, 2, timeoutMilliseconds)
            if rc < 0 && errno == EINTR { continue }
            if rc <= 0 { return .timedOut }
            if entries[1].revents & Int16(POLLRDHUP | POLLHUP | POLLERR | POLLNVAL) != 0 { return .peerClosed }
            return .readable
        }
    }
}
