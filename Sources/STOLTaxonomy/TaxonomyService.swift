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
    /// The pool's share of each user.
    let share: PerUserShare
    /// Where bulk requests run, below everyone's lookups (``RequestCost/bulk``).
    let bulk: BulkExecutor
    /// One user's bulk work paced while others are active.
    let pacer: BulkPacer

    public init(provider: ActiveDatabaseProvider, share: PerUserShare = PerUserShare(), bulk: BulkExecutor = BulkExecutor(),
                pacer: BulkPacer = BulkPacer()) {
        self.provider = provider
        self.share = share
        self.bulk = bulk
        self.pacer = pacer
    }

    /// Answers on the task pool. A request that needs the in-memory indexes
    /// while they are still being built (computed relatives in the seconds after
    /// a start or a switch) suspends until they are, holding no thread: blocking
    /// would take one of the pool's few threads (one per core) from every other
    /// request for that long. It is answered from the database it started with.
    public func respond(to request: Request, context: RequestContext) async -> Response {
        // One user holds at most its share of the pool (``PerUserShare``) while its
        // request works, not while it waits for the indexes.
        let uid = context.peer.uid
        let route = TaxonomyRequestTable.route(request)
        let selection: ActiveDatabaseProvider.Selection
        do {
            // A pinned release that is not open yet is opened meanwhile (this task
            // suspends, holding no thread and no share).
            selection = try await provider.pinnedSelection(request.release)
        } catch {
            return failure(error, to: request, route: route)
        }
        let logger = context.logger
        let isBulk = route.cost == .bulk
        /// On a bulk thread for bulk work (``BulkExecutor``), paced (``BulkPacer``); here otherwise.
        func answer(deferIfLoading: Bool) async -> Response? {
            guard isBulk else {
                return response(to: request, route: route, selection: selection, logger: logger, deferIfLoading: deferIfLoading)
            }
            let start = ContinuousClock.now
            defer { pacer.charge(uid, from: start, to: .now) }
            return await bulk.run { [self] in
                response(to: request, route: route, selection: selection, logger: logger, deferIfLoading: deferIfLoading)
            }
        }
        pacer.noteActivity(of: uid)
        if isBulk {
            // Waits holding no share and no thread.
            let wait = pacer.delay(for: uid)
            if wait > .zero { try? await Task.sleep(for: wait) }
        }
        await share.acquire(uid)
        let early = await answer(deferIfLoading: true)
        share.release(uid)
        if let early { return early }
        _ = await selection.database.loadedMemoryIndexes()
        await share.acquire(uid)
        defer { share.release(uid) }
        return await answer(deferIfLoading: false)!
    }

    /// Bulk answers are serialised on the bulk threads too (``BulkExecutor``): a
    /// 50,000-node subtree or 1,000 lineages take milliseconds to encode, and on the
    /// task pool two of them would hold both its threads from other users' searches.
    /// The encoding is charged to the user's pace (``BulkPacer``) like the work.
    /// Which answers are bulk is the request's cost (``RequestCost/bulk``), the
    /// rule that placed its work; an error is a few bytes, encoded here.
    public func encoding<Encoded: Sendable>(_ response: Response, to request: Request, context: RequestContext,
                                            _ encode: @escaping @Sendable () -> Encoded) async -> Encoded {
        if case .error? = response.result { return encode() }
        guard TaxonomyRequestTable.route(request).cost == .bulk else { return encode() }
        let start = ContinuousClock.now
        defer { pacer.charge(context.peer.uid, from: start, to: .now) }
        return await bulk.run(encode)
    }

    /// Requests of ``RequestCost/inline`` cost (lookups by id, compare, relatives on
    /// the main ranks, status) cost tens to hundreds of microseconds and are
    /// answered on the event loop; one that finds the in-memory indexes still
    /// loading, or a pinned release still opening, goes to the task pool, which
    /// waits for them.
    public func respondInline(to request: Request, context: RequestContext) -> Response? {
        let route = TaxonomyRequestTable.route(request)
        guard route.cost == .inline else { return nil }
        let selection: ActiveDatabaseProvider.Selection
        do {
            // nil: a pinned release still opening; the task pool waits for it.
            guard let found = try provider.selection(forRelease: request.release) else { return nil }
            selection = found
        } catch {
            return failure(error, to: request, route: route)
        }
        pacer.noteActivity(of: context.peer.uid)
        return response(to: request, route: route, selection: selection, logger: context.logger, deferIfLoading: true)
    }

    /// The answer to a request whose release cannot answer (not installed, unusable),
    /// stamped with the default database's identity.
    private func failure(_ error: TaxonomyError, to request: Request, route: some AnyBoundRequest) -> Response {
        var response = Response()
        response.id = request.id
        response.database = provider.currentWithoutWaiting().database.identity
        response.error = error.protocolError.proto
        statistics.record(operation: route.operation, errorCode: error.protocolError.code.name)
        return response
    }

    /// Answers one request synchronously, wherever its cost says it runs: errors
    /// become typed error responses (``TaxonomyError/memoryIndexesLoading`` too:
    /// this never waits).
    public func respondNow(to request: Request, context: RequestContext) -> Response {
        let route = TaxonomyRequestTable.route(request)
        do {
            guard let selection = try provider.selection(forRelease: request.release) else {
                return failure(.noDatabase("the release \(request.release) is being opened; try again in a few seconds"),
                               to: request, route: route)
            }
            return response(to: request, route: route, selection: selection, logger: context.logger, deferIfLoading: false)!
        } catch {
            return failure(error, to: request, route: route)
        }
    }

    /// The answer from `selection`, by the request's handler; nil, with
    /// `deferIfLoading`, when it needs the in-memory indexes that are still being
    /// built (nothing is counted then).
    private func response<Route: AnyBoundRequest>(to request: Request, route: Route, selection: ActiveDatabaseProvider.Selection,
                                                 logger: Logger, deferIfLoading: Bool) -> Response? {
        var response = Response()
        response.id = request.id
        response.database = selection.database.identity
        do {
            var current = route
            // An id the source merged into another is answered as that one, and said so
            // (at most twice: compare names two ids), in the fields the handler names
            // (``TaxonomyRequestHandler/mergedIDFields``); a deleted one is TAXON_DELETED.
            for attempt in 0... {
                var context = TaxonomyRequestContext(selection: selection, service: self, logger: logger)
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
        statistics.record(operation: route.operation, errorCode: response.protocolError?.code.name)
        return response
    }
}
