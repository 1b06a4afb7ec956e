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
    /// name or synonym (``TaxonomyError/memoryIndexesLoading`` while the in-memory
    /// names are being built). Several taxa with that name are
    /// ``TaxonomyError/ambiguousName(_:_:)`` (naming at most 16).
    func resolve(_ db: Database, _ query: String, exactNames: [String: TaxonID]?,
                 wholeTree: TaxonomyTree? = nil) throws -> TaxonID {
        if let id = TaxonIDText.id(query) {
            guard id > 0 else { throw TaxonomyError.invalidArgument("taxon ids are positive integers, got \(id)") }
            return id
        }
        guard !query.isEmpty else { throw TaxonomyError.invalidArgument("empty query") }
        let capitalised = query.prefix(1).uppercased() + query.dropFirst()
        for name in capitalised == query ? [query] : [query, capitalised] {
            let ids: [TaxonID]
            if let wholeTree {
                ids = wholeTree.nodes(named: name, limit: 16).nodes.map(wholeTree.id(at:))
            } else {
                ids = try TaxonID.fetchAll(db.cachedStatement(sql: """
                    SELECT id FROM taxa WHERE scientific_name = ?
                    AND status = (SELECT min(status) FROM taxa WHERE scientific_name = ?) ORDER BY id LIMIT 16
                    """), arguments: [name, name])
            }
            if ids.count == 1 { return ids[0] }
            if ids.count > 1 { throw TaxonomyError.ambiguousName(name, ids) }
        }
        // Common names and synonyms are folded in memory (``MemoryIndexes/exactNames``);
        // before they are built the request waits for them: folding every row of
        // `names` for one query took seconds on the full reference, a thousand times
        // in one batch.
        guard let exactNames else { throw TaxonomyError.memoryIndexesLoading }
        if let id = exactNames[SearchQuery.words(in: query).joined(separator: " ")] { return id }
        throw TaxonomyError.nameNotFound
    }

    /// The node a query names; a merged id gives the node it went to (`a_id`/`b_id`
    /// then name that taxon).
    func node(_ db: Database, _ query: String, _ tree: TaxonomyTree, _ indexes: MemoryIndexes) throws -> Int {
        let id = try resolve(db, query.trimmingBlanks, exactNames: indexes.loadedExactNames, wholeTree: indexes.wholeTree)
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
