import Foundation
import Logging
import STOLModel
import STOLProtocol
import STOLRuntime

/// `stol-taxonomyd`'s request handler: validates each request, runs it against
/// the active database, and stamps every answer with that database's identity.
public struct TaxonomyService: FramedService {
    public typealias Request = Stol_V1_TaxonomyRequest
    public typealias Response = Stol_V1_TaxonomyResponse

    public static let version = "0.1.0"

    private let provider: ActiveDatabaseProvider

    public init(provider: ActiveDatabaseProvider) {
        self.provider = provider
    }

    public func respond(to request: Request, context: RequestContext) async -> Response {
        let selection = provider.current()
        var response = Response()
        response.id = request.id
        response.database = selection.database.identity
        do {
            response.result = try answer(request, selection: selection, logger: context.logger)
        } catch let error as ProtocolErrorConvertible {
            response.error = error.protocolError.proto
        } catch {
            response.error = ProtocolError(.internal, "\(error)").proto
        }
        return response
    }

    private func answer(_ request: Request, selection: ActiveDatabaseProvider.Selection,
                        logger: Logger) throws -> Response.OneOf_Result {
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
                                                  language: Self.language(children.language)))
        case .roots(let roots):
            return .roots(try queries.roots(language: Self.language(roots.language)))
        case .ancestors(let ancestors):
            try Self.validate(id: ancestors.taxonID)
            var list = Stol_V1_TaxonList()
            list.taxa = try queries.ancestors(of: ancestors.taxonID, language: Self.language(ancestors.language))
            return .ancestors(list)
        case .search(let search):
            guard search.query.utf8.count <= ProtocolLimits.maximumQueryBytes else {
                throw TaxonomyError.invalidArgument("query longer than \(ProtocolLimits.maximumQueryBytes) bytes")
            }
            let query = SearchQuery(text: search.query, prefix: search.prefix)
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
            logger.debug("search", metadata: ["query": "\(search.query)"])
            var result = Stol_V1_SearchResponse()
            result.hits = try queries.search(query, rank: rank, limit: Int(limit), language: Self.language(search.language))
            return .search(result)
        case .detail:
            throw ProtocolError.unimplemented("taxonomy detail")
        case .compare:
            throw ProtocolError.unimplemented("compare")
        case .relatives:
            throw ProtocolError.unimplemented("closest relatives")
        case .diagnostics:
            throw ProtocolError.unimplemented("diagnostics")
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
        return status
    }

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
