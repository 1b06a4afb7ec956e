import GRDB
import STOLModel

/// How much a taxonomy database holds, counted once when it is opened: what
/// `status` reports, and whether it has precomputed relatives and a whole tree.
/// A record of named columns, read in one statement. Each count here is cheap (an
/// index's size, a few rows); the species, which walk 2.1 M index entries of NCBI's
/// (73 ms of each start), are counted when first asked (``TaxonomyDatabase/speciesCount``).
struct DatabaseCounts: FetchableRecord, Equatable {
    /// Rows of `taxa`: every node in schema 3, the eight-rank view before.
    var taxa: Int
    var names: Int
    /// Rows per species in `top_n_relatives` (the pipeline's N; 0 when empty).
    var precomputedRelatives: Int
    /// Nodes of the source's whole tree (schema 3 `taxa`, schema 2 `tree_nodes`): 0
    /// when the database keeps only the main ranks (schema 1, or a schema 2 build
    /// without the tree).
    var wholeTreeNodes: Int

    init(row: Row) {
        taxa = row["taxa"]
        names = row["names"]
        precomputedRelatives = row["precomputed_relatives"]
        wholeTreeNodes = row["whole_tree_nodes"]
    }

    /// The counts of the database `db` is connected to, of schema `version`.
    static func fetch(_ db: Database, schemaVersion version: Int) throws -> DatabaseCounts {
        let layout = TaxonomyLayout(schemaVersion: version)
        // Schema 3's whole tree is `taxa` itself: counted once.
        let wholeTree = switch layout.wholeTreeTable(schemaVersion: version) {
        case "taxa"?: "taxa"
        case let table?: "(SELECT count(*) FROM \(table))"
        case nil: "0"
        }
        // rank_order runs 1…N for every species that has N relatives or more.
        let counts = try DatabaseCounts.fetchOne(db, sql: """
            WITH counts AS (SELECT
                (SELECT count(*) FROM taxa) AS taxa,
                (SELECT count(*) FROM names) AS names,
                (SELECT count(*) FROM top_n_relatives WHERE taxon_id =
                    (SELECT taxon_id FROM top_n_relatives WHERE rank_order = 1 LIMIT 1)) AS precomputed_relatives)
            SELECT *, \(wholeTree) AS whole_tree_nodes FROM counts
            """)
        return counts!  // an aggregate answers one row
    }
}
