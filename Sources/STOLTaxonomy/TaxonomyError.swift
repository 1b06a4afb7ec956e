import STOLModel
import STOLProtocol

/// Typed failures of the read path, each with its wire code.
public enum TaxonomyError: Error, Equatable, ProtocolErrorConvertible {
    case taxonNotFound(TaxonID)
    case invalidArgument(String)
    case databaseUnusable(path: String, reason: String)
    case noDatabase(String)
    case query(String)

    public var protocolError: ProtocolError {
        switch self {
        case .taxonNotFound(let id):
            ProtocolError(.notFound, "no taxon with id \(id) in the active database", details: ["taxon_id": String(id)])
        case .invalidArgument(let detail):
            ProtocolError(.invalidRequest, detail)
        case .databaseUnusable(let path, let reason):
            ProtocolError(.unavailable, "taxonomy database \(path) is unusable: \(reason)")
        case .noDatabase(let detail):
            ProtocolError(.unavailable, detail)
        case .query(let detail):
            ProtocolError(.internal, "query failed: \(detail)")
        }
    }
}
