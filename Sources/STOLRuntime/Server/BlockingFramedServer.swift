import CSTOLSocket
import Dispatch
import Foundation
import Glibc
import Logging
import ServiceLifecycle
import STOLProtocol

/// Serves a ``StreamingFramedService`` with one thread per connection.
///
/// The import coordinator and the verifier receive file descriptors with their
/// requests, which swift-nio cannot do, and they serve a handful of connections at
/// most (one import at a time), so plain blocking I/O is both sufficient and the
/// easiest to audit in the two processes that guard the live data. Limits, error
/// frames and graceful shutdown behave as in ``NIOFramedServer``.
public final class BlockingFramedServer<Service: StreamingFramedService>: ServiceLifecycle.Service, @unchecked Sendable {
    private let service: Service
    private let source: SocketSource
    private let configuration: ServerConfiguration
    private let logger: Logger
    private let notifier: SystemdNotifier
    private let connections = DispatchGroup()
    private let openConnections: ConnectionCounter
    /// Written once on shutdown; every thread polls its read end.
    private var shutdownPipe: [Int32] = [-1, -1]

    public init(service: Service, source: SocketSource, configuration: ServerConfiguration, logger: Logger,
                notifier: SystemdNotifier = SystemdNotifier()) {
        self.service = service
        self.source = source
        self.configuration = configuration
        self.logger = logger
        self.notifier = notifier
        self.openConnections = ConnectionCounter(limit: configuration.maximumConnections)
        _ = stol_pipe(&shutdownPipe)
    }

    deinit {
        shutdownPipe.forEach { if $0 >= 0 { Glibc.close($0) } }
    }

    public func run() async throws {
        notifier.ready(status: "serving \(configuration.name)")
        let finished: @Sendable () async -> Void = {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    switch source {
                    case .accepted(let fd):
                        serveConnection(fd)
                    case .listening(let fd, _):
                        acceptLoop(fd)
                    }
                    connections.wait()
                    continuation.resume()
                }
                thread.start()
            }
        }
        await withGracefulShutdownHandler {
            await finished()
        } onGracefulShutdown: { [self] in
            notifier.stopping()
            logger.info("graceful shutdown: finishing in-flight requests")
            var byte: UInt8 = 1
            _ = write(shutdownPipe[1], &byte, 1)
        }
        logger.info("stopped", metadata: ["service": "\(configuration.name)"])
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

    private func acceptLoop(_ listener: Int32) {
        while waitReadable(listener, timeout: nil) {
            let fd = stol_accept(listener)
            if fd < 0 { continue }
            guard openConnections.acquire() else {
                refuse(fd)
                continue
            }
            connections.enter()
            let thread = Thread { [self] in
                serveConnection(fd)
                openConnections.release()
                connections.leave()
            }
            thread.start()
        }
    }

    private func refuse(_ fd: Int32) {
        let socket = makeSocket(fd)
        let refusal = Service.Response(requestID: 0, error: ProtocolError(
            .busy, "too many connections (limit \(configuration.maximumConnections)); try again"))
        try? socket.send(refusal)
        socket.close()
    }

    private func makeSocket(_ fd: Int32) -> FrameSocket {
        FrameSocket(descriptor: fd, maximumIncomingFrameBytes: configuration.maximumRequestFrameBytes,
                    maximumOutgoingFrameBytes: configuration.maximumResponseFrameBytes)
    }

    /// Serves one connection until the peer closes it, a framing error, the idle
    /// timeout, or shutdown (between requests, never in the middle of one).
    private func serveConnection(_ fd: Int32) {
        let socket = makeSocket(fd)
        defer { socket.close() }
        guard let peer = try? socket.peerCredentials() else { return }
        socket.setReceiveTimeout(configuration.idleTimeout)
        while socket.hasBufferedFrame || waitReadable(fd, timeout: configuration.idleTimeout) {
            let received: ReceivedMessage<Service.Request>
            do {
                received = try socket.receive(Service.Request.self)
            } catch {
                if case .framing(let framing) = error {
                    logger.notice("closing connection after framing error",
                                  metadata: ["code": "\(framing.protocolError.code.name)"])
                    try? socket.send(Service.Response(requestID: 0, error: framing.protocolError))
                }
                return
            }
            let request = received.message
            let context = RequestContext(peer: peer, logger: logger, receivedFileDescriptor: received.fileDescriptor)
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
