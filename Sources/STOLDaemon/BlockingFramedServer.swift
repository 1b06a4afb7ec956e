import CSTOLSocket
import Dispatch
import Foundation
import Glibc
import Logging
import STOLProtocol
import STOLTransport
import Synchronization

/// Serves a ``StreamingFramedService`` with one thread per connection.
///
/// The import coordinator and the verifier receive file descriptors with their
/// requests, which swift-nio cannot do, and they serve a handful of connections at
/// most (one import at a time), so plain blocking I/O is both sufficient and the
/// easiest to audit in the two processes that guard the live data. Limits, error
/// frames and graceful shutdown behave as in `NIOFramedServer`.
///
/// This module has no swift-service-lifecycle and no libsystemd, so that the
/// verifier, which calls ``serve()`` itself, links neither. A daemon that runs it
/// as a service of its group (the import coordinator) gets `run()` from STOLServer
/// (`BlockingFramedServer+Service.swift`), which tells systemd READY and STOPPING.
public final class BlockingFramedServer<Service: StreamingFramedService>: @unchecked Sendable {
    private let service: Service
    private let source: SocketSource
    package let configuration: ServerConfiguration
    package let logger: Logger
    /// Stamped by the accept loop when systemd watches the daemon (nil: no watchdog).
    private let heartbeat: Heartbeat?
    /// Set by the test hang hook (``ServingLoopHangHook``): the accept loop blocks for good.
    private let hangRequested = Atomic<Bool>(false)
    private let connections = DispatchGroup()
    private let openConnections: ConnectionLimiter
    private let framingErrors = RateLimitedLog.framingErrors()
    /// Written once on shutdown; every thread polls its read end.
    private var shutdownPipe: [Int32] = [-1, -1]

    public init(service: Service, source: SocketSource, configuration: ServerConfiguration, logger: Logger,
                heartbeat: Heartbeat? = nil) {
        self.service = service
        self.source = source
        self.configuration = configuration
        self.logger = logger
        self.heartbeat = heartbeat
        self.openConnections = ConnectionLimiter(limit: configuration.maximumConnections,
                                                 perUserLimit: configuration.maximumConnectionsPerUser)
        _ = stol_pipe(&shutdownPipe)
    }

    deinit {
        shutdownPipe.forEach { if $0 >= 0 { Glibc.close($0) } }
    }

    /// Serves on the calling thread until the source is done (the one connection
    /// systemd accepted, or shutdown of a listening socket) and every connection
    /// has finished. The verifier calls this directly: it sandboxes itself first
    /// and must not start threads (Swift's task pool) before that.
    public func serve() {
        serve(beforeIdleExit: {})
    }

    /// ``serve()``, calling `beforeIdleExit` when the accept loop ends for the idle
    /// exit (STOLServer's `run()` tells systemd STOPPING=1 there).
    package func serve(beforeIdleExit: () -> Void) {
        switch source {
        case .accepted(let fd):
            serveConnection(fd)
        case .listening(let fd, _):
            acceptLoop(fd, beforeIdleExit: beforeIdleExit)
        }
        connections.wait()
        // At stop (shutdown or the idle exit), once every connection is done, what was
        // counted is logged, not lost with the process.
        ([framingErrors] + service.notices).forEach { $0.flush(logger: logger) }
    }

    /// Stops accepting and ends each connection between requests (what SIGTERM
    /// does under `run()`); ``serve()`` returns once they have finished.
    public func shutdown() {
        var byte: UInt8 = 1
        _ = write(shutdownPipe[1], &byte, 1)
    }

    private var isShuttingDown: Bool {
        var pollfd = Glibc.pollfd(fd: shutdownPipe[0], events: Int16(POLLIN), revents: 0)
        return poll(&pollfd, 1, 0) > 0
    }

    /// Waits until `fd` is readable (true) or shutdown/idle timeout happens (false).
    private func waitReadable(_ fd: Int32, timeout: Duration?) -> Bool {
        var fds = [Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                   Glibc.pollfd(fd: shutdownPipe[0], events: Int16(POLLIN), revents: 0)]
        let milliseconds = timeout.map {
            Int32(clamping: $0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000)
        } ?? -1
        while true {
            let rc = poll(&fds, 2, milliseconds)
            if rc < 0 && errno == EINTR { continue }
            if rc <= 0 { return false }
            if fds[1].revents != 0 { return false }
            return fds[0].revents != 0
        }
    }

