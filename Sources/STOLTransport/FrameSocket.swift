import CSTOLSocket
import Glibc
import NIOCore
import STOLProtocol
import SwiftProtobuf

/// Why a blocking framed exchange failed.
public enum TransportError: Error, Equatable, CustomStringConvertible {
    /// Nothing listens at `path` (ENOENT, ECONNREFUSED) or it may not be used (EACCES).
    case connect(path: String, errno: Int32)
    case send(errno: Int32)
    case receive(errno: Int32)
    /// The peer closed the connection between frames.
    case closedByPeer
    case timedOut
    case framing(FramingError)
    case encoding(String)

    /// The connection ended under the exchange: closed or reset by the other side
    /// (a daemon that exited or restarted), not refused, timed out or malformed.
    public var isConnectionLost: Bool {
        switch self {
        case .closedByPeer: true
        case .send(let code), .receive(let code): code == ECONNRESET || code == EPIPE || code == ECONNABORTED
        default: false
        }
    }

    public var description: String {
        switch self {
        case .connect(let path, let code): "cannot connect to \(path): \(String(cString: strerror(code)))"
        case .send(let code): "cannot send: \(String(cString: strerror(code)))"
        case .receive(let code): "cannot receive: \(String(cString: strerror(code)))"
        case .closedByPeer: "the other side closed the connection"
        case .timedOut: "timed out waiting for the other side"
        case .framing(let error): "\(error.protocolError)"
        case .encoding(let detail): "cannot encode the message: \(detail)"
        }
    }
}

/// A message read off a ``FrameSocket``, with the descriptor that came with it.
public struct ReceivedMessage<M: SwiftProtobuf.Message> {
    public let message: M
    public let fileDescriptor: OwnedFileDescriptor?
}

/// A blocking, framed Unix stream socket that can carry file descriptors.
///
/// swift-nio has no SCM_RIGHTS support on stream channels, so the hops that pass
/// a `.stol` file's descriptor (client → importd → verifyd) use this small
/// transport. It shares the frame decoder and limits with the NIO server, so both
/// sides of the protocol cut frames the same way.
public final class FrameSocket {
    public let descriptor: Int32
    /// Each `recvmsg` gets all of the buffer's free space, at least
    /// ``minimumReadSpace`` (asking for the whole initial capacity would double
    /// the buffer as soon as a partial frame sits in it); descriptors beyond
    /// ``maximumDescriptorsPerRead`` in one read are closed by the C shim.
    static let initialCapacity = 64 * 1024
    static let minimumReadSpace = 4 * 1024
    static let maximumDescriptorsPerRead = 4
    private var buffer = ByteBufferAllocator().buffer(capacity: initialCapacity)
    /// Descriptors received, each with the stream offset just past the read that
    /// brought it. The kernel may glue earlier plain bytes into the read that carries
    /// a descriptor, but it ends that read inside the bytes the descriptor was sent
    /// with, so a descriptor belongs to the frame holding the last byte of its read.
    private var receivedDescriptors: [(end: Int, descriptor: OwnedFileDescriptor)] = []
    /// Stream offsets: bytes read from the socket, and bytes cut into frames.
    private var bytesReceived = 0
    private var bytesFramed = 0
    private let maximumIncomingFrameBytes: Int
    private let maximumOutgoingFrameBytes: Int
    private var closed = false
    /// SO_RCVTIMEO as set by ``setReceiveTimeout(_:)``.
    private var receiveTimeout: Duration?
    /// When set, a frame must arrive whole within this time of its first byte
    /// (a server's defence against a peer that trickles bytes): ``receive(_:)``
    /// then throws ``TransportError/timedOut``.
    public var frameDeadline: Duration?
    /// When the first byte of the frame now partly in the buffer arrived.
    private var partialSince: ContinuousClock.Instant?

    /// Takes ownership of the connected socket `descriptor`.
    public init(descriptor: Int32, maximumIncomingFrameBytes: Int, maximumOutgoingFrameBytes: Int) {
        self.descriptor = descriptor
        self.maximumIncomingFrameBytes = maximumIncomingFrameBytes
        self.maximumOutgoingFrameBytes = maximumOutgoingFrameBytes
    }

    /// Connects as a client: requests out, responses in.
    public static func connect(path: String,
                               maximumIncomingFrameBytes: Int = ProtocolLimits.maximumResponseFrameBytes,
                               maximumOutgoingFrameBytes: Int = ProtocolLimits.maximumRequestFrameBytes) throws(TransportError) -> FrameSocket {
        let fd = stol_connect_unix(path)
        guard fd >= 0 else { throw .connect(path: path, errno: errno) }
        return FrameSocket(descriptor: fd, maximumIncomingFrameBytes: maximumIncomingFrameBytes,
                           maximumOutgoingFrameBytes: maximumOutgoingFrameBytes)
    }

    deinit { close() }

    public func close() {
        guard !closed else { return }
        closed = true
        _ = Glibc.close(descriptor)
        receivedDescriptors.removeAll()
    }

    /// The peer's credentials (SO_PEERCRED, SO_PEERGROUPS).
    public func peerCredentials() throws -> PeerCredentials {
        try PeerCredentials(socket: descriptor)
    }

    /// Sets a send timeout (SO_SNDTIMEO); nil waits forever.
    public func setSendTimeout(_ timeout: Duration?) {
        setTimeout(SO_SNDTIMEO, timeout)
    }

