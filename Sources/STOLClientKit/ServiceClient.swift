import Glibc
import STOLProtocol
import STOLRuntime

/// A connection to one STOL service: numbered requests out, typed answers in.
///
/// The client holds no business logic: it sends one request, relays progress
/// frames to `onProgress`, and returns the final answer or throws its typed error.
public final class ServiceClient<Request: RequestEnvelope, Response: ResponseEnvelope> {
    public let service: String
    public let path: String
    private var socket: FrameSocket?
    private var nextID: UInt64 = 1

    public init(service: String, path: String) {
        self.service = service
        self.path = path
    }

    private func connected() throws(ClientError) -> FrameSocket {
        if let socket { return socket }
        do {
            let socket = try FrameSocket.connect(path: path)
            self.socket = socket
            return socket
        } catch {
            if case .connect(_, let code) = error {
                if code == EACCES || code == EPERM { throw .socketPermissionDenied(service: service, path: path) }
                throw .serviceNotRunning(service: service, path: path)
            }
            throw .transport(service: service, error)
        }
    }

    /// Sends `request` (with `fileDescriptor` attached if given) and returns the
    /// final answer. `isFinal` says which answers end the exchange (default: all).
    public func call(_ request: Request, passing fileDescriptor: Int32? = nil,
                     isFinal: (Response) -> Bool = { _ in true },
                     onProgress: (Response) -> Void = { _ in }) throws(ClientError) -> Response {
        let socket = try connected()
        var request = request
        request.id = nextID
        nextID += 1
        do {
            try socket.send(request, passing: fileDescriptor)
            while true {
                let response = try socket.receive(Response.self).message
                if let error = response.protocolError { throw ClientError.server(error) }
                if response.id != request.id {
                    throw ClientError.local("the \(service) service answered request \(response.id), expected \(request.id)")
                }
                if isFinal(response) { return response }
                onProgress(response)
            }
        } catch let error as ClientError {
            throw error
        } catch let error as TransportError {
            self.socket = nil
            throw .transport(service: service, error)
        } catch {
            throw .local("\(error)")
        }
    }
}

public typealias TaxonomyClient = ServiceClient<Stol_V1_TaxonomyRequest, Stol_V1_TaxonomyResponse>
public typealias FavoritesClient = ServiceClient<Stol_V1_FavoritesRequest, Stol_V1_FavoritesResponse>
public typealias ImportClient = ServiceClient<Stol_V1_ImportRequest, Stol_V1_ImportResponse>
