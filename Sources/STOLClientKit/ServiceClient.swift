import Foundation
import Glibc
import STOLProtocol
import STOLTransport

/// A connection to one STOL service: numbered requests out, typed answers in.
///
/// The client holds no business logic: it sends one request, relays progress
/// frames to `onProgress`, and returns the final answer or throws its typed error.
public final class ServiceClient<Request: RequestEnvelope, Response: ResponseEnvelope> {
    public let service: String
    public let path: String
    /// How long to wait for each answer frame (and to send a request); nil waits for ever.
    public let timeout: Duration?
    fileprivate var socket: FrameSocket?
    fileprivate var nextID: UInt64 = 1
    /// Applied to every request before it is sent (the taxonomy commands pin a release here).
    public var prepare: ((inout Request) -> Void)?
    /// Shown every final answer (the client notes which release answered).
    public var observe: ((Response) -> Void)?
    /// Whether an answer's notices are written to standard error (a terminal command's
    /// way); a client that hands whole answers on (the web app) turns it off.
    public var showsNotices = true

    /// The default wait for an answer: a stopped or wedged daemon never hangs the client.
    public static var defaultTimeout: Duration { .seconds(30) }

    public init(service: String, path: String, timeout: Duration? = ServiceClient.defaultTimeout) {
        self.service = service
        self.path = path
        self.timeout = timeout
    }

    /// How long a connect refused by a socket file nobody listens on (ECONNREFUSED) is
    /// tried again before the service counts as not running: the moment systemd restarts a
    /// socket (a package upgrade) looks like this, and nothing was sent yet, so any request
    /// may wait. No socket file at all (ENOENT) is said at once.
    public static var connectPatience: Duration { .seconds(1) }

    fileprivate func connected() throws(ClientError) -> FrameSocket {
        if let socket { return socket }
        let deadline = ContinuousClock.now + Self.connectPatience
        while true {
            do throws(TransportError) {
                return try connectOnce()
            } catch {
                guard case .connect(_, let code) = error, code == ECONNREFUSED, ContinuousClock.now < deadline else {
                    throw clientError(connecting: error)
                }
                usleep(50_000)
            }
        }
    }

    private func connectOnce() throws(TransportError) -> FrameSocket {
        let socket = try FrameSocket.connect(path: path)
        socket.setReceiveTimeout(timeout)
        socket.setSendTimeout(timeout)
        self.socket = socket
        return socket
    }

    private func clientError(connecting error: TransportError) -> ClientError {
        if case .connect(_, let code) = error {
            if code == EACCES || code == EPERM { return .socketPermissionDenied(service: service, path: path) }
            return .serviceNotRunning(service: service, path: path)
        }
        return .transport(service: service, error)
    }

    /// What a failed exchange tells the user: a transport failure forgets the
    /// connection (the next call reconnects) and a timeout names its deadline.
    fileprivate func clientError(_ error: any Error) -> ClientError {
        switch error {
        case let error as ClientError:
            return error
        case let error as TransportError:
            socket = nil
            if case .timedOut = error, let timeout { return .timedOut(service: service, after: timeout) }
            return .transport(service: service, error)
        default:
            return .local("\(error)")
        }
    }

    /// Sends `request` (with `fileDescriptor` attached if given) and returns the
    /// final answer. `isFinal` says which answers end the exchange (default: all).
    public func call(_ request: Request, passing fileDescriptor: Int32? = nil,
                     isFinal: (Response) -> Bool = { _ in true },
                     onProgress: (Response) -> Void = { _ in }) throws(ClientError) -> Response {
        var answered = false
        var resends = 0
        while true {
            do {
                return try exchange(request, passing: fileDescriptor, isFinal: isFinal) { response in
                    answered = true
                    onProgress(response)
                }
            } catch {
                // A daemon restarted under us (an upgrade, `systemctl restart`) resets the
                // connection: a request that got no answer yet and is safe to repeat is
                // asked again on a new one, after a pause, a few times (a connection the old
                // daemon had still accepted from the backlog is reset too).
                guard case .transport(_, let transport) = error, transport.isConnectionLost, !answered,
                      request.isSafeToRepeat, fileDescriptor == nil, resends < Self.resends else { throw error }
                resends += 1
                usleep(UInt32(50_000 * resends))
            }
        }
    }

    /// How many times a request safe to repeat is sent again after its connection was
    /// lost unanswered (pauses of 50, 100, 150 ms), as the Python package's `_RESENDS`.
    public static var resends: Int { 3 }

    private func exchange(_ request: Request, passing fileDescriptor: Int32?, isFinal: (Response) -> Bool,
                          onProgress: (Response) -> Void) throws(ClientError) -> Response {
        let socket = try connected()
        var request = request
        prepare?(&request)
        request.id = nextID
        nextID += 1
        do {
            do {
                try socket.send(request, passing: fileDescriptor)
            } catch {
                if case .encoding = error {
                    throw ClientError.usage("the request is larger than the protocol allows "
                                            + "(\(ProtocolLimits.maximumRequestFrameBytes) bytes); make it smaller")
                }
                // A daemon that refused the connection (BUSY) may have closed it before
                // the request went out: its one error frame is still there to read.
                if let refusal = try? socket.receive(Response.self).message, let protocolError = refusal.protocolError {
                    throw ClientError.server(protocolError)
                }
                throw error
            }
            while true {
                let response = try socket.receive(Response.self).message
                if let error = response.protocolError { throw ClientError.server(error) }
                if response.id != request.id {
                    throw ClientError.local("the \(service) service answered request \(response.id), expected \(request.id)")
                }
                if isFinal(response) {
                    if showsNotices { Self.showNotices(response) }
                    observe?(response)
                    return response
                }
                onProgress(response)
            }
        } catch {
            throw clientError(error)
        }
    }
}

