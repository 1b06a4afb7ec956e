import STOLProtocol

/// Why a favourites operation failed, mapped onto the wire's stable error codes.
///
/// Messages travel back to the caller only (who already knows their own ids), so
/// they may name the taxon id; the service never logs them above debug level.
public enum FavoritesError: Error, Equatable, Sendable, ProtocolErrorConvertible {
    /// The id is not a positive integer that every client can represent exactly
    /// (JSON and JavaScript numbers stop being exact above 2^53).
    case invalidTaxonID(Int64)
    /// The user already keeps ``FavoritesStore/maximumFavorites`` favourites.
    /// The cap keeps one user from filling the shared state directory and keeps
    /// the whole list answerable in one response frame.
    case limitReached(Int)
    /// The file was written by a newer daemon (a downgrade). It is left untouched
    /// rather than "repaired", so upgrading again brings the favourites back.
    case unsupportedSchemaVersion(Int)
    /// A merged entry's time is not in the form the daemon writes.
    case invalidTimestamp(taxonID: Int64, String)
    /// A backed-up file to restore is not a favourites file of this service
    /// (damaged, another SQLite database, other columns, bad rows).
    case invalidBackup(String)
    /// Backup and restore cover every user's favourites: root only.
    case notRoot(operation: String)
    /// SQLite or the file system failed (disk full, I/O error, permissions).
    case storageFailure(String)

    /// The largest accepted taxon id, 2^53.
    public static let maximumTaxonID: Int64 = 1 << 53

    public var protocolError: ProtocolError {
        switch self {
        case .invalidTaxonID(let id):
            ProtocolError(.invalidRequest, "taxon id \(id) is out of range (1...\(Self.maximumTaxonID))")
        case .limitReached(let limit):
            ProtocolError(.invalidRequest, "you already keep the maximum of \(limit) favourites; remove some first",
                          details: ["limit": "\(limit)"])
        case .invalidTimestamp(let id, let text):
            ProtocolError(.invalidRequest, "the time of favourite \(id) is \"\(text.prefix(40))\", not YYYY-MM-DDTHH:MM:SS.mmmZ (UTC)",
                          details: ["taxon_id": "\(id)"])
        case .invalidBackup(let reason):
            ProtocolError(.invalidRequest, "not a favourites backup of this service: \(reason); nothing was restored")
        case .notRoot(let operation):
            ProtocolError(.permissionDenied, "only root may \(operation): it covers every user's favourites")
        case .unsupportedSchemaVersion(let version):
            ProtocolError(.internal, "the favourites file has schema version \(version), newer than this daemon supports")
        case .storageFailure(let reason):
            ProtocolError(.internal, "favourites storage failed: \(reason)")
        }
    }
}
