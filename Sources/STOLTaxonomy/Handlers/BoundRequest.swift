import STOLModel
import STOLProtocol
import STOLTransport

/// One request bound to its handler (``TaxonomyRequestTable/route(_:)``): what
/// ``TaxonomyService`` asks of any request, whatever its kind.
protocol AnyBoundRequest: Sendable {
    /// The handler, for tests that check the table.
    var handler: any TaxonomyRequestHandler.Type { get }
    var operation: String { get }
    var cost: WorkClass { get }
    var answersInline: Bool { get }
    var holdsBackIdleWork: Bool { get }
    func answer(_ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result
    /// The same request with `old` replaced by `new` in its handler's
    /// ``TaxonomyRequestHandler/mergedIDFields``; nil when none of them is `old`.
    func replacingMergedID(_ old: TaxonID, with new: TaxonID) -> Self?
}

struct BoundRequest<Handler: TaxonomyRequestHandler>: AnyBoundRequest {
    let body: Handler.Body

    init(_ body: Handler.Body) { self.body = body }

    var handler: any TaxonomyRequestHandler.Type { Handler.self }
    var operation: String { Handler.operation }
    var cost: WorkClass { Handler.cost(body) }
    var answersInline: Bool { Handler.answersInline(body) }
    var holdsBackIdleWork: Bool { Handler.holdsBackIdleWork }

    func answer(_ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        try Handler.answer(body, &context)
    }

    func replacingMergedID(_ old: TaxonID, with new: TaxonID) -> Self? {
        var body = body, replaced = false
        for field in Handler.mergedIDFields where body[keyPath: field] == old {
            body[keyPath: field] = new
            replaced = true
        }
        return replaced ? Self(body) : nil
    }
}
