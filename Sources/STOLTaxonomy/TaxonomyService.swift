import Foundation
import Logging
import STOLFileSystem
import STOLModel
import STOLProtocol
import STOLTransport

/// `stol-taxonomyd`'s request handler: validates each request, runs it against
/// the active database, and stamps every answer with that database's identity.
public struct TaxonomyService: FramedService {
    public typealias Request = Stol_V1_TaxonomyRequest
    public typealias Response = Stol_V1_TaxonomyResponse

    public static let version = STOLVersion.current

    let provider: ActiveDatabaseProvider
    public let statistics = ServiceStatistics()

    public init(provider: ActiveDatabaseProvider) {
        self.provider = provider
    }

    /// Answers on the caller's lane (the server's `UserLanes`). A request that
    /// needs the in-memory indexes while they are still being built (in the seconds
    /// after a start or a switch) suspends until they are, holding no thread, and is
    /// answered from the database it started with; so does one pinned to a release
    /// that is still opening.
    public func respond(to request: Request, context: RequestContext) async -> Response {
        // The user's own read connections (``UserReaders``): no wait for another user's
        // query, and no page cache another user warmed; held for the request (``ReaderLease``).
        let lease = ReaderLease(key: ReaderKey(uid: context.peer.uid, bulk: workClass(of: request) == .bulk))
        defer { lease.end() }
        return await ReaderLease.$current.withValue(lease) { await answer(request, context: context) }
    }

    private func answer(_ request: Request, context: RequestContext) async -> Response {
        let route = TaxonomyRequestTable.route(request)
        let selection: ActiveDatabaseProvider.Selection
        do {
            selection = try await provider.pinnedSelection(request.release)
        } catch {
            return failure(error, to: request, route: route, context: context)
        }
        if let early = response(to: request, route: route, selection: selection, context: context, deferIfLoading: true) {
            return early
        }
        // The tree comes first (from its image, in a fraction of a second), the names'
        // indexes later: a request that needs only the tree is answered at the first.
        await selection.database.treeLoaded()
        if let early = response(to: request, route: route, selection: selection, context: context, deferIfLoading: true) {
            return early
        }
        _ = await selection.database.loadedMemoryIndexes()
        return response(to: request, route: route, selection: selection, context: context, deferIfLoading: false)!
    }

    /// The answer at once, on the calling thread, for a request its handler declares
    /// inline (``TaxonomyRequestHandler/answersInline(_:)``: one taxon by id) when the
    /// default database is open and its in-memory indexes are loaded; nil otherwise
    /// (a pinned release, a switch to open, indexes still loading: the lane waits for those).
    public func respondInline(to request: Request, context: RequestContext) -> Response? {
        guard request.release.isEmpty else { return nil }
        let route = TaxonomyRequestTable.route(request)
        guard route.answersInline, let selection = provider.selectionWithoutOpening() else { return nil }
        let lease = ReaderLease(key: ReaderKey(uid: context.peer.uid, bulk: false))
        defer { lease.end() }
        return ReaderLease.$current.withValue(lease) {
            response(to: request, route: route, selection: selection, context: context, deferIfLoading: true)
        }
    }

    /// Its handler's ``TaxonomyRequestHandler/holdsBackIdleWork``.
    public func holdsBackIdleWork(_ request: Request) -> Bool {
        TaxonomyRequestTable.route(request).holdsBackIdleWork
    }

    /// The request's lane: its handler's cost (``TaxonomyRequestHandler/cost(_:)``).
    public func workClass(of request: Request) -> WorkClass {
        TaxonomyRequestTable.route(request).cost
    }

    /// The answer to a request whose release cannot answer (not installed, unusable),
    /// stamped with the default database's identity.
    private func failure(_ error: TaxonomyError, to request: Request, route: some AnyBoundRequest,
                         context: RequestContext) -> Response {
        var response = Response()
        response.id = request.id
        response.database = provider.currentWithoutWaiting().database.identity
        response.error = error.protocolError.proto
        statistics.record(uid: context.peer.uid, operation: route.operation, errorCode: error.protocolError.code.name)
        return response
    }

    /// Answers one request synchronously on the calling thread (benchmarks and
    /// tests): errors become typed error responses (``TaxonomyError/memoryIndexesLoading``
    /// too: this never waits).
    public func respondNow(to request: Request, context: RequestContext) -> Response {
        let route = TaxonomyRequestTable.route(request)
        do {
            guard let selection = try provider.selection(forRelease: request.release) else {
                return failure(.noDatabase("the release \(request.release) is being opened; try again in a few seconds"),
                               to: request, route: route, context: context)
            }
            return response(to: request, route: route, selection: selection, context: context, deferIfLoading: false)!
        } catch {
            return failure(error, to: request, route: route, context: context)
        }
    }

    /// The answer from `selection`, by the request's handler; nil, with
    /// `deferIfLoading`, when it needs the in-memory indexes that are still being
    /// built (nothing is counted then).
    private func response<Route: AnyBoundRequest>(to request: Request, route: Route, selection: ActiveDatabaseProvider.Selection,
                                                 context requestContext: RequestContext, deferIfLoading: Bool) -> Response? {
        var response = Response()
        response.id = request.id
        response.database = selection.database.identity
        do {
            var current = route
            // An id the source merged into another is answered as that one, and said so
            // (at most twice: compare names two ids), in the fields the handler names
            // (``TaxonomyRequestHandler/mergedIDFields``); a deleted one is TAXON_DELETED.
            for attempt in 0... {
                var context = TaxonomyRequestContext(selection: selection, service: self, uid: requestContext.peer.uid,
                                                     logger: requestContext.logger)
                defer { response.merged.append(contentsOf: context.merged) }
                do {
                    response.result = try current.answer(&context)
                    break
                } catch TaxonomyError.taxonNotFound(let id) where attempt < 2 {
                    switch try LookupQueries(database: selection.database).retired(id) {
                    case .merged(let new)?:
                        guard let replaced = current.replacingMergedID(id, with: new) else { throw TaxonomyError.taxonNotFound(id) }
                        current = replaced
                        response.merged.append(.with { $0.oldID = id; $0.newID = new })
                    case .deleted?:
                        throw TaxonomyError.taxonDeleted(id)
                    case nil:
                        throw TaxonomyError.taxonNotFound(id)
                    }
                }
            }
        } catch TaxonomyError.memoryIndexesLoading where deferIfLoading {
            return nil
        } catch let error as ProtocolErrorConvertible {
            response.error = error.protocolError.proto
        } catch {
            response.error = ProtocolError(.internal, "\(error)").proto
        }
        statistics.record(uid: requestContext.peer.uid, operation: route.operation, errorCode: response.protocolError?.code.name)
        return response
    }
}