extension ServiceClient {
    /// Shows on standard error what an answer says besides its result (an id
    /// answered as the taxon it was merged into, a favourites notice), so that
    /// standard output stays the answer alone.
    public static func showNotices(_ response: Response) {
        for notice in response.notices {
            FileHandle.standardError.write(Data("note: \(notice)\n".utf8))
        }
    }

    /// Sends the requests `next` gives, keeping up to `window` of them in flight on
    /// one connection (PROTOCOL.md §1.3: taxonomy.sock answers pipelined requests,
    /// matched by `id`), and hands each answer to `onAnswer` in the order of the
    /// requests. For batch modes: a round trip per batch would leave both sides
    /// idle half the time. A small window keeps the unread answers within what the
    /// server holds for a connection (1 MiB, then it stops reading), so neither
    /// side waits on the other for ever.
    public func pipeline(window: Int = 4, next: () throws(ClientError) -> Request?,
                         onAnswer: (Response) throws(ClientError) -> Void) throws(ClientError) {
        try pipelined(window: window, next: next,
                      receive: { socket throws(TransportError) in (try socket.receive(Response.self).message, RawAnswer?.none) },
                      onAnswer: { (response, _) throws(ClientError) in try onAnswer(response) })
    }

    /// An answer whose result field ``field`` was left undecoded: its value is
    /// `bytes[value]`, for a reader in place (``LineageBatchIndex``).
    public struct RawAnswer {
        public let bytes: [UInt8]
        public let value: Range<Int>
    }

    /// ``pipeline(window:next:onAnswer:)``, with each answer's result field `rawResult`
    /// (a field number of the answer envelope, e.g. 24 for `lineage_batch`) handed over
    /// undecoded: the envelope is decoded without it. An answer without that field, or
    /// one this split cannot read, is decoded whole (the `RawAnswer` is nil).
    public func pipeline(window: Int = 4, next: () throws(ClientError) -> Request?, rawResult field: Int,
                         onAnswer: (Response, RawAnswer?) throws(ClientError) -> Void) throws(ClientError) {
        try pipelined(window: window, next: next, receive: { socket throws(TransportError) in
            let bytes = Array(try socket.receiveFrame().0.readableBytesView)
            if let split = try? bytes.withUnsafeBufferPointer({ buffer throws(WireError) in
                try ProtobufWire.split(buffer, field: field)
            }), let value = split.value, let envelope = try? Response(serializedBytes: split.rest) {
                return (envelope, RawAnswer(bytes: bytes, value: value))
            }
            do {
                return (try Response(serializedBytes: bytes), nil)
            } catch {
                throw .framing(.undecodableMessage(Response.protoMessageName))
            }
        }, onAnswer: onAnswer)
    }

    private func pipelined<Extra>(window: Int, next: () throws(ClientError) -> Request?,
                                  receive: (FrameSocket) throws(TransportError) -> (Response, Extra),
                                  onAnswer: (Response, Extra) throws(ClientError) -> Void) throws(ClientError) {
        let socket = try connected()
        var inFlight: [UInt64] = []
        var early: [UInt64: (Response, Extra)] = [:]
        var exhausted = false
        do {
            while true {
                while !exhausted && inFlight.count < max(window, 1) {
                    guard var request = try next() else { exhausted = true; break }
                    prepare?(&request)
                    request.id = nextID
                    nextID += 1
                    do {
                        try socket.send(request)
                    } catch {
                        if case .encoding = error {
                            throw ClientError.usage("a request is larger than the protocol allows "
                                                    + "(\(ProtocolLimits.maximumRequestFrameBytes) bytes); make it smaller")
                        }
                        throw error
                    }
                    inFlight.append(request.id)
                }
                guard let first = inFlight.first else { return }
                let answer: (Response, Extra)
                if let ready = early.removeValue(forKey: first) {
                    answer = ready
                } else {
                    let received = try receive(socket)
                    if received.0.id == 0, let error = received.0.protocolError { throw ClientError.server(error) }
                    guard received.0.id == first else {
                        guard inFlight.contains(received.0.id) else {
                            throw ClientError.local("the \(service) service answered request \(received.0.id), which was not sent")
                        }
                        early[received.0.id] = received
                        continue
                    }
                    answer = received
                }
                inFlight.removeFirst()
                // A request the service refused whole (a database without the whole tree,
                // a batch too large) is the same typed error as for a single request.
                if let error = answer.0.protocolError { throw ClientError.server(error) }
                observe?(answer.0)
                try onAnswer(answer.0, answer.1)
            }
        } catch {
            throw clientError(error)
        }
    }
}

public typealias TaxonomyClient = ServiceClient<Stol_V1_TaxonomyRequest, Stol_V1_TaxonomyResponse>
public typealias FavoritesClient = ServiceClient<Stol_V1_FavoritesRequest, Stol_V1_FavoritesResponse>
public typealias ImportClient = ServiceClient<Stol_V1_ImportRequest, Stol_V1_ImportResponse>
