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
    /// Where bulk requests run, below everyone's lookups (``isBulk(_:)``).
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
        let selection: ActiveDatabaseProvider.Selection
        do {
            // A pinned release that is not open yet is opened meanwhile (this task
            // suspends, holding no thread and no share).
            selection = try await provider.pinnedSelection(request.release)
        } catch {
            return failure(error, to: request)
        }
        let logger = context.logger
        let isBulk = isBulk(request.body)
        /// On a bulk thread for bulk work (``BulkExecutor``), paced (``BulkPacer``); here otherwise.
        func answer(deferIfLoading: Bool) async -> Response? {
            guard isBulk else { return response(to: request, selection: selection, logger: logger, deferIfLoading: deferIfLoading) }
            let start = ContinuousClock.now
            defer { pacer.charge(uid, from: start, to: .now) }
            return await bulk.run { [self] in response(to: request, selection: selection, logger: logger, deferIfLoading: deferIfLoading) }
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
    public func encoding<Encoded: Sendable>(_ response: Response, context: RequestContext,
                                            _ encode: @escaping @Sendable () -> Encoded) async -> Encoded {
        switch response.result {
        case .lineageBatch?, .compareBatch?, .lcaBatch?, .inducedTree?, .nameLookup?, .subtree?, .taxa?, .diagnostics?, .diff?: break
        case .relatives(let relatives)? where relatives.relatives.count > 20: break
        default: return encode()
        }
        let start = ContinuousClock.now
        defer { pacer.charge(context.peer.uid, from: start, to: .now) }
        return await bulk.run(encode)
    }

    /// Whether the request's handler runs it as bulk work (``TaxonomyRequestHandler/isBulk(_:)``).
    func isBulk(_ body: Request.OneOf_Body?) -> Bool {
        switch body {
        case .relatives(let body): return RelativesHandler.isBulk(body)
        case .subtree(let body): return SubtreeHandler.isBulk(body)
        case .getTaxa(let body): return GetTaxaHandler.isBulk(body)
        case .lineageBatch(let body): return LineageBatchHandler.isBulk(body)
        case .compareBatch(let body): return CompareBatchHandler.isBulk(body)
        case .lcaBatch(let body): return LcaBatchHandler.isBulk(body)
        case .inducedTree(let body): return InducedTreeHandler.isBulk(body)
        case .nameLookup(let body): return NameLookupHandler.isBulk(body)
        case .diagnostics(let body): return DiagnosticsHandler.isBulk(body)
        case .diff(let body): return DiffHandler.isBulk(body)
        default: return false
        }
    }

    /// Lookups by id (taxon, children, ancestors, detail, compare, relatives,
    /// status) cost tens to hundreds of microseconds and are answered on the event
    /// loop; search, lineage batches and diagnostics go to the task pool.
    public func respondInline(to request: Request, context: RequestContext) -> Response? {
        let selection: ActiveDatabaseProvider.Selection
        do {
            // nil: a pinned release still opening; the task pool waits for it.
            guard let found = try provider.selection(forRelease: request.release) else { return nil }
            selection = found
        } catch {
            return failure(error, to: request)
        }
        guard isShort(request.body, database: selection.database) else { return nil }
        pacer.noteActivity(of: context.peer.uid)
        return respondNow(to: request, selection: selection, context: context)
    }

    /// The answer to a request whose release cannot answer (not installed, unusable),
    /// stamped with the default database's identity.
    private func failure(_ error: TaxonomyError, to request: Request) -> Response {
        var response = Response()
        response.id = request.id
        response.database = provider.currentWithoutWaiting().database.identity
        response.error = error.protocolError.proto
        statistics.record(operation: Self.operation(request.body), errorCode: error.protocolError.code.name)
        return response
    }

    /// Whether the request's handler answers it on the event loop (``TaxonomyRequestHandler/runsInline(_:database:)``).
    func isShort(_ body: Request.OneOf_Body?, database: TaxonomyDatabase) -> Bool {
        switch body {
        case nil: return true
        case .status(let body): return StatusHandler.runsInline(body, database: database)
        case .getTaxon(let body): return GetTaxonHandler.runsInline(body, database: database)
        case .children(let body): return ChildrenHandler.runsInline(body, database: database)
        case .roots(let body): return RootsHandler.runsInline(body, database: database)
        case .detail(let body): return DetailHandler.runsInline(body, database: database)
        case .getTaxa(let body): return GetTaxaHandler.runsInline(body, database: database)
        case .ancestors(let body): return AncestorsHandler.runsInline(body, database: database)
        case .compare(let body): return CompareHandler.runsInline(body, database: database)
        case .relatives(let body): return RelativesHandler.runsInline(body, database: database)
        case .subtree(let body): return SubtreeHandler.runsInline(body, database: database)
        case .search(let body): return SearchHandler.runsInline(body, database: database)
        case .lineageBatch(let body): return LineageBatchHandler.runsInline(body, database: database)
        case .compareBatch(let body): return CompareBatchHandler.runsInline(body, database: database)
        case .lcaBatch(let body): return LcaBatchHandler.runsInline(body, database: database)
        case .inducedTree(let body): return InducedTreeHandler.runsInline(body, database: database)
        case .nameLookup(let body): return NameLookupHandler.runsInline(body, database: database)
        case .diagnostics(let body): return DiagnosticsHandler.runsInline(body, database: database)
        case .diff(let body): return DiffHandler.runsInline(body, database: database)
        case .history(let body): return HistoryHandler.runsInline(body, database: database)
        }
    }

    /// Answers one request synchronously: errors become typed error responses
    /// (``TaxonomyError/memoryIndexesLoading`` too: this never waits).
    public func respondNow(to request: Request, context: RequestContext) -> Response {
        do {
            guard let selection = try provider.selection(forRelease: request.release) else {
                return failure(.noDatabase("the release \(request.release) is being opened; try again in a few seconds"), to: request)
            }
            return respondNow(to: request, selection: selection, context: context)
        } catch {
            return failure(error, to: request)
        }
    }

    func respondNow(to request: Request, selection: ActiveDatabaseProvider.Selection, context: RequestContext) -> Response {
        response(to: request, selection: selection, logger: context.logger, deferIfLoading: false)!
    }

    /// The answer from `selection`; nil, with `deferIfLoading`, when it needs
    /// the in-memory indexes that are still being built (nothing is counted then).
    private func response(to request: Request, selection: ActiveDatabaseProvider.Selection, logger: Logger,
                          deferIfLoading: Bool) -> Response? {
        var response = Response()
        response.id = request.id
        response.database = selection.database.identity
        do {
            var current = request
            // An id the source merged into another is answered as that one, and said so
            // (at most twice: compare names two ids); a deleted one is TAXON_DELETED.
            for attempt in 0... {
                do {
                    response.result = try answer(current, selection: selection, logger: logger, merged: &response.merged)
                    break
                } catch TaxonomyError.taxonNotFound(let id) where attempt < 2 {
                    switch try TaxonomyQueries(database: selection.database).retired(id) {
                    case .merged(let new)?:
                        current = current.replacingTaxonID(id, with: new)
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
        statistics.record(operation: Self.operation(request.body), errorCode: response.protocolError?.code.name)
        return response
    }

    /// The operation's name for the request counts (never its arguments).
    static func operation(_ body: Request.OneOf_Body?) -> String {
        switch body {
        case .status: "status"
        case .getTaxon: "get_taxon"
        case .children: "children"
        case .ancestors: "ancestors"
        case .search: "search"
        case .roots: "roots"
        case .detail: "detail"
        case .compare: "compare"
        case .relatives: "relatives"
        case .diagnostics: "diagnostics"
        case .lineageBatch: "lineage_batch"
        case .compareBatch: "compare_batch"
        case .lcaBatch: "lca_batch"
        case .inducedTree: "induced_tree"
        case .nameLookup: "name_lookup"
        case .subtree: "subtree"
        case .getTaxa: "get_taxa"
        case .diff: "diff"
        case .history: "history"
        case nil: "unknown"
        }
    }

    /// The result of one request, from its handler (one per request body, in
    /// `Handlers/`); `merged` collects the merged ids a batch answered as their
    /// new taxa (a single id's merge is handled by the caller).
    private func answer(_ request: Request, selection: ActiveDatabaseProvider.Selection,
                        logger: Logger, merged: inout [Stol_V1_MergedTaxon]) throws -> Response.OneOf_Result {
        var context = TaxonomyRequestContext(selection: selection, service: self, logger: logger)
        defer { merged.append(contentsOf: context.merged) }
        switch request.body {
        case .status(let body): return try StatusHandler.answer(body, &context)
        case .getTaxon(let body): return try GetTaxonHandler.answer(body, &context)
        case .children(let body): return try ChildrenHandler.answer(body, &context)
        case .roots(let body): return try RootsHandler.answer(body, &context)
        case .detail(let body): return try DetailHandler.answer(body, &context)
        case .getTaxa(let body): return try GetTaxaHandler.answer(body, &context)
        case .ancestors(let body): return try AncestorsHandler.answer(body, &context)
        case .compare(let body): return try CompareHandler.answer(body, &context)
        case .relatives(let body): return try RelativesHandler.answer(body, &context)
        case .subtree(let body): return try SubtreeHandler.answer(body, &context)
        case .search(let body): return try SearchHandler.answer(body, &context)
        case .lineageBatch(let body): return try LineageBatchHandler.answer(body, &context)
        case .compareBatch(let body): return try CompareBatchHandler.answer(body, &context)
        case .lcaBatch(let body): return try LcaBatchHandler.answer(body, &context)
        case .inducedTree(let body): return try InducedTreeHandler.answer(body, &context)
        case .nameLookup(let body): return try NameLookupHandler.answer(body, &context)
        case .diagnostics(let body): return try DiagnosticsHandler.answer(body, &context)
        case .diff(let body): return try DiffHandler.answer(body, &context)
        case .history(let body): return try HistoryHandler.answer(body, &context)
        case nil: throw request.missingBodyError
        }
    }
}
