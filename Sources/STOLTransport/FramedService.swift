import Logging
import STOLProtocol

// The contract between a server and the service it serves, kept out of the server
// module so that the service libraries (taxonomy, favourites, import) and their
// tests depend on no server machinery.

/// Everything a handler may know about the request besides its bytes.
public struct RequestContext: Sendable {
    /// The caller, from SO_PEERCRED: the only identity a service may trust.
    public let peer: PeerCredentials
    public let logger: Logger
    /// A descriptor that travelled with this request frame (SCM_RIGHTS); only the
    /// blocking transport carries them. The handler owns it.
    public let receivedFileDescriptor: OwnedFileDescriptor?
    /// The connection's socket, for a long handler that must notice the peer
    /// leaving while it waits on something else (``ConnectionWatch``). Only the
    /// blocking transport sets it; a handler never reads or writes it.
    public let connectionDescriptor: Int32?

    public init(peer: PeerCredentials, logger: Logger, receivedFileDescriptor: OwnedFileDescriptor? = nil,
                connectionDescriptor: Int32? = nil) {
        self.peer = peer
        self.logger = logger
        self.receivedFileDescriptor = receivedFileDescriptor
        self.connectionDescriptor = connectionDescriptor
    }

    /// Whether the peer has closed the connection (always false without a descriptor).
    public var peerHasClosed: Bool {
        connectionDescriptor.map(ConnectionWatch.hasClosed) ?? false
    }
}

/// A request/response service served by ``NIOFramedServer``: one response per
/// request, requests on one connection answered in order.
public protocol FramedService: Sendable {
    associatedtype Request: RequestEnvelope
    associatedtype Response: ResponseEnvelope
    /// Answers one request. Errors are answered as typed error responses; a
    /// handler never throws so that it cannot take the connection down with it.
    func respond(to request: Request, context: RequestContext) async -> Response

    /// Answers `request` at once on the connection's event loop, or returns nil to
    /// have it answered by ``respond(to:context:)`` on the task pool.
    ///
    /// For requests of small, bounded cost (a lookup by id): handing each one to a
    /// Swift task and back costs two thread wake-ups, several times the lookup
    /// itself, and halves the requests per second a 2-core machine can serve. A
    /// request that may take long (a search, a batch) must return nil here, since
    /// it would hold up every other connection on its event loop.
    func respondInline(to request: Request, context: RequestContext) -> Response?

    /// Runs `encode`, the serialisation of the answer ``respond(to:context:)`` made
    /// to `request`, where the service wants its cost paid: a megabyte answer takes
    /// milliseconds, and on the task pool (one thread per core) two of them leave no
    /// thread for other users' requests. The request is there so that the rule that
    /// placed the work can place its answer. By default right here.
    func encoding<Encoded: Sendable>(_ response: Response, to request: Request, context: RequestContext,
                                     _ encode: @escaping @Sendable () -> Encoded) async -> Encoded
}

extension FramedService {
    /// By default every request goes to the task pool.
    public func respondInline(to request: Request, context: RequestContext) -> Response? { nil }

    public func encoding<Encoded: Sendable>(_ response: Response, to request: Request, context: RequestContext,
                                            _ encode: @escaping @Sendable () -> Encoded) async -> Encoded {
        encode()
    }
}

/// A service served by ``BlockingFramedServer``: requests may carry a file
/// descriptor and may be answered with several frames (progress, then a final one).
public protocol StreamingFramedService: Sendable {
    associatedtype Request: RequestEnvelope
    associatedtype Response: ResponseEnvelope
    /// Answers one request by calling `send` one or more times; the last call is
    /// the final answer. A throw from `send` means the peer is gone.
    func respond(to request: Request, context: RequestContext, send: (Response) throws -> Void)
}