    /// Sets a receive timeout (SO_RCVTIMEO); nil waits forever.
    public func setReceiveTimeout(_ timeout: Duration?) {
        receiveTimeout = timeout
        applyReceiveTimeout(timeout)
    }

    private func applyReceiveTimeout(_ timeout: Duration?) {
        setTimeout(SO_RCVTIMEO, timeout)
    }

    /// SO_SNDTIMEO or SO_RCVTIMEO; a zero timeval (nil) waits forever.
    private func setTimeout(_ option: Int32, _ timeout: Duration?) {
        var value = timeval()
        if let timeout {
            value.tv_sec = Int(timeout.components.seconds)
            value.tv_usec = Int(timeout.components.attoseconds / 1_000_000_000_000)
        }
        _ = setsockopt(descriptor, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one message as one frame, with `passing` attached (SCM_RIGHTS) if given.
    public func send(_ message: some SwiftProtobuf.Message, passing fileDescriptor: Int32? = nil) throws(TransportError) {
        let frame: ByteBuffer
        do {
            frame = try FrameEncoding.frame(message, maximumFrameBytes: maximumOutgoingFrameBytes)
        } catch {
            throw .encoding("\(error)")
        }
        try sendRaw(Array(frame.readableBytesView), passing: fileDescriptor)
    }

    /// Sends raw bytes (tests use this to send broken frames).
    public func sendRaw(_ bytes: [UInt8], passing fileDescriptor: Int32? = nil) throws(TransportError) {
        var offset = 0
        var attach = fileDescriptor ?? -1
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                stol_send_with_fd(descriptor, raw.baseAddress! + offset, raw.count - offset, attach)
            }
            guard sent > 0 else {
                if errno == EAGAIN || errno == EWOULDBLOCK { throw .timedOut }
                throw .send(errno: errno)
            }
            attach = -1  // the descriptor travels with the first byte only
            offset += sent
        }
    }

    /// Blocks until one whole frame is in, and decodes it as `M`.
    public func receive<M: SwiftProtobuf.Message>(_ type: M.Type) throws(TransportError) -> ReceivedMessage<M> {
        let (frame, descriptor) = try receiveFrame()
        let message: M
        do {
            message = try FrameEncoding.decode(M.self, from: frame)
        } catch {
            throw .framing(error)
        }
        return ReceivedMessage(message: message, fileDescriptor: descriptor)
    }

    /// True when a whole frame is already buffered (no read needed).
    public var hasBufferedFrame: Bool {
        var copy = buffer
        return (try? LengthPrefixedFrameDecoder.nextFrame(in: &copy, maximumFrameBytes: maximumIncomingFrameBytes)) != nil
    }

    /// Blocks until one whole frame is in and returns its body undecoded, with the
    /// descriptor that came with it (``receive(_:)`` decodes it; the frame decoder's
    /// fuzz target compares these bodies with the other transports').
    public func receiveFrame() throws(TransportError) -> (ByteBuffer, OwnedFileDescriptor?) {
        while true {
            do {
                if let frame = try LengthPrefixedFrameDecoder.nextFrame(in: &buffer, maximumFrameBytes: maximumIncomingFrameBytes) {
                    buffer.discardReadBytes()
                    if partialSince != nil {
                        partialSince = buffer.readableBytes > 0 ? ContinuousClock.now : nil
                        applyReceiveTimeout(receiveTimeout)
                    }
                    let frameStart = bytesFramed
                    bytesFramed += ProtocolLimits.lengthPrefixBytes + frame.readableBytes
                    // This frame's descriptors came with reads ending inside it; any
                    // beyond the first (a misbehaving peer) are closed on release.
                    let mine = receivedDescriptors.prefix { $0.end <= bytesFramed }
                    receivedDescriptors.removeFirst(mine.count)
                    return (frame, mine.first { $0.end > frameStart }?.descriptor)
                }
            } catch {
                throw .framing(error)
            }
            if let frameDeadline, let since = partialSince {
                let left = since + frameDeadline - ContinuousClock.now
                guard left > .zero else { throw .timedOut }
                applyReceiveTimeout(receiveTimeout.map { min($0, left) } ?? left)
            }
            // Straight into the buffer's free space (reused once read bytes are
            // discarded): no per-call scratch array to zero and copy from.
            var received = 0
            var receiveErrno: Int32 = 0
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: Self.maximumDescriptorsPerRead) { fds in
                var count: Int32 = 0
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: Self.minimumReadSpace) { raw in
                    received = stol_recv_with_fds(descriptor, raw.baseAddress!, raw.count,
                                                  fds.baseAddress!, Int32(fds.count), &count)
                    receiveErrno = errno
                    return max(received, 0)
                }
                if received > 0 {
                    bytesReceived += received
                    if partialSince == nil { partialSince = ContinuousClock.now }
                }
                for index in 0..<Int(count) {
                    receivedDescriptors.append((end: bytesReceived, descriptor: OwnedFileDescriptor(fds[index])))
                }
            }
            if received < 0 {
                if receiveErrno == EAGAIN || receiveErrno == EWOULDBLOCK { throw .timedOut }
                throw .receive(errno: receiveErrno)
            }
            if received == 0 {
                if buffer.readableBytes > 0 { throw .framing(.truncatedFrame(receivedBytes: buffer.readableBytes)) }
                throw .closedByPeer
            }
        }
    }
}
