import Foundation
import GRDB
import STOLModel

/// Writes a ``NormalizedTaxonomy`` into a new SQLite file in the schema of
/// ``TaxonomySchema`` (docs/design/data-and-format.md §2–§5), with the FTS5 index
/// (rowid = taxon id), the Euler tour, first occurrences and the precomputed
/// closest relatives.
///
/// The file is written to `<output>.partial` and renamed into place only when
/// complete, so a failed or interrupted build never leaves a half database under
/// the final name. The result is in rollback-journal mode (never WAL): taxonomy
/// databases are opened read-only by users who cannot write their directory.
public struct TaxonomyDatabaseWriter {
    public struct Report: Sendable, Equatable {
        /// Rows of `taxa`: every node of the source.
        public var taxa = 0
        /// The nodes of a main rank (the eight-rank view).
        public var mainTaxa = 0
        public var names = 0
        /// Names per class as the source spells it (`genbank common name`, …;
        /// `(none)` for names without a class): which classes the build had.
        public var nameClasses: [String: Int] = [:]
        public var references = 0
        public var traits = 0
        public var eulerTour = 0
        public var topNRelatives = 0
        /// Ids the source retired: merged into another, and deleted.
        public var mergedIDs = 0
        public var deletedIDs = 0
        /// Taxa with a prominence above zero.
        public var prominentTaxa = 0
        public var bytes: Int64 = 0
    }

    public enum WriteError: Error, CustomStringConvertible {
        case invalidTree(String)
        case sqlite(String)

        public var description: String {
            switch self {
            case .invalidTree(let detail): "the taxonomy is not a tree: \(detail)"
            case .sqlite(let detail): "SQLite: \(detail)"
            }
        }
    }

    public var topN: Int
    /// Whether `euler_tour` and `first_occurrence` get their rows. The server never reads
    /// them (it answers LCAs from its in-memory tree); they are for readers of the file
    /// alone, and they are positional: a node added anywhere moves every later row, so a
    /// reference build leaves them empty to keep its release-to-release deltas small.
    public var eulerTour: Bool
    /// The rows of the `provenance` table; nil writes the table empty.
    public var provenance: Provenance?
    /// Called after each step of the write with its name and duration (build timings).
    public var onPhase: (@Sendable (String, Duration) -> Void)?

    public init(topN: Int = 10, eulerTour: Bool = true, provenance: Provenance? = nil,
                onPhase: (@Sendable (String, Duration) -> Void)? = nil) {
        self.topN = topN
        self.eulerTour = eulerTour
        self.provenance = provenance
        self.onPhase = onPhase
    }

