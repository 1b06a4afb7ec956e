import Foundation
import HTTPTypes
import NIOPosix
import STOLClientKit
import STOLProtocol
import STOLTransport
import SwiftProtobuf
import Synchronization

/// The web app's only way to the data: each API call is one protocol request, sent to the
/// daemons as the user who runs the app, through the same sockets and client as
/// `stol-client` (``ServiceClient``), and answered with the daemon's own answer. The
/// request and the answer travel as the protocol's messages in their canonical JSON form
/// (protocol/PROTOCOL.md; field names in lowerCamelCase, 64-bit ids as strings), so the
/// app holds no database, no favourites and no rule of its own: it translates HTTP.
public final class DaemonGateway: Sendable {
    /// A service the API reaches.
    public enum Service: String, Sendable, CaseIterable {
        case taxonomy, favorites, `import`
    }

    /// What an API call answers: an HTTP status and a JSON body.
    public struct Answer: Sendable, Equatable {
        public var status: HTTPResponse.Status
        /// The answer: JSON (the protocol's message, or its error), unless ``isText``.
        public var body: String
        /// A plain text answer (the favourites' export).
        public var isText = false
    }

    public let paths: RuntimePaths
    private let pool: NIOThreadPool
    private let taxonomyClients = ClientPool<Stol_V1_TaxonomyRequest, Stol_V1_TaxonomyResponse>()
    private let favoritesClients = ClientPool<Stol_V1_FavoritesRequest, Stol_V1_FavoritesResponse>()
    private let importClients = ClientPool<Stol_V1_ImportRequest, Stol_V1_ImportResponse>()
    /// How long one answer may take before the page is told the service is busy.
    let timeout: Duration

