import GRDB
import STOLModel

/// Rewrites a database the pipeline built (schema 3) into an older schema, as
/// earlier releases of the pipeline wrote it, so that tests can pin what an
/// installed older reference is still answered: version 2 keeps the eight-rank
/// view in `taxa` and the whole tree, nameless, in `tree_nodes` (empty for a
/// build without it); version 1 is the view alone.
public enum LegacySchema {
    public static func downgrade(_ path: String, to version: Int, keepingWholeTree: Bool = true) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            try downgrade(db, to: version, keepingWholeTree: keepingWholeTree)
            try db.execute(sql: "VACUUM")
        }
    }

    /// The same, on an open connection (outside a transaction: it turns foreign keys off).
    public static func downgrade(_ db: Database, to version: Int, keepingWholeTree: Bool = true) throws {
        precondition(version == 1 || version == 2, "only schemas 1 and 2 predate schema 3")
        do {
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            if version == 2 {
                try db.execute(sql: """
                    CREATE TABLE tree_nodes (
                        id              INTEGER PRIMARY KEY,
                        parent_id       INTEGER REFERENCES tree_nodes(id),
                        rank            TEXT    NOT NULL,
                        scientific_name TEXT    NOT NULL
                    )
                    """)
                if keepingWholeTree {
                    try db.execute(sql: "INSERT INTO tree_nodes SELECT id, parent_id, rank, scientific_name FROM taxa ORDER BY id")
                }
                try db.execute(sql: "CREATE INDEX idx_tree_nodes_name ON tree_nodes(scientific_name)")
            } else {
                try db.execute(sql: "DROP TABLE merged_ids; DROP TABLE deleted_ids; DROP TABLE prominence")
            }
            try db.execute(sql: """
                CREATE TABLE taxa_view (
                    id              INTEGER PRIMARY KEY,
                    parent_id       INTEGER REFERENCES taxa(id),
                    rank            TEXT    NOT NULL
                        CHECK (rank IN (\(TaxonomySchema.mainRankList))),
                    scientific_name TEXT    NOT NULL,
                    author          TEXT,
                    year            INTEGER,
                    status          TEXT    NOT NULL DEFAULT 'accepted'
                        CHECK (status IN ('accepted','synonym','doubtful')),
                    conservation    TEXT
                );
                INSERT INTO taxa_view
                    SELECT id, main_parent_id, main_rank, scientific_name, author, year, status, conservation
                    FROM taxa WHERE main_rank IS NOT NULL ORDER BY id;
                DROP TABLE taxa;
                ALTER TABLE taxa_view RENAME TO taxa;
                CREATE INDEX idx_taxa_parent ON taxa(parent_id);
                CREATE INDEX idx_taxa_rank   ON taxa(rank);
                CREATE INDEX idx_taxa_status ON taxa(status);
                CREATE INDEX idx_taxa_name   ON taxa(scientific_name);
                DELETE FROM names WHERE taxon_id NOT IN (SELECT id FROM taxa)
                    OR name_type NOT IN ('common','synonym','vernacular','trade');
                DROP INDEX idx_names_taxon; DROP INDEX idx_names_lang; DROP INDEX idx_names_type;
                ALTER TABLE names DROP COLUMN name_class;
                CREATE INDEX idx_names_taxon ON names(taxon_id);
                CREATE INDEX idx_names_lang  ON names(lang);
                CREATE INDEX idx_names_type  ON names(name_type);
                CREATE INDEX idx_top_n_taxon ON top_n_relatives(taxon_id);
                """)
            if version == 2 {
                try db.execute(sql: "DELETE FROM prominence WHERE taxon_id NOT IN (SELECT id FROM taxa)")
            }
            try db.execute(sql: "UPDATE schema_version SET version = ?", arguments: [version])
        }
    }
}
