import CSTOLSocket
import Foundation
import Glibc
import Logging
import NIOCore
import STOLDaemon
import STOLTransport
import Synchronization

/// Accepts the connections of a listening Unix socket on a thread of its own,
/// reads each peer's credentials from the kernel (SO_PEERCRED) and hands the
/// connection to `accepted` with them, before a byte of it is read.
///
/// NIO's `ServerBootstrap` registers each accepted connection on the next loop
/// of its group, before anyone knows whose it is; a connection cannot move to
/// another loop afterwards. Accepting here lets the server put every connection
/// of one user on that user's loop (``UserEventLoops``).
///
/// The thread waits in `poll(2)` for a connection or ``stop()`` (a pipe), and
/// accepts every pending connection each time. When the process is out of
/// descriptors or memory (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) the pending
/// connection stays in the kernel's queue and the thread waits 100 ms before
/// trying again, rather than spinning on a socket that stays readable. A
/// connection the server refuses gets its error frame and its close from this
/// thread, ``refusalDelay`` after it came. It stamps
/// the daemon's heartbeat like an event loop: a stuck accept stops the watchdog's pings.
final class PeerAcceptor: Sendable {
    /// What the server does with a connection.
    enum Decision: Sendable {
        /// It took the socket (non-blocking, close-on-exec): it is the server's now.
        case served
        /// Refused: the acceptor sends this frame (a typed error) and closes the socket,
        /// ``refusalDelay`` later.
        case refused(frame: [UInt8])
    }

    /// A connection and its peer, to serve or refuse.
    typealias Accepted = @Sendable (_ socket: Int32, _ peer: PeerCredentials) -> Decision

    /// How long a refused connection waits for its error frame and its close. A
    /// refusal answered at once is an invitation to try again at once: eight users
    /// holding the daemon's 512 connections reopened each refused one 37,000 times a
    /// second when the refusal cost the daemon nothing (4× more than when it went
    /// through a channel), and their processes and the kernel's connects took the
    /// cores from everyone else (issue 33, docs/benchmarks.md §19.7).
    static var refusalDelay: Duration { .milliseconds(100) }
    /// Refused connections held at once; more are answered and closed at once (each
    /// holds a descriptor).
    static var maximumHeldRefusals: Int { 128 }

    private struct HeldRefusal {
        let socket: Int32
        let frame: [UInt8]
        let due: ContinuousClock.Instant
    }

    private let listeningSocket: Int32
    /// The pipe ``stop()`` writes to (1) and the thread waits on (0).
    private let wake: (read: Int32, write: Int32)
    private let logger: Logger
    private let accepted: Accepted
    private let heartbeat: Heartbeat?
    private let stopping = Atomic<Bool>(false)
    /// Succeeded once the thread has ended and closed the listening socket.
    let finished: EventLoopPromise<Void>

    /// Takes `listeningSocket` (closed when the thread ends, as NIO closes the
    /// socket it is given); `finished` is completed on `finishedOn`.
    init(listeningSocket: Int32, finishedOn eventLoop: any EventLoop, heartbeat: Heartbeat?, logger: Logger,
         accepted: @escaping Accepted) throws {
        var pipe: [Int32] = [-1, -1]
        guard stol_pipe(&pipe) == 0 else { throw IOError(errnoCode: errno, reason: "pipe") }
        // accept must not block: the pending connection seen by poll may be gone
        // (its client gave up) by the time it is taken.
        guard Self.setNonBlocking(listeningSocket) else {
            let code = errno
            close(pipe[0])
            close(pipe[1])
            throw IOError(errnoCode: code, reason: "fcntl(O_NONBLOCK) on the listening socket")
        }
        self.listeningSocket = listeningSocket
        self.wake = (pipe[0], pipe[1])
        self.heartbeat = heartbeat
        self.logger = logger
        self.accepted = accepted
        finished = eventLoop.makePromise(of: Void.self)
    }

