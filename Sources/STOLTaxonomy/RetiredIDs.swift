import GRDB
import STOLModel

/// What became of an id the database does not hold: NCBI merges taxa (the old id
/// lives on in `merged.dmp`) and deletes others (`delnodes.dmp`); schema 2 keeps
/// both, so an old id is answered as its new taxon, or as deleted, rather than
/// "not found", as taxonkit and ete4 translate them.
public enum RetiredID: Equatable, Sendable {
    case merged(into: TaxonID)
    case deleted

    /// What `db`, a database of `schemaVersion`, records of `id`; nil when neither,
    /// or when its schema records neither (1: no `merged_ids`, no `deleted_ids`).
    static func lookup(_ db: Database, _ id: TaxonID, schemaVersion: Int) throws -> RetiredID? {
        guard schemaVersion >= TaxonomySchema.fullTreeVersion else { return nil }
        if let new = try TaxonID.fetchOne(db.cachedStatement(sql: "SELECT new_id FROM merged_ids WHERE old_id = ?"), arguments: [id]) {
            return .merged(into: new)
        }
        if try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM deleted_ids WHERE id = ?"), arguments: [id]) != nil {
            return .deleted
        }
        return nil
    }

    /// What `database` records of `id`, on one of its connections.
    static func lookup(_ db: Database, _ id: TaxonID, in database: TaxonomyDatabase) throws -> RetiredID? {
        try lookup(db, id, schemaVersion: database.schemaVersion)
    }
}