    public init(paths: RuntimePaths, threads: Int = 4, timeout: Duration = .seconds(30)) {
        self.paths = paths
        self.timeout = timeout
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    deinit { try? pool.syncShutdownGracefully() }

    /// Favourites requests the web app does not pass on: the administrator's backup and
    /// restore (root only, and a restore carries a file), and forget-me (clear-all says it).
    static let refusedFavorites: Set<String> = ["backup", "prepare_restore", "restore", "forget_me"]

    /// Sends the taxonomy request `json` (a `TaxonomyRequest`; its `id` is the gateway's).
    public func taxonomy(_ json: String) async -> Answer {
        switch Self.decode(Stol_V1_TaxonomyRequest.self, json, body: \.body, examples: "status, detail, search, …") {
        case .failure(let refusal): refusal.answer
        case .success(let (request, _)): await run(request, clients: taxonomyClients, service: .taxonomy, path: paths.taxonomySocket)
        }
    }

    /// Sends the favourites request `json` (a `FavoritesRequest`).
    public func favorites(_ json: String) async -> Answer {
        switch Self.decode(Stol_V1_FavoritesRequest.self, json, body: \.body, examples: "list, toggle, count, …") {
        case .failure(let refusal): return refusal.answer
        case .success(let (request, name)):
            guard !Self.refusedFavorites.contains(name) else {
                return Self.invalid("\(name) is not available from the web app; use stol-client")
            }
            return await run(request, clients: favoritesClients, service: .favorites, path: paths.favoritesSocket)
        }
    }

    /// `json` as a request of the protocol, with its operation's name (`get_taxon`), or the
    /// typed error a page shows: not that message in JSON, or no operation in it.
    static func decode<Request: RequestEnvelope, Body>(
        _ type: Request.Type, _ json: String, body: KeyPath<Request, Body?>, examples: String
    ) -> Result<(Request, String), AnswerRefusal> {
        let request: Request
        do {
            request = try Request(jsonString: json, options: decoding)
        } catch {
            return .failure(AnswerRefusal(invalid("not a \(Request.protoMessageName.split(separator: ".").last ?? "request") in JSON: \(error)")))
        }
        guard let operation = request[keyPath: body] else {
            return .failure(AnswerRefusal(invalid("the request names no operation (\(examples))")))
        }
        return .success((request, operationName(of: operation)))
    }

    /// The user's favourites with their names, in `order` (``FavoriteListing``, the one
    /// definition `stol-client fav list` and `fav export` use): the listing as JSON, or the
    /// export's plain text (names only: no ids, no times) when `export` is set.
    public func favouritesListing(order: FavoriteSort, language: String, export: Bool) async -> Answer {
        let timeout = timeout
        let favoritesClients = favoritesClients, taxonomyClients = taxonomyClients, paths = paths
        do {
            return try await pool.runIfActive {
                let favorites = favoritesClients.take() ?? Self.client(.favorites, path: paths.favoritesSocket, timeout: timeout)
                let taxonomy = taxonomyClients.take() ?? Self.client(.taxonomy, path: paths.taxonomySocket, timeout: timeout)
                defer {
                    favoritesClients.give(favorites)
                    taxonomyClients.give(taxonomy)
                }
                let listing: FavoriteListing
                do {
                    let list = try favorites.call(.with { $0.list = Stol_V1_ListFavorites() }).list
                    listing = FavoriteListing(entries: list.entries,
                                              taxa: try taxonomy.taxa(ids: list.entries.map(\.taxonID), language: language))
                } catch {
                    return Self.answer(for: error, service: .favorites)
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                if export { return Answer(status: .ok, body: listing.exportText(order) + "\n", isText: true) }
                let data = (try? encoder.encode(listing.listJSON(order))) ?? Data("{}".utf8)
                return Answer(status: .ok, body: String(decoding: data, as: UTF8.self))
            }
        } catch {
            return Self.answer(for: ClientError.local("the web app is stopping"), service: .favorites)
        }
    }

    /// The smallest tree joining `taxa` (ids or exact names) as Newick text, written by
    /// STOLClientKit's ``Newick`` as `stol-client tree --format newick` writes a tree.
    public func newick(taxa: [String], ranks: Stol_V1_RankView, release: String) async -> Answer {
        var request = Stol_V1_TaxonomyRequest()
        request.release = release
        request.inducedTree = .with {
            $0.taxonIds = taxa.compactMap { Int64($0) }
            $0.names = taxa.filter { Int64($0) == nil }
            $0.ranks = ranks
        }
        let answer = await run(request, clients: taxonomyClients, service: .taxonomy, path: paths.taxonomySocket)
        guard answer.status == .ok, let response = try? Stol_V1_TaxonomyResponse(jsonString: answer.body) else { return answer }
        let tree = response.inducedTree
        guard !tree.ids.isEmpty else { return Self.errorAnswer(ProtocolError(.notFound, "none of these taxa was found"), status: .notFound) }
        return Answer(status: .ok, body: Newick.write(depths: tree.depths.map(Int.init), labels: tree.names) + "\n", isText: true)
    }

    static func client<Request: RequestEnvelope, Response: ResponseEnvelope>(
        _ service: Service, path: String, timeout: Duration
    ) -> ServiceClient<Request, Response> {
        let made = ServiceClient<Request, Response>(service: service.rawValue, path: path, timeout: timeout)
        made.showsNotices = false
        return made
    }

    /// The import coordinator's status (an administrator imports with `stol-client db`).
    public func importStatus() async -> Answer {
        await run(Stol_V1_ImportRequest.with { $0.status = Stol_V1_ImportStatusRequest() }, clients: importClients,
                  service: .import, path: paths.importSocket)
    }

    private func run<Request: RequestEnvelope, Response: ResponseEnvelope>(
        _ request: Request, clients: ClientPool<Request, Response>, service: Service, path: String
    ) async -> Answer {
        let timeout = timeout
        do {
            return try await pool.runIfActive {
                let client = clients.take() ?? Self.client(service, path: path, timeout: timeout)
                let answer: Answer
                do {
                    let response = try client.call(request)
                    answer = Answer(status: .ok, body: try response.jsonString(options: Self.encoding))
                } catch {
                    answer = Self.answer(for: error, service: service)
                }
                clients.give(client)
                return answer
            }
        } catch {
            return Self.answer(for: ClientError.local("the web app is stopping"), service: service)
        }
    }

    static let decoding: JSONDecodingOptions = {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = false
        return options
    }()

    static let encoding: JSONEncodingOptions = {
        var options = JSONEncodingOptions()
        options.alwaysPrintEnumsAsInts = false
        return options
    }()

    /// The proto field name of a oneof case (`getTaxon(...)` → `get_taxon`).
    static func operationName<Body>(of body: Body) -> String {
        let label = Mirror(reflecting: body).children.first?.label ?? "\(body)"
        return label.reduce(into: "") { name, character in
            if character.isUppercase { name += "_" + character.lowercased() } else { name.append(character) }
        }
    }

    static func invalid(_ message: String) -> Answer {
        errorAnswer(ProtocolError(.invalidRequest, message), status: .badRequest)
    }

    /// A failed call as the protocol's error in the answer's `error` field, with the
    /// HTTP status a program would expect of it.
    static func answer(for error: any Error, service: Service) -> Answer {
        switch error {
        case ClientError.server(let protocolError):
            return errorAnswer(protocolError, status: status(for: protocolError.code))
        case ClientError.serviceNotRunning:
            return errorAnswer(ProtocolError(.unavailable, "The \(service.rawValue) service is not running. "
                                             + "Start it (sudo systemctl start stol-\(service.rawValue)d.socket, or stol-client serve); "
                                             + "this page works again as soon as it answers."), status: .serviceUnavailable)
        case ClientError.socketPermissionDenied:
            return errorAnswer(ProtocolError(.permissionDenied, "Your account may not use the \(service.rawValue) service "
                                             + "(its socket refuses you)."), status: .forbidden)
        case ClientError.timedOut(_, let after):
            return errorAnswer(ProtocolError(.busy, "The \(service.rawValue) service did not answer within \(after); it may be busy. "
                                             + "Try again in a moment."), status: .serviceUnavailable)
        case ClientError.transport:
            return errorAnswer(ProtocolError(.unavailable, "The connection to the \(service.rawValue) service was lost "
                                             + "(it may have restarted). Try again."), status: .serviceUnavailable)
        default:
            return errorAnswer(ProtocolError(.internal, "\(error)"), status: .internalServerError)
        }
    }

    static func status(for code: Stol_V1_ErrorCode) -> HTTPResponse.Status {
        switch code {
        case .notFound, .taxonDeleted, .releaseNotInstalled: .notFound
        case .permissionDenied: .forbidden
        case .busy, .unavailable: .serviceUnavailable
        case .internal: .internalServerError
        case .unimplemented: .notImplemented
        default: .badRequest
        }
    }

    static func errorAnswer(_ error: ProtocolError, status: HTTPResponse.Status) -> Answer {
        let body = (try? error.proto.jsonString(options: encoding)) ?? "{}"
        return Answer(status: status, body: "{\"error\":\(body)}")
    }
}

/// Connections to one service kept for the next call (a connection is one client's at a
/// time: a call takes one, or makes one, and gives it back).
final class ClientPool<Request: RequestEnvelope, Response: ResponseEnvelope>: @unchecked Sendable {
    private let lock = Mutex(())
    private var idle: [ServiceClient<Request, Response>] = []
    /// Connections kept idle at most (the gateway's threads).
    let capacity = 8

    func take() -> ServiceClient<Request, Response>? {
        lock.withLock { _ in idle.popLast() }
    }

    func give(_ client: ServiceClient<Request, Response>) {
        lock.withLock { _ in if idle.count < capacity { idle.append(client) } }
    }
}

/// A request the gateway refuses before sending it, with the answer that says why.
struct AnswerRefusal: Error {
    let answer: DaemonGateway.Answer
    init(_ answer: DaemonGateway.Answer) { self.answer = answer }
}
