import STOLModel
import STOLProtocol

/// Typed failures of the read path, each with its wire code.
public enum TaxonomyError: Error, Equatable, ProtocolErrorConvertible {
    case taxonNotFound(TaxonID)
    case invalidArgument(String)
    /// An option the domain rules refuse (an unknown rank, a bad lineage template), with
    /// the field and value it concerns in `details`.
    case invalidOption(String, details: [String: String])
    /// Closest relatives are defined for species only (docs/design/queries-and-algorithms.md §5).
    case notASpecies(TaxonID, rank: String)
    /// A name in a lineage batch that matches no taxon exactly.
    case nameNotFound
    case databaseUnusable(path: String, reason: String)
    case noDatabase(String)
    /// The answer needs the in-memory indexes, still being built after a start
    /// or a switch. ``TaxonomyService/respond(to:context:)`` waits for them and
    /// answers; only a synchronous caller ever sees this.
    case memoryIndexesLoading
    /// An id the source deleted (NCBI `delnodes.dmp`).
    case taxonDeleted(TaxonID)
    /// `--ranks all` on a database that keeps only the eight main ranks.
    case fullTreeAbsent
    /// A name that fits several taxa, where one was needed.
    case ambiguousName(String, [TaxonID])
    /// The taxon a search is limited to (`within`) names nothing.
    case withinNotFound(String)
    /// A request pinned a release that is not installed (`installed`: the ones that are).
    case releaseNotInstalled(String, installed: [String])
    /// A request that would pass a cap of what one request may examine
    /// (protocol/PROTOCOL.md §9): the message says which, `details["limit"]` its value.
    case limitExceeded(String, limit: Int)
    /// The task answering the request was cancelled: its client closed the connection
    /// (``checkCancellation()``). Never sent: nobody is left to read it.
    case cancelled
    case query(String)

    /// Throws ``cancelled`` once the answering task is cancelled. Called between the
    /// items of every loop a request may run long (a batch's queries, a tree's nodes),
    /// so that a client that leaves stops its work at the next item, not at the end.
    @inline(__always)
    static func checkCancellation() throws(TaxonomyError) {
        if Task.isCancelled { throw .cancelled }
    }

    public var protocolError: ProtocolError {
        switch self {
        case .taxonNotFound(let id):
            ProtocolError(.notFound, "no taxon with id \(id) in the active database", details: ["taxon_id": String(id)])
        case .invalidArgument(let detail):
            ProtocolError(.invalidRequest, detail)
        case .invalidOption(let detail, let details):
            ProtocolError(.invalidRequest, detail, details: details)
        case .notASpecies(let id, let rank):
            ProtocolError(.invalidRequest, "taxon \(id) is a \(rank); closest relatives are computed for species",
                          details: ["taxon_id": String(id)])
        case .nameNotFound:
            ProtocolError(.notFound, "no taxon has exactly this scientific or common name")
        case .withinNotFound(let text):
            ProtocolError(.notFound, "within: no taxon has the id or exact name '\(text.prefix(80))'")
        case .databaseUnusable(let path, let reason):
            ProtocolError(.unavailable, "taxonomy database \(path) is unusable: \(reason)")
        case .noDatabase(let detail):
            ProtocolError(.unavailable, detail)
        case .memoryIndexesLoading:
            ProtocolError(.unavailable, "the in-memory tree is still being built; try again in a few seconds")
        case .taxonDeleted(let id):
            ProtocolError(.taxonDeleted, "taxon \(id) was deleted from NCBI (delnodes.dmp); it names no taxon any more",
                          details: ["taxon_id": String(id)])
        case .fullTreeAbsent:
            ProtocolError(.invalidRequest, "the active database keeps only the eight main ranks (it was built without "
                          + "the whole tree); ask with --ranks main, or activate a reference database that has it",
                          details: ["ranks": "main"])
        case .ambiguousName(let name, let ids):
            ProtocolError(.invalidRequest, "the name \(name) fits \(ids.count) taxa (\(ids.map(String.init).joined(separator: ", "))); "
                          + "ask by id", details: ["taxon_ids": ids.map(String.init).joined(separator: ",")])
        case .releaseNotInstalled(let release, let installed):
            ProtocolError(.releaseNotInstalled, "the release \(release.prefix(80)) is not installed (installed: "
                          + (["bundled"] + installed).joined(separator: ", ") + ")", details: ["release": String(release.prefix(80))])
        case .limitExceeded(let detail, let limit):
            ProtocolError(.invalidRequest, detail, details: ["limit": String(limit)])
        case .cancelled:
            ProtocolError(.unavailable, "the request was cancelled")
        case .query(let detail):
            ProtocolError(.internal, "query failed: \(detail)")
        }
    }
}
