import STOLProtocol

/// Every taxonomy request and its handler, each named once (as OpenSSH's privsep
/// monitor names each request it serves in one table). The switch is exhaustive,
/// so a body added to `protocol/taxonomy.proto` does not build until it has its
/// row here; everything the service does with a request it reads from the
/// handler this gives (``TaxonomyRequestHandler``).
enum TaxonomyRequestTable {
    static func route(_ request: Stol_V1_TaxonomyRequest) -> any AnyBoundRequest {
        switch request.body {
        case .status(let body)?: BoundRequest<StatusHandler>(body)
        case .getTaxon(let body)?: BoundRequest<GetTaxonHandler>(body)
        case .children(let body)?: BoundRequest<ChildrenHandler>(body)
        case .ancestors(let body)?: BoundRequest<AncestorsHandler>(body)
        case .search(let body)?: BoundRequest<SearchHandler>(body)
        case .roots(let body)?: BoundRequest<RootsHandler>(body)
        case .detail(let body)?: BoundRequest<DetailHandler>(body)
        case .compare(let body)?: BoundRequest<CompareHandler>(body)
        case .relatives(let body)?: BoundRequest<RelativesHandler>(body)
        case .diagnostics(let body)?: BoundRequest<DiagnosticsHandler>(body)
        case .lineageBatch(let body)?: BoundRequest<LineageBatchHandler>(body)
        case .compareBatch(let body)?: BoundRequest<CompareBatchHandler>(body)
        case .nameLookup(let body)?: BoundRequest<NameLookupHandler>(body)
        case .subtree(let body)?: BoundRequest<SubtreeHandler>(body)
        case .getTaxa(let body)?: BoundRequest<GetTaxaHandler>(body)
        case .diff(let body)?: BoundRequest<DiffHandler>(body)
        case .history(let body)?: BoundRequest<HistoryHandler>(body)
        case .lcaBatch(let body)?: BoundRequest<LcaBatchHandler>(body)
        case .inducedTree(let body)?: BoundRequest<InducedTreeHandler>(body)
        case .rankOrder(let body)?: BoundRequest<RankOrderHandler>(body)
        case .rankFilter(let body)?: BoundRequest<RankFilterHandler>(body)
        case .annotateTree(let body)?: BoundRequest<AnnotateTreeHandler>(body)
        case .resolveName(let body)?: BoundRequest<ResolveNameHandler>(body)
        case .descendants(let body)?: BoundRequest<DescendantsHandler>(body)
        case nil: BoundRequest<MissingBodyHandler>(request)
        }
    }
}

/// A request without a body this server knows: `INVALID_REQUEST`, or
/// `UNIMPLEMENTED` when it carries a field of a newer protocol.
struct MissingBodyHandler: TaxonomyRequestHandler {
    static let operation = "unknown"

    static func answer(_ request: Stol_V1_TaxonomyRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        throw request.missingBodyError
    }
}
