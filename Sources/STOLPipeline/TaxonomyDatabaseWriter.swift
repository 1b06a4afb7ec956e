import Foundation
import GRDB
import STOLModel

/// Writes a ``NormalizedTaxonomy`` into a new SQLite file in the schema of
/// seeds/000 §3, with the FTS5 index (rowid = taxon id), the Euler tour, first
/// occurrences and the precomputed closest relatives.
///
/// The file is written to `<output>.partial` and renamed into place only when
/// complete, so a failed or interrupted build never leaves a half database under
/// the final name. The result is in rollback-journal mode (never WAL): taxonomy
/// databases are opened read-only by users who cannot write their directory.
public struct TaxonomyDatabaseWriter {
    public struct Report: Sendable, Equatable {
        public var taxa = 0
        public var names = 0
        public var references = 0
        public var traits = 0
        public var eulerTour = 0
        public var topNRelatives = 0
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

    public init(topN: Int = 10) {
        self.topN = topN
    }

    public func write(_ taxonomy: NormalizedTaxonomy, to output: String) throws -> Report {
        let tree: TaxonTree
        do {
            tree = try TaxonTree(nodes: taxonomy.taxa.map {
                .init(id: $0.id, parentID: $0.parentID, rank: $0.rank, scientificName: $0.scientificName)
            })
        } catch {
            throw WriteError.invalidTree("\(error)")
        }
        let partial = output + ".partial"
        for suffix in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: partial + suffix) }
        var report = Report()
        do {
            var configuration = Configuration()
            configuration.journalMode = .default
            let queue = try DatabaseQueue(path: partial, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 4096")
            }
            try queue.write { db in
                for statement in TaxonomySchema.statements { try db.execute(sql: statement) }
                try db.execute(sql: "INSERT INTO schema_version (version) VALUES (?)",
                               arguments: [TaxonomySchema.currentVersion])
                report.taxa = try insertTaxa(taxonomy, in: tree, db)
                report.names = try insertNames(taxonomy, db)
                report.references = try insertReferencesAndTraits(taxonomy, db, traits: &report.traits)
                try insertSearchIndex(taxonomy, db)
                report.eulerTour = try insertEulerTour(tree, db)
                report.topNRelatives = try insertTopN(tree, db)
            }
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = DELETE")
                try db.execute(sql: "VACUUM")
            }
            try queue.close()
        } catch let error as DatabaseError {
            throw WriteError.sqlite(error.description)
        }
        try? FileManager.default.removeItem(atPath: output)
        try FileManager.default.moveItem(atPath: partial, toPath: output)
        let attributes = try FileManager.default.attributesOfItem(atPath: output)
        report.bytes = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        return report
    }

    /// Parents before children (tree preorder), so foreign keys hold at every insert.
    private func insertTaxa(_ taxonomy: NormalizedTaxonomy, in tree: TaxonTree, _ db: Database) throws -> Int {
        let byID = Dictionary(taxonomy.taxa.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let statement = try db.makeStatement(sql: """
            INSERT INTO taxa (id, parent_id, rank, scientific_name, author, year, status, conservation)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for node in tree.nodes {
            guard let taxon = byID[node.id] else { continue }
            try statement.execute(arguments: [taxon.id, taxon.parentID, taxon.rank.rawValue, taxon.scientificName,
                                              taxon.author, taxon.year, taxon.status.rawValue, taxon.conservation])
        }
        return taxonomy.taxa.count
    }

    private func insertNames(_ taxonomy: NormalizedTaxonomy, _ db: Database) throws -> Int {
        let statement = try db.makeStatement(sql: """
            INSERT INTO names (taxon_id, name, lang, name_type, is_preferred) VALUES (?, ?, ?, ?, ?)
            """)
        for name in taxonomy.names {
            try statement.execute(arguments: [name.taxonID, name.name, name.language, name.type.rawValue,
                                              name.preferred ? 1 : 0])
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
    private func insertSearchIndex(_ taxonomy: NormalizedTaxonomy, _ db: Database) throws {
        var commonNames: [TaxonID: [String]] = [:]
        var synonyms: [TaxonID: [String]] = [:]
        for name in taxonomy.names {
            switch name.type {
            case .common, .vernacular: commonNames[name.taxonID, default: []].append(name.name)
            case .synonym: synonyms[name.taxonID, default: []].append(name.name)
            case .trade: break
            }
        }
        let statement = try db.makeStatement(sql: """
            INSERT INTO fts_taxa (rowid, taxon_id, scientific_name, common_names, synonyms) VALUES (?, ?, ?, ?, ?)
            """)
        for taxon in taxonomy.taxa {
            try statement.execute(arguments: [taxon.id, taxon.id, taxon.scientificName,
                                              (commonNames[taxon.id] ?? []).joined(separator: " "),
                                              (synonyms[taxon.id] ?? []).joined(separator: " ")])
        }
    }

    private func insertEulerTour(_ tree: TaxonTree, _ db: Database) throws -> Int {
        let tour = tree.eulerTour()
        let statement = try db.makeStatement(sql: "INSERT INTO euler_tour (seq, taxon_id, depth) VALUES (?, ?, ?)")
        var first = [Int](repeating: -1, count: tree.count)
        for (seq, entry) in tour.enumerated() {
            try statement.execute(arguments: [seq, tree.nodes[entry.node].id, entry.depth])
            if first[entry.node] < 0 { first[entry.node] = seq }
        }
        let firstStatement = try db.makeStatement(sql: "INSERT INTO first_occurrence (taxon_id, seq) VALUES (?, ?)")
        for (node, seq) in first.enumerated() {
            try firstStatement.execute(arguments: [tree.nodes[node].id, seq])
        }
        return tour.count
    }

    private func insertTopN(_ tree: TaxonTree, _ db: Database) throws -> Int {
        guard topN > 0 else { return 0 }
        let statement = try db.makeStatement(sql: """
            INSERT INTO top_n_relatives (taxon_id, relative_id, rank_order, lca_id, lca_depth, distance)
            VALUES (?, ?, ?, ?, ?, ?)
            """)
        var rows = 0
        for index in 0..<tree.count where tree.nodes[index].rank == .species {
            for (order, relative) in tree.closestRelatives(of: index, n: topN).enumerated() {
                try statement.execute(arguments: [tree.nodes[index].id, tree.nodes[relative.node].id, order + 1,
                                                  tree.nodes[relative.lca].id, relative.lcaDepth, relative.distance])
                rows += 1
            }
        }
        return rows
    }
}