    /// Starts the accepting thread.
    func start() {
        let slot = heartbeat?.register()
        let thread = Thread(named: "stol.accept") { [self] in
            run(heartbeatSlot: slot)
        }
        thread.start()
    }

    /// Stops accepting: the thread ends and closes the listening socket
    /// (``finished``). Idempotent; returns at once.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    private func run(heartbeatSlot: Int?) {
        var held: [HeldRefusal] = []
        defer {
            held.forEach(Self.answer)
            close(listeningSocket)
            close(wake.read)
            close(wake.write)
            finished.succeed(())
        }
        let period = heartbeat.map { Int32(clamping: $0.period.components.seconds * 1000
                                           + $0.period.components.attoseconds / 1_000_000_000_000_000) } ?? -1
        var backOff = false
        var lastWarning: ContinuousClock.Instant?
        while !stopping.load(ordering: .acquiring) {
            if let heartbeatSlot { heartbeat?.beat(heartbeatSlot) }
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: listeningSocket, events: Int16(POLLIN), revents: 0)]
            // While backing off, only a stop is waited for; a held refusal falls due.
            var timeout = backOff ? 100 : period
            if let due = held.first?.due {
                let left = max(0, Int32(((due - .now) / .milliseconds(1)).rounded(.up)))
                timeout = timeout < 0 ? left : min(timeout, left)
            }
            let ready = poll(&fds, backOff ? 1 : 2, timeout)
            let now = ContinuousClock.now
            while let first = held.first, first.due <= now { Self.answer(held.removeFirst()) }
            if ready < 0 { continue }  // EINTR: poll's only error on valid descriptors
            if fds[0].revents != 0 { return }
            if backOff {
                backOff = false  // (a refusal falling due may end it early: the next accept backs off again)
                continue
            }
            guard fds[1].revents != 0, let failure = acceptPending(heartbeatSlot: heartbeatSlot, held: &held) else { continue }
            backOff = true
            // One line a minute, however long the shortage lasts.
            if lastWarning.map({ .now - $0 > .seconds(60) }) ?? true {
                lastWarning = .now
                logger.warning("cannot accept connections now; retrying every 100 ms",
                               metadata: ["errno": "\(failure)"])
            }
        }
    }

    /// Accepts until none is pending; the errno of a failure to back off on, else nil.
    /// Stamps the heartbeat as it goes: a flood of connections keeps it here, serving.
    private func acceptPending(heartbeatSlot: Int?, held: inout [HeldRefusal]) -> Int32? {
        var accepted = 0
        while !stopping.load(ordering: .acquiring) {
            accepted += 1
            if accepted % 256 == 0, let heartbeatSlot { heartbeat?.beat(heartbeatSlot) }
            let socket = stol_accept(listeningSocket)
            if socket >= 0 {
                guard Self.setNonBlocking(socket), let peer = try? PeerCredentials(socket: socket) else {
                    close(socket)  // gone already, or not a Unix socket's peer: nobody to serve
                    continue
                }
                if case .refused(let frame) = self.accepted(socket, peer) {
                    let refusal = HeldRefusal(socket: socket, frame: frame, due: .now + Self.refusalDelay)
                    if held.count < Self.maximumHeldRefusals { held.append(refusal) } else { Self.answer(refusal) }
                }
                continue
            }
            switch errno {
            case EAGAIN, EWOULDBLOCK:
                return nil
            case ECONNABORTED, EPROTO:
                continue
            default:
                // Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): the
                // connection waits in the kernel's queue meanwhile.
                return errno
            }
        }
        return nil
    }

    private static func setNonBlocking(_ descriptor: Int32) -> Bool {
        let flags = fcntl(descriptor, F_GETFL)
        return flags >= 0 && fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0
    }

    /// Sends a refused connection its error frame and closes it: a new socket's send
    /// buffer is empty, so the few dozen bytes go at once or not at all.
    private static func answer(_ refusal: HeldRefusal) {
        _ = refusal.frame.withUnsafeBytes { send(refusal.socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        close(refusal.socket)
    }
}
