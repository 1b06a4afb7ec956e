import STOLModel

/// Where a database of a given schema version keeps the eight-rank view and the
/// whole tree, as SQL fragments the queries are written with.
///
/// Schema 3 keeps one table of every node: the view is two of its columns
/// (`main_rank`, `main_parent_id`) and the whole tree is `taxa` itself. Versions 1
/// and 2 are the view alone in `taxa` (version 2 with the whole tree, nameless,
/// beside it in `tree_nodes`). Writing each query once against these fragments
/// keeps an installed schema 2 reference served until it is replaced, without a
/// second copy of the queries.
public struct TaxonomyLayout: Sendable, Equatable {
    /// Every node is a row of `taxa` (schema 3).
    public let everyNode: Bool

    public init(schemaVersion: Int) {
        everyNode = schemaVersion >= TaxonomySchema.everyNodeVersion
    }

    /// The view's rank of a row (one of the eight, or NULL for a node outside the view).
    public var mainRank: String { everyNode ? "main_rank" : "rank" }

    /// The view's parent of a row: its nearest ancestor of a main rank.
    public var mainParent: String { everyNode ? "main_parent_id" : "parent_id" }

    /// True for the rows of the view.
    public var inView: String { everyNode ? "main_rank IS NOT NULL" : "1" }

    /// The rank as the source spells it (NULL before schema 3).
    public var sourceRank: String { everyNode ? "rank" : "NULL" }

    /// The parent a single taxon is shown with: the view's parent for a taxon of the
    /// view (so that browsing stays on the eight ranks), the source's own parent
    /// for a node outside it (a strain under its species or serotype).
    public func shownParent(_ alias: String) -> String {
        everyNode ? "CASE WHEN \(alias).main_rank IS NULL THEN \(alias).parent_id ELSE \(alias).main_parent_id END"
            : "\(alias).parent_id"
    }

    /// The table of the whole tree (`id, parent_id, rank, scientific_name`), nil
    /// when the schema has none (version 1).
    public func wholeTreeTable(schemaVersion: Int) -> String? {
        everyNode ? "taxa" : schemaVersion >= TaxonomySchema.fullTreeVersion ? "tree_nodes" : nil
    }
}
