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
///
/// The server runs every request, and the encoding of its answer, on threads of
/// the caller's own (one user's lanes, `UserLanes` in STOLServer), so that the
/// kernel shares the CPU between users and a user's work never waits behind
/// another's; a request whose connection closes is cancelled (`Task.isCancelled`),
/// and long work checks for it.
public protocol FramedService: Sendable {
    associatedtype Request: RequestEnvelope
    associatedtype Response: ResponseEnvelope
    /// Answers one request. Errors are answered as typed error responses; a
    /// handler never throws so that it cannot take the connection down with it.
    func respond(to request: Request, context: RequestContext) async -> Response

    /// Which of the caller's lanes the request runs on, from the request alone: bulk
    /// work (batches, subtrees, long lists) at a lower priority than the same user's
    /// lookups. By default ``WorkClass/interactive``.
    func workClass(of request: Request) -> WorkClass

    /// The answer, made at once on the calling thread (the connection's event loop),
    /// for a request whose work is a few microseconds and waits for nothing (one
    /// taxon by id from a database that is open and loaded); nil for any other, which
    /// then runs on the caller's lane. Each hand-over to another thread is a wakeup
    /// the kernel may delay by a tick on a busy machine: answered here, a lookup has
    /// two (its client's and the event loop's) instead of four (docs/benchmarks.md §19.6).
    /// By default nil.
    func respondInline(to request: Request, context: RequestContext) -> Response?

    /// Whether the request counts as the users' activity (``RequestActivity``) that work
    /// nobody asked for waits to pause. By default true; false for what a script polls
    /// while it waits for that work (the taxonomy service's `status`).
    func holdsBackIdleWork(_ request: Request) -> Bool
}

extension FramedService {
    public func workClass(of request: Request) -> WorkClass { .interactive }
    public func respondInline(to request: Request, context: RequestContext) -> Response? { nil }
    public func holdsBackIdleWork(_ request: Request) -> Bool { true }
}

/// The two lanes each user's requests run on.
public enum WorkClass: Sendable, Equatable {
    /// Lookups and searches: at the daemon's own priority.
    case interactive
    /// Batches, subtrees and other work that grows with the request: at a lower
    /// priority (nice), so that on a busy machine everyone's lookups go first.
    case bulk
}

/// A service served by ``BlockingFramedServer``: requests may carry a file
/// descriptor and may be answered with several frames (progress, then a final one).
public protocol StreamingFramedService: Sendable {
    associatedtype Request: RequestEnvelope
    associatedtype Response: ResponseEnvelope
    /// Answers one request by calling `send` one or more times; the last call is
    /// the final answer. A throw from `send` means the peer is gone.
    func respond(to request: Request, context: RequestContext, send: (Response) throws -> Void)
    /// The service's rate-limited notices (refused requests): the server sums them up
    /// every window and at stop, as its own framing errors. By default none.
    var notices: [RateLimitedLog] { get }
}

extension StreamingFramedService {
    public var notices: [RateLimitedLog] { [] }
}