    /// Accepts until shutdown, or until the idle exit. Under a watchdog the loop
    /// wakes at least once a heartbeat period and stamps the ``Heartbeat``, so the pings stop
    /// if this thread stops (a connection's own work runs on its own thread and
    /// never delays them).
    private func acceptLoop(_ listener: Int32, beforeIdleExit: () -> Void) {
        let slot = heartbeat?.register()
        let hangHook = ServingLoopHangHook.installIfRequested(logger: logger) { [self] in
            hangRequested.store(true, ordering: .relaxed)
        }
        defer { hangHook?.cancel() }
        let notices = [framingErrors] + service.notices
        let wake = [heartbeat?.period, configuration.idleExit.map { min($0 / 4, .seconds(1)) },
                    RateLimitedLog.window].compactMap { $0 }.min()
        while true {
            if let heartbeat, let slot { heartbeat.beat(slot) }
            while hangRequested.load(ordering: .relaxed) { sleep(3600) }
            notices.forEach { $0.flushIfDue(logger: logger) }
            guard !isShuttingDown else { return }
            if let idleExit = configuration.idleExit, let idle = openConnections.idleFor, idle >= idleExit {
                logger.info("no connection for the idle period: exiting (socket activation starts it again)",
                            metadata: ["idle_exit": "\(idleExit)"])
                beforeIdleExit()
                return
            }
            guard waitReadable(listener, timeout: wake) else {
                if wake != nil && !isShuttingDown { continue }  // a timeout for the heartbeat or the idle check
                return
            }
            let fd = stol_accept(listener)
            if fd < 0 { continue }
            guard let peer = try? PeerCredentials(socket: fd) else {
                _ = Glibc.close(fd)
                continue
            }
            if let refusal = openConnections.acquire(uid: peer.uid) {
                refuse(fd, refusal)
                continue
            }
            connections.enter()
            let thread = Thread(named: "stol.conn") { [self] in
                serveConnection(fd, peer: peer)
                openConnections.release(uid: peer.uid)
                connections.leave()
            }
            thread.start()
        }
    }

    private func refuse(_ fd: Int32, _ error: ProtocolError) {
        let socket = makeSocket(fd)
        try? socket.send(Service.Response(requestID: 0, error: error))
        socket.close()
    }

    private func makeSocket(_ fd: Int32) -> FrameSocket {
        FrameSocket(descriptor: fd, maximumIncomingFrameBytes: configuration.maximumRequestFrameBytes,
                    maximumOutgoingFrameBytes: configuration.maximumResponseFrameBytes)
    }

    /// Serves one connection until the peer closes it, a framing error, the idle
    /// timeout, or shutdown (between requests, never in the middle of one).
    private func serveConnection(_ fd: Int32, peer known: PeerCredentials? = nil) {
        let socket = makeSocket(fd)
        defer { socket.close() }
        guard let peer = known ?? (try? socket.peerCredentials()) else { return }
        socket.setReceiveTimeout(configuration.idleTimeout)
        socket.frameDeadline = configuration.frameDeadline
        while socket.hasBufferedFrame || waitReadable(fd, timeout: configuration.idleTimeout) {
            let received: ReceivedMessage<Service.Request>
            do {
                received = try socket.receive(Service.Request.self)
            } catch {
                if case .framing(let framing) = error {
                    framingErrors.record(code: framing.protocolError.code.name, logger: logger)
                    try? socket.send(Service.Response(requestID: 0, error: framing.protocolError))
                }
                return
            }
            let request = received.message
            let context = RequestContext(peer: peer, logger: logger, receivedFileDescriptor: received.fileDescriptor,
                                         connectionDescriptor: fd)
            var peerGone = false
            service.respond(to: request, context: context) { response in
                var response = response
                response.id = request.id
                do {
                    try socket.send(response)
                } catch {
                    peerGone = true
                    throw error
                }
            }
            received.fileDescriptor?.close()
            if peerGone || isShuttingDown { return }
        }
    }
}
