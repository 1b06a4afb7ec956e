import STOLModel
import STOLProtocol

/// Typed failures of the read path, each with its wire code.
public enum TaxonomyError: Error, Equatable, ProtocolErrorConvertible {
    case taxonNotFound(TaxonID)
    case invalidArgument(String)
    /// Closest relatives are defined for species only (seeds/001 §10.4).
    case notASpecies(TaxonID, rank: String)
    /// A name in a lineage batch that matches no taxon exactly.
    case nameNotFound
    case databaseUnusable(path: String, reason: String)
    case noDatabase(String)
    case query(String)

    public var protocolError: ProtocolError {
        switch self {
        case .taxonNotFound(let id):
            ProtocolError(.notFound, "no taxon with id \(id) in the active database", details: ["taxon_id": String(id)])
        case .invalidArgument(let detail):
            ProtocolError(.invalidRequest, detail)
        case .notASpecies(let id, let rank):
            ProtocolError(.invalidRequest, "taxon \(id) is a \(rank); closest relatives are computed for species",
                          details: ["taxon_id": String(id)])
        case .nameNotFound:
            ProtocolError(.notFound, "no taxon has exactly this scientific or common name")
        case .databaseUnusable(let path, let reason):
            ProtocolError(.unavailable, "taxonomy database \(path) is unusable: \(reason)")
        case .noDatabase(let detail):
            ProtocolError(.unavailable, detail)
        case .query(let detail):
            ProtocolError(.internal, "query failed: \(detail)")
        }
    }
}
