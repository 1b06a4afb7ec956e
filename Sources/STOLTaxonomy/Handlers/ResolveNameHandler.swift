import STOLProtocol
import STOLTransport

/// One taxon for what a person typed (``NameResolver``): up to two searches, on the task pool.
struct ResolveNameHandler: TaxonomyRequestHandler {
    static let operation = "resolve_name"
    static func cost(_ body: Stol_V1_ResolveNameRequest) -> WorkClass { .interactive }

    static func answer(_ body: Stol_V1_ResolveNameRequest, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result {
        context.logger.debug("resolve_name", metadata: ["text": "\(body.text)"])
        let language = try RequestChecks.language(body.language, in: context.database)
        return .resolveName(try NameResolver(database: context.database).resolve(body, language: language))
    }
}