    public func write(_ taxonomy: NormalizedTaxonomy, to output: String) throws -> Report {
        var clock = ContinuousClock.now
        func phase(_ name: String) {
            let now = ContinuousClock.now
            onPhase?(name, now - clock)
            clock = now
        }
        // One tree of every node with the view (known parents, no cycle in either):
        // its depths order the prominence sums, its view gives the Euler tour and the
        // precomputed relatives, with the server's own rule and order.
        let tree: TaxonomyTree
        do {
            var builder = TaxonomyTree.Builder(capacity: taxonomy.nodes.count)
            for node in taxonomy.nodes.sorted(by: { $0.id < $1.id }) {
                // The tree reads a node that is its own parent as a root (NCBI's own
                // root); a source taxon that names itself as parent is a cycle.
                if node.parentID == node.id || node.mainParentID == node.id { throw TaxonomyTree.BuildError.cycle(node.id) }
                try builder.append(id: node.id, parentID: node.parentID, rank: node.rank, name: node.scientificName.utf8,
                                   mainRank: node.mainRank, mainParentID: node.mainParentID)
            }
            tree = try builder.build()
        } catch {
            throw WriteError.invalidTree("\(error)")
        }
        phase("tree")
        let partial = output + ".partial"
        let compacted = output + ".partial-compact"
        func removeLeftovers() {
            for path in [partial, compacted] {
                for suffix in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            }
        }
        removeLeftovers()
        var report = Report()
        do {
            var configuration = Configuration()
            configuration.journalMode = .default
            // Bulk load: every reference is made from the validated tree; the source
            // tables are checked with `foreign_key_check` before the commit.
            configuration.foreignKeysEnabled = false
            let queue = try DatabaseQueue(path: partial, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: """
                    PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 4096;
                    PRAGMA cache_size = -262144; PRAGMA ignore_check_constraints = ON
                    """)
            }
            try queue.write { db in
                // Tables first, indexes after the rows: building an index from sorted
                // keys is much faster than keeping it up to date row by row.
                let indexes = TaxonomySchema.allStatements.filter { $0.hasPrefix("CREATE INDEX") }
                for statement in TaxonomySchema.allStatements where !statement.hasPrefix("CREATE INDEX") {
                    try db.execute(sql: statement)
                }
                try db.execute(sql: "INSERT INTO schema_version (version) VALUES (?)",
                               arguments: [TaxonomySchema.currentVersion])
                for row in provenance?.rows ?? [] {
                    try db.execute(sql: "INSERT INTO provenance (key, value) VALUES (?, ?)", arguments: [row.key, row.value])
                }
                // Rows go in by taxon id, so that every id-keyed b-tree is appended to.
                let byID = taxonomy.nodes.indices.sorted { taxonomy.nodes[$0].id < taxonomy.nodes[$1].id }
                report.taxa = try insertTaxa(taxonomy, byID: byID, db)
                report.mainTaxa = taxonomy.taxa.count
                phase("taxa")
                report.names = try insertNames(taxonomy, db)
                for name in taxonomy.names { report.nameClasses[name.nameClass ?? "(none)", default: 0] += 1 }
                report.references = try insertReferencesAndTraits(taxonomy, db, traits: &report.traits)
                phase("names")
                (report.mergedIDs, report.deletedIDs) = try insertRetiredIDs(taxonomy, db)
                phase("retired ids")
                try insertSearchIndex(taxonomy, byID: byID, db)
                phase("fts")
                report.eulerTour = eulerTour ? try insertEulerTour(tree, db) : 0
                phase("euler")
                report.topNRelatives = try insertTopN(tree, db)
                report.prominentTaxa = try insertProminence(taxonomy, whole: tree, db)
                phase("topN")
                for statement in indexes { try db.execute(sql: statement) }
                phase("indexes")
                // The bulk load skipped the per-row constraint checks (an `IN (…)` CHECK
                // costs more than the insert); check the source tables once instead.
                for table in ["taxa", "names", "refs", "traits"] {
                    if let row = try Row.fetchOne(db, sql: "PRAGMA foreign_key_check(\(table))") {
                        throw WriteError.invalidTree("foreign key violation: \(row)")
                    }
                }
                try db.execute(sql: "PRAGMA ignore_check_constraints = OFF")
                for (table, check) in Self.checks {
                    if let id = try Int64.fetchOne(db, sql: "SELECT rowid FROM \(table) WHERE NOT (\(check)) LIMIT 1") {
                        throw WriteError.sqlite("CHECK constraint failed: \(table) row \(id)")
                    }
                }
            }
            phase("commit")
            // VACUUM INTO writes the compacted copy once (a plain VACUUM writes it
            // twice, and journals the original); the copy is in rollback-journal mode.
            // The schema cookie is set first, as a row delta's result sets it (RowDelta):
            // so a release applied from its predecessor's rows is this file byte for byte.
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA schema_version = \(TaxonomySchema.fileSchemaCookie)")
                try db.execute(sql: "VACUUM INTO ?", arguments: [compacted])
            }
            try queue.close()
            phase("vacuum")
        } catch let error as DatabaseError {
            removeLeftovers()
            throw WriteError.sqlite(error.description)
        } catch {
            removeLeftovers()
            throw error
        }
        try? FileManager.default.removeItem(atPath: output)
        try FileManager.default.moveItem(atPath: compacted, toPath: output)
        removeLeftovers()
        let attributes = try FileManager.default.attributesOfItem(atPath: output)
        report.bytes = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        return report
    }

    /// The CHECK constraints of the schema (docs/design/data-and-format.md §5), verified after the bulk load.
    private static let checks: [(table: String, condition: String)] = [
        ("taxa", "main_rank IS NULL OR main_rank IN (\(TaxonomySchema.mainRankList))"),
        ("taxa", "status IN ('accepted','synonym','doubtful')"),
        ("names", "name_type IN (\(NameType.allCases.map { "'\($0.rawValue)'" }.joined(separator: ",")))"),
        ("refs", "ref_type IN ('taxonomy','ecology','morphology','conservation','other')"),
    ]

    /// Every node, in id order (`byID`); foreign keys are checked once all rows are in.
    private func insertTaxa(_ taxonomy: NormalizedTaxonomy, byID: [Int], _ db: Database) throws -> Int {
        let insert = try BulkInsert(db, sql: """
            INSERT INTO taxa (id, parent_id, rank, main_rank, main_parent_id, scientific_name, author, year, status, conservation)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for position in byID {
            let node = taxonomy.nodes[position]
            insert.bind(1, node.id)
            insert.bind(2, node.parentID)
            insert.bind(3, node.rank)
            insert.bind(4, node.mainRank?.rawValue)
            insert.bind(5, node.mainParentID)
            insert.bind(6, node.scientificName)
            insert.bind(7, node.author)
            insert.bind(8, node.year.map(Int64.init))
            insert.bind(9, node.status.rawValue)
            insert.bind(10, node.conservation)
            try insert.step()
        }
        return taxonomy.nodes.count
    }

    /// Each taxon's prominence, the signal search orders equally good matches by:
    ///
    ///     log2(1 + descendants) + 2·log2(1 + named taxa in its subtree, itself included) + 4 if curated
    ///
    /// on the whole tree (every node below it: a species with many strains, as the
    /// organisms labs work on have, counts them; in a build that cut the source,
    /// the source's whole tree: ``NormalizedTaxonomy/sourceCounts``), where a named taxon has a common
    /// name in any language and a curated one an IUCN status or a trait (what the
    /// curated overlay adds). So Panthera (lion, tiger, leopard, jaguar under it)
    /// comes before Panthalis and Panthea for the prefix "panth", and Drosophila
    /// melanogaster, curated, before another fly also called "fruit fly". A node
    /// outside the eight ranks (a subfamily, a tribe, a strain) counts at half
    /// weight: next to a genus of the same prefix, a tribe above it is rarely what a
    /// person typing means. Rows only for a score above zero (most species have none).
    private func insertProminence(_ taxonomy: NormalizedTaxonomy, whole tree: TaxonomyTree,
                                  _ db: Database) throws -> Int {
        var named = Set<TaxonID>()
        for name in taxonomy.names where name.type == .common { named.insert(name.taxonID) }
        var curated = Set<TaxonID>(taxonomy.nodes.lazy.filter { $0.conservation != nil }.map(\.id))
        for trait in taxonomy.traits { curated.insert(trait.taxonID) }
        let inView = Set(taxonomy.taxa.lazy.map(\.id))
        // Deepest first, each node adds itself and what is under it to its parent.
        var descendants = [Int32](repeating: 0, count: tree.count)
        var namedTaxa = [Int32](repeating: 0, count: tree.count)
        for node in 0..<tree.count where named.contains(tree.id(at: node)) { namedTaxa[node] = 1 }
        for node in (0..<tree.count).sorted(by: { tree.depth(of: $0) > tree.depth(of: $1) }) {
            guard let parent = tree.parent(of: node) else { continue }
            descendants[parent] += descendants[node] + 1
            namedTaxa[parent] += namedTaxa[node]
        }
        if let source = taxonomy.sourceCounts {
            // A cut build: what the source had under each node with a named taxon in
            // its subtree there (at least what is kept). The others keep the counts
            // of the build: a row each for the 100,000 genera and families of the
            // bundled database whose species were all cut, none of them named, took
            // 0.6 of its 20 MB (gzip) to order taxa nobody looks for.
            for node in 0..<tree.count {
                guard let counts = source[tree.id(at: node)], counts.named > 0 else { continue }
                descendants[node] = max(descendants[node], counts.descendants)
                namedTaxa[node] = max(namedTaxa[node], counts.named)
            }
        }
        var scores: [TaxonID: Double] = [:]
        for node in 0..<tree.count {
            let id = tree.id(at: node)
            let score = log2(1 + Double(descendants[node])) + 2 * log2(1 + Double(namedTaxa[node]))
                + (curated.contains(id) ? 4 : 0)
            scores[id] = inView.contains(id) ? score : 0.5 * score
        }
        let insert = try BulkInsert(db, sql: "INSERT INTO prominence (taxon_id, score) VALUES (?, ?)")
        var rows: [(TaxonID, Double)] = []
        for (id, score) in scores where score > 0 { rows.append((id, (score * 1000).rounded() / 1000)) }
        for (id, score) in rows.sorted(by: { $0.0 < $1.0 }) {
            insert.bind(1, id)
            insert.bind(2, score)
            try insert.step()
        }
        return rows.count
    }

    /// The merged ids whose new id the database holds (a subset may have cut the
    /// taxon an old id went to) and whose old id it does not; the deleted ids it
    /// does not hold.
    private func insertRetiredIDs(_ taxonomy: NormalizedTaxonomy, _ db: Database) throws -> (Int, Int) {
        let held = Set(taxonomy.nodes.lazy.map(\.id))
        let mergedInsert = try BulkInsert(db, sql: "INSERT INTO merged_ids (old_id, new_id) VALUES (?, ?)")
        var merged = 0
        for (old, new) in taxonomy.merged.sorted(by: { $0.key < $1.key }) where held.contains(new) && !held.contains(old) {
            mergedInsert.bind(1, old)
            mergedInsert.bind(2, new)
            try mergedInsert.step()
            merged += 1
        }
        let deletedInsert = try BulkInsert(db, sql: "INSERT INTO deleted_ids (id) VALUES (?)")
        var deleted = 0
        for id in taxonomy.deleted.sorted() where !held.contains(id) {
            deletedInsert.bind(1, id)
            try deletedInsert.step()
            deleted += 1
        }
        return (merged, deleted)
    }

    private func insertNames(_ taxonomy: NormalizedTaxonomy, _ db: Database) throws -> Int {
        let insert = try BulkInsert(db, sql: """
            INSERT INTO names (taxon_id, name, lang, name_type, name_class, is_preferred) VALUES (?, ?, ?, ?, ?, ?)
            """)
        for name in taxonomy.names {
            insert.bind(1, name.taxonID)
            insert.bind(2, name.name)
            insert.bind(3, name.language)
            insert.bind(4, name.type.rawValue)
            insert.bind(5, name.nameClass)
            insert.bind(6, Int64(name.preferred ? 1 : 0))
            try insert.step()
        }
        return taxonomy.names.count
    }

    private func insertReferencesAndTraits(_ taxonomy: NormalizedTaxonomy, _ db: Database, traits: inout Int) throws -> Int {
        let refStatement = try db.makeStatement(sql: "INSERT INTO refs (taxon_id, citation, url, ref_type) VALUES (?, ?, ?, ?)")
        var rowIDs: [Int64] = []
        for reference in taxonomy.references {
            try refStatement.execute(arguments: [reference.taxonID, reference.citation, reference.url, reference.type])
            rowIDs.append(db.lastInsertedRowID)
        }
        let traitStatement = try db.makeStatement(sql: """
            INSERT INTO traits (taxon_id, trait_key, trait_value, unit, source_ref) VALUES (?, ?, ?, ?, ?)
            """)
        for trait in taxonomy.traits {
            try traitStatement.execute(arguments: [trait.taxonID, trait.key, trait.value, trait.unit,
                                                   trait.reference.map { rowIDs[$0] }])
        }
        traits = taxonomy.traits.count
        return rowIDs.count
    }

    /// Contentless FTS5: the rowid is the taxon id (column values are not stored).
    /// Rows go in by ascending rowid, so FTS5 does not flush a segment per row.
    private func insertSearchIndex(_ taxonomy: NormalizedTaxonomy, byID: [Int], _ db: Database) throws {
        var commonNames: [TaxonID: [String]] = [:]
        var synonyms: [TaxonID: [String]] = [:]
        for name in taxonomy.names {
            switch name.type {
            case .common, .vernacular: commonNames[name.taxonID, default: []].append(name.name)
            // What a person may type for the taxon besides its names: another
            // scientific name, an acronym, a recorded misspelling.
            case .synonym, .acronym, .misspelling, .includes, .authority: synonyms[name.taxonID, default: []].append(name.name)
            case .trade: break
            }
        }
        let insert = try BulkInsert(db, sql: """
            INSERT INTO fts_taxa (rowid, taxon_id, scientific_name, common_names, synonyms) VALUES (?, ?, ?, ?, ?)
            """)
        for position in byID {
            let taxon = taxonomy.nodes[position]
            insert.bind(1, taxon.id)
            insert.bind(2, taxon.id)
            insert.bind(3, taxon.scientificName)
            insert.bind(4, (commonNames[taxon.id] ?? []).joined(separator: " "))
            insert.bind(5, (synonyms[taxon.id] ?? []).joined(separator: " "))
            try insert.step()
        }
    }

    /// The view's Euler tour, and each view taxon's first place in it (by id).
    private func insertEulerTour(_ tree: TaxonomyTree, _ db: Database) throws -> Int {
        let tour = tree.eulerTour(in: .main)
        let insert = try BulkInsert(db, sql: "INSERT INTO euler_tour (seq, taxon_id, depth) VALUES (?, ?, ?)")
        var first = [Int](repeating: -1, count: tree.count)
        for (seq, entry) in tour.enumerated() {
            insert.bind(1, Int64(seq))
            insert.bind(2, tree.id(at: entry.node))
            insert.bind(3, Int64(entry.depth))
            try insert.step()
            if first[entry.node] < 0 { first[entry.node] = seq }
        }
        let firstInsert = try BulkInsert(db, sql: "INSERT INTO first_occurrence (taxon_id, seq) VALUES (?, ?)")
        // Nodes are numbered in id order.
        for node in 0..<tree.count where tree.isInView(node) {
            firstInsert.bind(1, tree.id(at: node))
            firstInsert.bind(2, Int64(first[node]))
            try firstInsert.step()
        }
        return tour.count
    }

    /// By taxon id, so that the primary key (taxon_id, rank_order) is appended to.
    private func insertTopN(_ tree: TaxonomyTree, _ db: Database) throws -> Int {
        guard topN > 0 else { return 0 }
        let insert = try BulkInsert(db, sql: """
            INSERT INTO top_n_relatives (taxon_id, relative_id, rank_order, lca_id, lca_depth, distance)
            VALUES (?, ?, ?, ?, ?, ?)
            """)
        var rows = 0
        // The index gives the tree's own answer (exact top n) without scanning whole genera.
        let relatives = TaxonomyTree.RelativesIndex(tree, view: .main)
        for node in 0..<tree.count where tree.isSpecies(node, in: .main) {
            for (order, relative) in relatives.closestRelatives(of: node, n: topN).enumerated() {
                insert.bind(1, tree.id(at: node))
                insert.bind(2, tree.id(at: relative.node))
                insert.bind(3, Int64(order + 1))
                insert.bind(4, tree.id(at: relative.lca))
                insert.bind(5, Int64(relative.lcaDepth))
                insert.bind(6, Int64(relative.distance))
                try insert.step()
                rows += 1
            }
        }
        return rows
    }
}
