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

    public static let version = "0.1.0"

    private let provider: ActiveDatabaseProvider
    public let statistics = ServiceStatistics()

    public init(provider: ActiveDatabaseProvider) {
        self.provider = provider
    }

    /// Answers on the task pool. A request that needs the in-memory indexes
    /// while they are still being built (computed relatives in the seconds after
    /// a start or a switch) suspends until they are, holding no thread: blocking
    /// would take one of the pool's few threads (one per core) from every other
    /// request for that long. It is answered from the database it started with.
    public func respond(to request: Request, context: RequestContext) async -> Response {
        let selection = provider.currentWithoutWaiting()
        if let response = response(to: request, selection: selection, logger: context.logger, deferIfLoading: true) {
            return response
        }
        _ = await selection.database.loadedMemoryIndexes()
        return respondNow(to: request, selection: selection, context: context)
    }

    /// Lookups by id (taxon, children, ancestors, detail, compare, relatives,
    /// status) cost tens to hundreds of microseconds and are answered on the event
    /// loop; search, lineage batches and diagnostics go to the task pool.
    public func respondInline(to request: Request, context: RequestContext) -> Response? {
        guard isShort(request.body) else { return nil }
        return respondNow(to: request, context: context)
    }

    func isShort(_ body: Request.OneOf_Body?) -> Bool {
        switch body {
        case .status, .getTaxon, .children, .roots, .detail, nil: true
        // On the whole tree: from memory, once it is loaded (until then, wait off the event loop).
        case .ancestors(let ancestors): ancestors.ranks != .all || provider.currentWithoutWaiting().database.memoryIndexes?.fullTree != nil
        case .compare(let compare): compare.ranks != .all || provider.currentWithoutWaiting().database.memoryIndexes?.fullTree != nil
        // Relatives may be computed on the in-memory tree, which a request waits
        // for while it is still loading (seconds after a cold start).
        case .relatives(let relatives):
            relatives.ranks == .all ? false : provider.currentWithoutWaiting().database.memoryIndexes?.tree != nil
        case .search, .diagnostics, .lineageBatch, .compareBatch, .nameLookup, .subtree, .getTaxa: false
        }
    }

    /// Answers one request synchronously: errors become typed error responses
    /// (``TaxonomyError/memoryIndexesLoading`` too: this never waits).
    public func respondNow(to request: Request, context: RequestContext) -> Response {
        respondNow(to: request, selection: provider.currentWithoutWaiting(), context: context)
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
        case .nameLookup: "name_lookup"
        case .subtree: "subtree"
        case .getTaxa: "get_taxa"
        case nil: "unknown"
        }
    }

    /// The result of one request; `merged` collects the merged ids a batch
    /// answered as their new taxa (a single id's merge is handled by the caller).
    private func answer(_ request: Request, selection: ActiveDatabaseProvider.Selection,
                        logger: Logger, merged: inout [Stol_V1_MergedTaxon]) throws -> Response.OneOf_Result {
        let queries = TaxonomyQueries(database: selection.database)
        switch request.body {
        case .status:
            return .status(status(selection))
        case .getTaxon(let get):
            try Self.validate(id: get.taxonID)
            return .taxon(try queries.taxon(id: get.taxonID, language: Self.language(get.language)))
        case .children(let children):
            try Self.validate(id: children.taxonID)
            let limit = try Self.pageSize(children.limit)
            return .children(try queries.children(of: children.taxonID, offset: Int(children.offset), limit: limit,
                                                  language: Self.language(children.language), ranks: children.ranks))
        case .roots(let roots):
            return .roots(try queries.roots(language: Self.language(roots.language)))
        case .ancestors(let ancestors):
            try Self.validate(id: ancestors.taxonID)
            var list = Stol_V1_TaxonList()
            list.taxa = ancestors.ranks == .all ? try queries.ancestorsOnFullTree(of: ancestors.taxonID)
                : try queries.ancestors(of: ancestors.taxonID, language: Self.language(ancestors.language))
            return .ancestors(list)
        case .search(let search):
            guard search.query.utf8.count <= ProtocolLimits.maximumQueryBytes else {
                throw TaxonomyError.invalidArgument("query longer than \(ProtocolLimits.maximumQueryBytes) bytes")
            }
            let query = SearchQuery(text: search.query, prefix: search.prefix, phrase: search.phrase)
            guard !query.isEmpty else {
                throw TaxonomyError.invalidArgument("the query has no letters or digits to search for")
            }
            let limit = search.limit == 0 ? ProtocolLimits.defaultSearchLimit : search.limit
            guard limit <= ProtocolLimits.maximumSearchLimit else {
                throw TaxonomyError.invalidArgument("limit must be at most \(ProtocolLimits.maximumSearchLimit)")
            }
            let rank: TaxonRank?
            if search.rank == .unspecified {
                rank = nil
            } else if let modelRank = TaxonomyQueries.modelRank(search.rank) {
                rank = modelRank
            } else {
                throw TaxonomyError.invalidArgument("unknown rank \(search.rank.rawValue)")
            }
            let statuses = Set(search.conservation.map { $0.uppercased() })
            guard statuses.isSubset(of: Self.conservationCodes) else {
                throw TaxonomyError.invalidArgument("conservation codes are \(Self.conservationCodes.sorted().joined(separator: ", "))")
            }
            logger.debug("search", metadata: ["query": "\(search.query)"])
            var result = Stol_V1_SearchResponse()
            let options = SearchOptions(rank: rank, conservation: statuses, limit: Int(limit),
                                        language: Self.language(search.language), fuzzy: !search.noFuzzy)
            result.hits = try SearchEngine(queries: queries).search(query, options: options)
            return .search(result)
        case .detail(let detail):
            try Self.validate(id: detail.taxonID)
            return .detail(try queries.detail(of: detail.taxonID, language: Self.language(detail.language)))
        case .compare(let compare):
            try Self.validate(id: compare.taxonA)
            try Self.validate(id: compare.taxonB)
            if compare.ranks == .all { return .compare(try queries.compareOnFullTree(compare.taxonA, compare.taxonB)) }
            var answer = try queries.compare(compare.taxonA, compare.taxonB, language: Self.language(compare.language))
            if answer.hasDistance { answer.distanceMain = answer.distance }
            // The main-rank distance is the view's own (a strain counts as one step below
            // its species, as in its main-rank lineage); NCBI's edges come from the whole tree.
            if let both = queries.distancesOnFullTree(compare.taxonA, compare.taxonB) {
                if !answer.hasDistance { answer.distanceMain = both.main }
                answer.distanceAll = both.all
            }
            return .compare(answer)
        case .relatives(let relatives):
            try Self.validate(id: relatives.taxonID)
            let n = relatives.n == 0 ? 10 : Int(relatives.n)
            guard n <= 100 else { throw TaxonomyError.invalidArgument("n must be 1…100") }
            let guardLimit = relatives.maxCandidates == 0 ? TaxonomyQueries.defaultMaximumCandidates : Int(relatives.maxCandidates)
            if relatives.ranks == .all {
                return .relatives(try queries.relativesOnFullTree(of: relatives.taxonID, n: n, maximumCandidates: guardLimit))
            }
            return .relatives(try queries.relatives(of: relatives.taxonID, n: n, computed: relatives.computed,
                                                    maximumCandidates: guardLimit,
                                                    language: Self.language(relatives.language)))
        case .diagnostics:
            var diagnostics = Stol_V1_DiagnosticsResponse()
            diagnostics.report = DiagnosticsReport(selection: selection, statistics: statistics, serverVersion: Self.version).text
            return .diagnostics(diagnostics)
        case .lineageBatch(let batch):
            guard batch.queries.count <= TaxonomyQueries.maximumBatchQueries else {
                throw TaxonomyError.invalidArgument("at most \(TaxonomyQueries.maximumBatchQueries) queries per batch")
            }
            return .lineageBatch(try queries.lineageBatch(batch.queries, language: Self.language(batch.language),
                                                          ranks: batch.ranks, form: batch.form))
        case .compareBatch(let batch):
            guard batch.pairs.count <= TaxonomyQueries.maximumBatchQueries else {
                throw TaxonomyError.invalidArgument("at most \(TaxonomyQueries.maximumBatchQueries) pairs per batch")
            }
            return .compareBatch(try queries.compareBatch(batch.pairs, ranks: batch.ranks))
        case .nameLookup(let lookup):
            guard lookup.names.count <= TaxonomyQueries.maximumBatchQueries else {
                throw TaxonomyError.invalidArgument("at most \(TaxonomyQueries.maximumBatchQueries) names per request")
            }
            return .nameLookup(try queries.lookUpNames(lookup.names))
        case .getTaxa(let get):
            guard get.taxonIds.count <= TaxonomyQueries.maximumBatchQueries else {
                throw TaxonomyError.invalidArgument("at most \(TaxonomyQueries.maximumBatchQueries) ids per request")
            }
            for id in get.taxonIds { try Self.validate(id: id) }
            let answer = try queries.taxa(ids: get.taxonIds, language: Self.language(get.language))
            merged.append(contentsOf: answer.merged)
            return .taxa(answer.response)
        case .subtree(let subtree):
            try Self.validate(id: subtree.taxonID)
            let maximum = subtree.maxTaxa == 0 ? TaxonomyQueries.defaultSubtreeTaxa : Int(subtree.maxTaxa)
            guard maximum <= TaxonomyQueries.maximumSubtreeTaxa else {
                throw TaxonomyError.invalidArgument("max_taxa must be at most \(TaxonomyQueries.maximumSubtreeTaxa)")
            }
            return .subtree(try queries.subtree(of: subtree.taxonID, ranks: subtree.ranks, maximumTaxa: maximum))
        case nil:
            throw request.missingBodyError
        }
    }

    private func status(_ selection: ActiveDatabaseProvider.Selection) -> Stol_V1_StatusResponse {
        var status = Stol_V1_StatusResponse()
        status.active = selection.database.identity
        status.activePath = selection.database.path
        status.taxaCount = UInt64(selection.database.taxaCount)
        status.sizeBytes = selection.database.sizeBytes
        status.referencePresent = selection.referencePresent
        status.referenceRequested = selection.referenceRequested
        status.fallbackReason = selection.fallbackReason ?? ""
        status.serverVersion = Self.version
        let database = selection.database
        status.speciesCount = UInt64(database.speciesCount)
        status.namesCount = UInt64(database.namesCount)
        status.bundledPath = provider.bundledPath
        status.bundledSizeBytes = FileStat(path: provider.bundledPath)?.size ?? 0
        status.referencePath = provider.referencePath
        status.referenceSizeBytes = FileStat(path: provider.referencePath)?.size ?? 0
        status.precomputedRelatives = UInt32(database.precomputedRelatives)
        status.treeLoaded = database.memoryIndexes?.tree != nil
        status.fullTreeNodes = UInt64(database.fullTreeCount)
        status.fullTreeLoaded = database.memoryIndexes?.fullTree != nil
        return status
    }

    /// IUCN Red List categories (`protocol/PROTOCOL.md` §4, `conservation`).
    static let conservationCodes: Set<String> = ["LC", "NT", "VU", "EN", "CR", "EW", "EX", "NE", "DD"]

    static func validate(id: Int64) throws {
        guard id > 0 else { throw TaxonomyError.invalidArgument("taxon ids are positive integers, got \(id)") }
    }

    static func pageSize(_ requested: UInt32) throws -> Int {
        if requested == 0 { return Int(ProtocolLimits.defaultPageSize) }
        guard requested <= ProtocolLimits.maximumPageSize else {
            throw TaxonomyError.invalidArgument("limit must be at most \(ProtocolLimits.maximumPageSize)")
        }
        return Int(requested)
    }

    static func language(_ requested: String) -> String {
        requested.isEmpty ? "en" : requested
    }
}
