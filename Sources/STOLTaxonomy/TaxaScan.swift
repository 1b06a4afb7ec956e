import GRDB
import STOLModel

/// What ``MemoryIndexes`` reads of `taxa`: the eight-rank view's compact tree, the
/// whole tree, the taxa with an IUCN status and the names of the taxa above species.
///
/// Schema 3 keeps every node in one table, so one pass in id order feeds all of
/// them, and the name order of both trees comes from `idx_taxa_name` (an index-only
/// scan) instead of a sort of 2.6 M names: the whole tree answers seconds sooner
/// after a start or a switch. Schemas 1 and 2 are read with a query each, as they
/// were written.
struct TaxaScan {
    var tree: CompactTaxonTree?
    var treeProblem: String?
    var fullTree: FullTaxonTree?
    var fullTreeProblem: String?
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
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa") ?? 0
        var builder = FullTaxonTree.Builder(capacity: count)
        var ids = [TaxonID](), parents = [TaxonID](), levels = [UInt8]()
        let levelOf = Dictionary(uniqueKeysWithValues: TaxonRank.allCases.map { ($0.rawValue, $0.level) })
        var buildError: Error?
        let rows = try Row.fetchCursor(db, sql: """
            SELECT id, parent_id, rank, scientific_name, main_rank, main_parent_id, conservation FROM taxa ORDER BY id
            """)
        while let row = try rows.next() {
            let id: TaxonID = row[0]
            let name: String = row[3]
            if buildError == nil {
                do { try builder.append(id: id, parentID: row[1], rank: row[2], name: name.utf8) } catch { buildError = error }
            }
            if let mainRank: String = row[4], let level = levelOf[mainRank] {
                ids.append(id)
                parents.append((row[5] as TaxonID?) ?? 0)
                levels.append(UInt8(level))
                if level < TaxonRank.species.level { scan.higher.append((id, SearchQuery.words(in: name), level)) }
            }
            if let status: String = row[6] {
                scan.conservation[id] = status
                scan.conservedWords[id] = Set(SearchQuery.words(in: name))
            }
        }
        // Both trees in name order (bytes, then id: SQLite's BINARY collation), from the index.
        let ordered = try TaxonID.fetchCursor(db, sql: "SELECT id FROM taxa INDEXED BY idx_taxa_name ORDER BY scientific_name, id")
        do {
            if let buildError { throw buildError }
            try builder.setNameOrder { () -> TaxonID? in try? ordered.next() }
            let whole = try builder.build()
            scan.fullTree = whole
            // The view's positions (its ids are a subsequence of the whole tree's, both ascending).
            var viewPosition = [Int32](repeating: -1, count: whole.count)
            var next = 0
            for node in 0..<whole.count where next < ids.count && whole.id(at: node) == ids[next] {
                viewPosition[node] = Int32(next)
                next += 1
            }
            var nameOrder = [Int32]()
            nameOrder.reserveCapacity(ids.count)
            whole.forEachInNameOrder { node in
                if viewPosition[node] >= 0 { nameOrder.append(viewPosition[node]) }
            }
            do {
                scan.tree = try CompactTaxonTree(ids: ids, parentIDs: parents, rankLevels: levels, nameOrder: nameOrder)
            } catch {
                scan.treeProblem = "\(error)"
            }
        } catch {
            scan.fullTreeProblem = "\(error)"
            scan.treeProblem = "\(error)"
        }
        return scan
    }

    /// Schemas 1 and 2: the view from `taxa`, the whole tree from `tree_nodes`.
    private static func separately(_ db: Database, layout: TaxonomyLayout) throws -> TaxaScan {
        var scan = TaxaScan()
        do {
            scan.tree = try MemoryIndexes.loadTree(db)
        } catch {
            scan.treeProblem = "\(error)"
        }
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
        do {
            scan.fullTree = try MemoryIndexes.loadFullTree(db)
        } catch {
            scan.fullTreeProblem = "\(error)"
        }
        return scan
    }
}
