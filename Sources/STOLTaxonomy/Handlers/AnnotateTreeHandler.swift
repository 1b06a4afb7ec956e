import STOLProtocol
import STOLTransport

/// The taxon of every node of a user's tree (at most 65,536 nodes): a walk that grows
/// with the request, bulk work.
struct AnnotateTreeHandler: TaxonomyRequestHandler {
    static let operation = "annotate_tree"
    static func cost(_ body: Stol_V1_AnnotateTreeRequest) -> WorkClass { .bulk }

    static func answer(_ body: Stol_V1_AnnotateTreeRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        .annotateTree(try ComparisonQueries(database: context.database).annotateTree(body))
    }
}
