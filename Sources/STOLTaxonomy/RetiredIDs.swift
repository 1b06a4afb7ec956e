import GRDB
import STOLModel

/// What became of an id the database does not hold: NCBI merges taxa (the old id
/// lives on in `merged.dmp`) and deletes others (`delnodes.dmp`); schema 2 keeps
/// both, so an old id is answered as its new taxon, or as deleted, rather than
/// "not found", as taxonkit and ete4 translate them.
public enum RetiredID: Equatable, Sendable {
    case merged(into: TaxonID)
    case deleted

    /// What `db` (of schema 2 or later: it has `merged_ids` and `deleted_ids`) records of
    /// `id`; nil when neither.
    static func lookup(_ db: Database, _ id: TaxonID) throws -> RetiredID? {
        if let new = try TaxonID.fetchOne(db.cachedStatement(sql: "SELECT new_id FROM merged_ids WHERE old_id = ?"), arguments: [id]) {
            return .merged(into: new)
        }
        if try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM deleted_ids WHERE id = ?"), arguments: [id]) != nil {
            return .deleted
        }
        return nil
    }
}

extension TaxonomyQueries {
    /// Nil when the id was neither merged nor deleted (or the database is of schema 1).
    public func retired(_ id: TaxonID) throws(TaxonomyError) -> RetiredID? {
        guard database.schemaVersion >= TaxonomySchema.fullTreeVersion else { return nil }
        return try database.read { db in try retired(db, id) }
    }

    func retired(_ db: Database, _ id: TaxonID) throws -> RetiredID? {
        guard database.schemaVersion >= TaxonomySchema.fullTreeVersion else { return nil }
        return try RetiredID.lookup(db, id)
    }
}
