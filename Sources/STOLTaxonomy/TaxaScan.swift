import GRDB
import STOLModel

/// What ``MemoryIndexes`` reads of the taxa: the one in-memory tree (every node,
/// with the eight-rank view), the taxa with an IUCN status and the names of the
/// taxa above species.
///
/// Schema 3 keeps every node in one table, so one pass in id order feeds all of
/// them, and the tree's name order comes from `idx_taxa_name` (an index-only scan)
/// instead of a sort of 2.6 M names. Schemas 1 and 2 are read as they were
/// written: schema 2's whole tree from `tree_nodes` with the view from `taxa`,
/// schema 1's tree from `taxa` alone (the eight ranks are then the whole tree).
struct TaxaScan {
    var tree: TaxonomyTree?
    var treeProblem: String?
    /// Whether ``tree`` holds the source's whole tree (schemas 2 and 3).
    var holdsWholeTree = false
    /// IUCN code and the words of the scientific name of every taxon with a status.
    var conservation: [TaxonID: String] = [:]
    var conservedWords: [TaxonID: Set<String>] = [:]
    /// Taxa of a main rank above species: id, the words of the scientific name, rank level.
    var higher: [(id: TaxonID, words: [String], level: Int)] = []

    static func read(_ db: Database, layout: TaxonomyLayout) throws -> TaxaScan {
        layout.everyNode ? try oneTable(db) : try separately(db, layout: layout)
    }

    /// Schema 3: one pass over `taxa` in id order, one over `idx_taxa_name`.
    private static func oneTable(_ db: Database) throws -> TaxaScan {
        var scan = TaxaScan()
        scan.holdsWholeTree = true
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa") ?? 0
        var builder = TaxonomyTree.Builder(capacity: count)
        var buildError: Error?
        let rows = try Row.fetchCursor(db, sql: """
            SELECT id, parent_id, rank, scientific_name, main_rank, main_parent_id, conservation FROM taxa ORDER BY id
            """)
        while let row = try rows.next() {
            let id: TaxonID = row[0]
            let name: String = row[3]
            let mainRank = (row[4] as String?).flatMap(TaxonRank.init(rawValue:))
            if buildError == nil {
                do {
                    try builder.append(id: id, parentID: row[1], rank: row[2], name: name.utf8,
                                       mainRank: mainRank, mainParentID: row[5])
                } catch {
                    buildError = error
                }
            }
            if let level = mainRank?.level, level < TaxonRank.species.level {
                scan.higher.append((id, SearchQuery.words(in: name), level))
            }
            if let status: String = row[6] {
                scan.conservation[id] = status
                scan.conservedWords[id] = Set(SearchQuery.words(in: name))
            }
        }
        // Name order (bytes, then id: SQLite's BINARY collation), from the index.
        let ordered = try TaxonID.fetchCursor(db, sql: "SELECT id FROM taxa INDEXED BY idx_taxa_name ORDER BY scientific_name, id")
        do {
            if let buildError { throw buildError }
            try builder.setNameOrder { () -> TaxonID? in try? ordered.next() }
            scan.tree = try builder.build()
        } catch {
            scan.treeProblem = "\(error)"
        }
        return scan
    }

    /// Schemas 1 and 2: statuses and higher taxa from `taxa`; the tree from
    /// `tree_nodes` (the view's ranks and parents from `taxa`) or from `taxa` alone.
    private static func separately(_ db: Database, layout: TaxonomyLayout) throws -> TaxaScan {
        var scan = TaxaScan()
        let statuses = try Row.fetchCursor(db, sql: "SELECT id, conservation, scientific_name FROM taxa WHERE conservation IS NOT NULL")
        while let row = try statuses.next() {
            scan.conservation[row[0]] = row[1]
            scan.conservedWords[row[0]] = Set(SearchQuery.words(in: row[2]))
        }
        let higher = try Row.fetchCursor(db, sql: """
            SELECT id, scientific_name, \(layout.mainRank) FROM taxa
            WHERE \(layout.mainRank) IN ('domain','kingdom','phylum','class','order','family','genus')
            """)
        while let row = try higher.next() {
            if let level = TaxonRank(rawValue: row[2])?.level, level < TaxonRank.species.level {
                scan.higher.append((row[0], SearchQuery.words(in: row[1]), level))
            }
        }
        let whole = try db.tableExists("tree_nodes") && (try Int.fetchOne(db, sql: "SELECT count(*) FROM tree_nodes") ?? 0) > 0
        do {
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(whole ? "tree_nodes" : "taxa")") ?? 0
            var builder = TaxonomyTree.Builder(capacity: count)
            // Schema 2: every node of `tree_nodes`, with its place in the view from
            // `taxa` (and a taxon of `taxa` that `tree_nodes` lacks, under its view parent).
            let sql = whole ? """
                SELECT n.id, n.parent_id, n.rank, n.scientific_name, t.rank, t.parent_id
                FROM tree_nodes n LEFT JOIN taxa t ON t.id = n.id
                UNION ALL
                SELECT t.id, t.parent_id, t.rank, t.scientific_name, t.rank, t.parent_id
                FROM taxa t WHERE t.id NOT IN (SELECT id FROM tree_nodes)
                ORDER BY 1
                """ : "SELECT id, parent_id, rank, scientific_name, rank, parent_id FROM taxa ORDER BY id"
            let rows = try Row.fetchCursor(db, sql: sql)
            while let row = try rows.next() {
                let name: String = row[3]
                try builder.append(id: row[0], parentID: row[1], rank: row[2], name: name.utf8,
                                   mainRank: (row[4] as String?).flatMap(TaxonRank.init(rawValue:)), mainParentID: row[5])
            }
            scan.tree = try builder.build()
            scan.holdsWholeTree = whole
        } catch {
            scan.treeProblem = "\(error)"
        }
        return scan
    }
}
