import GRDB
import GRDBSQLite
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
    /// The tree, or (schema 3) its nodes still to be built: ``MemoryIndexes`` builds
    /// them on another core while the names are read.
    var tree: TaxonomyTree?
    var builder: TaxonomyTree.Builder?
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

    /// Schema 3: one pass over `taxa` in id order, one over `idx_taxa_name`, both
    /// through SQLite's C API: a row of GRDB makes a `String` of each text column,
    /// and 2.6 M names and ranks cost a second of every start.
    private static func oneTable(_ db: Database) throws -> TaxaScan {
        var scan = TaxaScan()
        scan.holdsWholeTree = true
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa") ?? 0
        var builder = TaxonomyTree.Builder(capacity: count)
        var buildError: Error?
        let mainRanks = TaxonRank.allCases.map { (Array($0.rawValue.utf8), $0) }
        let rows = try db.makeStatement(sql: """
            SELECT id, parent_id, rank, scientific_name, main_rank, main_parent_id, conservation FROM taxa ORDER BY id
            """)
        try steps(rows, db) { handle in
            let id = sqlite3_column_int64(handle, 0)
            let parent = sqlite3_column_type(handle, 1) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, 1)
            let mainParent = sqlite3_column_type(handle, 5) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, 5)
            let name = text(handle, 3)
            let mainRankBytes = text(handle, 4)
            let mainRank = mainRankBytes.isEmpty ? nil : mainRanks.first { $0.0.elementsEqual(mainRankBytes) }?.1
            if buildError == nil {
                do {
                    try builder.append(id: id, parentID: parent, rank: text(handle, 2), name: name,
                                       mainRank: mainRank, mainParentID: mainParent)
                } catch {
                    buildError = error
                }
            }
            if let level = mainRank?.level, level < TaxonRank.species.level {
                scan.higher.append((id, SearchQuery.words(in: String(decoding: name, as: UTF8.self)), level))
            }
            if sqlite3_column_type(handle, 6) != SQLITE_NULL {
                scan.conservation[id] = String(decoding: text(handle, 6), as: UTF8.self)
                scan.conservedWords[id] = Set(SearchQuery.words(in: String(decoding: name, as: UTF8.self)))
            }
        }
        // Name order (bytes, then id: SQLite's BINARY collation), from the index.
        do {
            if let buildError { throw buildError }
            let ordered = try db.makeStatement(sql: "SELECT id FROM taxa INDEXED BY idx_taxa_name ORDER BY scientific_name, id")
            var ids = [TaxonID]()
            ids.reserveCapacity(count)
            try steps(ordered, db) { ids.append(sqlite3_column_int64($0, 0)) }
            try builder.setNameOrder(ids)
            scan.builder = builder
        } catch {
            scan.treeProblem = "\(error)"
        }
        return scan
    }

    /// Schema 3 with its tree at hand (read from its image, ``TreeImageCache``): the
    /// taxa above species from the tree, the statuses from the rows that have one.
    static func fromTree(_ tree: TaxonomyTree, _ db: Database) throws -> TaxaScan {
        var scan = TaxaScan()
        scan.tree = tree
        scan.holdsWholeTree = true
        for node in 0..<tree.count {
            guard let level = tree.mainRank(of: node)?.level, level < TaxonRank.species.level else { continue }
            scan.higher.append((tree.id(at: node), SearchQuery.words(in: tree.name(of: node)), level))
        }
        let statuses = try db.makeStatement(sql: "SELECT id, conservation, scientific_name FROM taxa WHERE conservation IS NOT NULL")
        try steps(statuses, db) { handle in
            let id = sqlite3_column_int64(handle, 0)
            scan.conservation[id] = String(decoding: text(handle, 1), as: UTF8.self)
            scan.conservedWords[id] = Set(SearchQuery.words(in: String(decoding: text(handle, 2), as: UTF8.self)))
        }
        return scan
    }

    /// Runs `statement` to its end, `body` once per row.
    private static func steps(_ statement: Statement, _ db: Database, _ body: (OpaquePointer) throws -> Void) throws {
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                                    sql: statement.sql)
            }
            try body(handle)
        }
    }

    /// A text column's bytes, valid until the next step (empty for NULL).
    private static func text(_ handle: OpaquePointer, _ column: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let bytes = sqlite3_column_text(handle, column) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, column)))
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
