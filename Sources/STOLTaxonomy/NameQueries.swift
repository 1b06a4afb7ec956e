import GRDB
import STOLModel
import STOLProtocol

/// Names and ids as requests give them, to taxa: the one reading of a query that
/// names a taxon (``resolve(_:_:exactNames:wholeTree:)``, ``node(_:_:_:_:)``) for
/// every request that takes names (lineage batches, comparisons, common
/// ancestors, induced trees, `--within`), and `name_lookup` itself
/// (``lookUpNames(_:within:)``).
public struct NameQueries {
    let database: TaxonomyDatabase

    public init(database: TaxonomyDatabase) {
        self.database = database
    }

    var layout: TaxonomyLayout { database.layout }

    /// The id a query names: a decimal id as it is; a scientific name, as written or
    /// with its first letter capitalised, among the nodes of `wholeTree` (its name
    /// index, no query) or else among `taxa` (accepted ones first); else a common
    /// name or synonym. Several taxa with that name are
    /// ``TaxonomyError/ambiguousName(_:_:)`` (naming at most 16).
    func resolve(_ db: Database, _ query: String, exactNames: [String: TaxonID]?,
                 wholeTree: TaxonomyTree? = nil) throws -> TaxonID {
        if let id = TaxonID(query) {
            guard id > 0 else { throw TaxonomyError.invalidArgument("taxon ids are positive integers, got \(id)") }
            return id
        }
        guard !query.isEmpty else { throw TaxonomyError.invalidArgument("empty query") }
        let capitalised = query.prefix(1).uppercased() + query.dropFirst()
        for name in capitalised == query ? [query] : [query, capitalised] {
            let ids: [TaxonID]
            if let wholeTree {
                ids = wholeTree.nodes(named: name).prefix(16).map(wholeTree.id(at:))
            } else {
                ids = try TaxonID.fetchAll(db.cachedStatement(sql: """
                    SELECT id FROM taxa WHERE scientific_name = ?
                    AND status = (SELECT min(status) FROM taxa WHERE scientific_name = ?) ORDER BY id LIMIT 16
                    """), arguments: [name, name])
            }
            if ids.count == 1 { return ids[0] }
            if ids.count > 1 { throw TaxonomyError.ambiguousName(name, ids) }
        }
        let folded = SearchQuery.words(in: query).joined(separator: " ")
        if let exactNames {
            if let id = exactNames[folded] { return id }
        } else {
            for row in try Row.fetchAll(db, sql: "SELECT taxon_id, name FROM names ORDER BY is_preferred DESC, id")
            where SearchQuery.words(in: row["name"]).joined(separator: " ") == folded {
                return row["taxon_id"]
            }
        }
        throw TaxonomyError.nameNotFound
    }

    /// The node a query names; a merged id gives the node it went to (`a_id`/`b_id`
    /// then name that taxon).
    func node(_ db: Database, _ query: String, _ tree: TaxonomyTree, _ indexes: MemoryIndexes) throws -> Int {
        let id = try resolve(db, query.trimmingBlanks, exactNames: indexes.exactNames, wholeTree: indexes.wholeTree)
        if let node = tree.index(of: id) { return node }
        switch try RetiredID.lookup(db, id, in: database) {
        case .merged(let new)?:
            if let node = tree.index(of: new) { return node }
        case .deleted?:
            throw TaxonomyError.taxonDeleted(id)
        case nil:
            break
        }
        throw TaxonomyError.taxonNotFound(id)
    }
}
