/// The taxonomy database schema (docs/design/data-and-format.md §2–§4; `protocol/STOL-FORMAT.md` §3).
///
/// Version 1 is the eight-rank view: `taxa` holds only domain … species, each
/// under its nearest kept ancestor. Version 2 adds, without changing a table of
/// version 1, the source's whole tree (`tree_nodes`: every node with its rank
/// verbatim, e.g. NCBI's `no rank`, `clade`, `strain`, under one root) and the
/// ids the source retired (`merged_ids`, `deleted_ids`), so that lineages and
/// common ancestors can be answered on NCBI's own tree and an old id is
/// translated rather than "not found". A build may leave `tree_nodes` empty (the
/// bundled database does, to stay small): the server then answers on the main
/// ranks only and says so. Version 2 also keeps each taxon's prominence (how much
/// of the tree and of its named taxa lie under it), which search uses after match
/// quality, so that the taxon most users mean comes first.
///
/// The pipeline creates it; the taxonomy server only reads it, understands
/// every version from 1 to ``currentVersion`` and refuses a newer one.
public enum TaxonomySchema {
    /// The schema version this build writes and understands.
    public static let currentVersion = 2

    /// Every version this build reads (`.stol` headers, installed and served databases).
    public static let supportedVersions: ClosedRange<UInt32> = 1...UInt32(currentVersion)

    /// The first version with ``fullTreeStatements``.
    public static let fullTreeVersion = 2

    /// DDL statements in creation order (tables, then indexes, then FTS).
    public static let statements: [String] = [
        """
        CREATE TABLE schema_version (
            version     INTEGER NOT NULL,
            applied_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now'))
        )
        """,
        """
        CREATE TABLE taxa (
            id              INTEGER PRIMARY KEY,
            parent_id       INTEGER REFERENCES taxa(id),
            rank            TEXT    NOT NULL
                CHECK (rank IN ('domain','kingdom','phylum','class','order','family','genus','species')),
            scientific_name TEXT    NOT NULL,
            author          TEXT,
            year            INTEGER,
            status          TEXT    NOT NULL DEFAULT 'accepted'
                CHECK (status IN ('accepted','synonym','doubtful')),
            conservation    TEXT
        )
        """,
        "CREATE INDEX idx_taxa_parent ON taxa(parent_id)",
        "CREATE INDEX idx_taxa_rank   ON taxa(rank)",
        "CREATE INDEX idx_taxa_status ON taxa(status)",
        "CREATE INDEX idx_taxa_name   ON taxa(scientific_name)",
        """
        CREATE TABLE names (
            id          INTEGER PRIMARY KEY,
            taxon_id    INTEGER NOT NULL REFERENCES taxa(id) ON DELETE CASCADE,
            name        TEXT    NOT NULL,
            lang        TEXT    NOT NULL,
            name_type   TEXT    NOT NULL
                CHECK (name_type IN ('common','synonym','vernacular','trade')),
            is_preferred INTEGER NOT NULL DEFAULT 0
        )
        """,
        "CREATE INDEX idx_names_taxon ON names(taxon_id)",
        "CREATE INDEX idx_names_lang  ON names(lang)",
        "CREATE INDEX idx_names_type  ON names(name_type)",
        """
        CREATE TABLE refs (
            id          INTEGER PRIMARY KEY,
            taxon_id    INTEGER NOT NULL REFERENCES taxa(id) ON DELETE CASCADE,
            citation    TEXT    NOT NULL,
            url         TEXT,
            ref_type    TEXT    NOT NULL
                CHECK (ref_type IN ('taxonomy','ecology','morphology','conservation','other'))
        )
        """,
        "CREATE INDEX idx_refs_taxon ON refs(taxon_id)",
        """
        CREATE TABLE traits (
            id          INTEGER PRIMARY KEY,
            taxon_id    INTEGER NOT NULL REFERENCES taxa(id) ON DELETE CASCADE,
            trait_key   TEXT    NOT NULL,
            trait_value TEXT    NOT NULL,
            unit        TEXT,
            source_ref  INTEGER REFERENCES refs(id)
        )
        """,
        "CREATE INDEX idx_traits_taxon ON traits(taxon_id)",
        "CREATE INDEX idx_traits_key   ON traits(trait_key)",
        """
        CREATE TABLE euler_tour (
            seq         INTEGER PRIMARY KEY,
            taxon_id    INTEGER NOT NULL REFERENCES taxa(id),
            depth       INTEGER NOT NULL
        )
        """,
        """
        CREATE TABLE first_occurrence (
            taxon_id    INTEGER PRIMARY KEY REFERENCES taxa(id),
            seq         INTEGER NOT NULL
        )
        """,
        """
        CREATE TABLE top_n_relatives (
            taxon_id    INTEGER NOT NULL REFERENCES taxa(id),
            relative_id INTEGER NOT NULL REFERENCES taxa(id),
            rank_order  INTEGER NOT NULL,
            lca_id      INTEGER NOT NULL REFERENCES taxa(id),
            lca_depth   INTEGER NOT NULL,
            distance    INTEGER NOT NULL,
            PRIMARY KEY (taxon_id, rank_order)
        )
        """,
        "CREATE INDEX idx_top_n_taxon ON top_n_relatives(taxon_id)",
        """
        CREATE VIRTUAL TABLE fts_taxa USING fts5(
            taxon_id UNINDEXED,
            scientific_name,
            common_names,
            synonyms,
            content='',
            tokenize='unicode61 remove_diacritics 2'
        )
        """,
    ]

    /// What version 2 adds: created after ``statements`` (its index with the others).
    public static let fullTreeStatements: [String] = [
        """
        CREATE TABLE tree_nodes (
            id              INTEGER PRIMARY KEY,
            parent_id       INTEGER REFERENCES tree_nodes(id),
            rank            TEXT    NOT NULL,
            scientific_name TEXT    NOT NULL
        )
        """,
        "CREATE INDEX idx_tree_nodes_name ON tree_nodes(scientific_name)",
        """
        CREATE TABLE merged_ids (
            old_id      INTEGER PRIMARY KEY,
            new_id      INTEGER NOT NULL
        )
        """,
        """
        CREATE TABLE deleted_ids (
            id          INTEGER PRIMARY KEY
        )
        """,
        """
        CREATE TABLE prominence (
            taxon_id    INTEGER PRIMARY KEY REFERENCES taxa(id),
            score       REAL    NOT NULL
        )
        """,
    ]

    /// Every statement a database of ``currentVersion`` is made with.
    public static let allStatements = statements + fullTreeStatements

    /// Tables every taxonomy database of `version` must have (the server checks on open).
    public static func requiredTables(version: Int) -> [String] {
        requiredColumns(version: version).map(\.table)
    }

    /// The columns the server reads, per table, in a database of `version`.
    public static func requiredColumns(version: Int) -> [(table: String, columns: [String])] {
        version >= fullTreeVersion ? requiredColumns + fullTreeColumns : requiredColumns
    }

    /// The indexes a database of `version` must have.
    public static func requiredIndexes(version: Int) -> [String] {
        version >= fullTreeVersion ? requiredIndexes + indexNames(fullTreeStatements) : requiredIndexes
    }

    static let fullTreeColumns: [(table: String, columns: [String])] = [
        ("tree_nodes", ["id", "parent_id", "rank", "scientific_name"]),
        ("merged_ids", ["old_id", "new_id"]),
        ("deleted_ids", ["id"]),
        ("prominence", ["taxon_id", "score"]),
    ]

    /// The columns of version 1 the server reads, per table: the verifier refuses an
    /// imported database that lacks one (a shape check after `PRAGMA integrity_check`).
    static let requiredColumns: [(table: String, columns: [String])] = [
        ("schema_version", ["version", "applied_at"]),
        ("taxa", ["id", "parent_id", "rank", "scientific_name", "author", "year", "status", "conservation"]),
        ("names", ["id", "taxon_id", "name", "lang", "name_type", "is_preferred"]),
        ("refs", ["id", "taxon_id", "citation", "url", "ref_type"]),
        ("traits", ["id", "taxon_id", "trait_key", "trait_value", "unit", "source_ref"]),
        ("euler_tour", ["seq", "taxon_id", "depth"]),
        ("first_occurrence", ["taxon_id", "seq"]),
        ("top_n_relatives", ["taxon_id", "relative_id", "rank_order", "lca_id", "lca_depth", "distance"]),
        ("fts_taxa", ["taxon_id", "scientific_name", "common_names", "synonyms"]),
    ]

    /// The indexes of ``statements``: without them the server's queries would scan
    /// whole tables (2 M rows), so an imported database must have every one.
    static let requiredIndexes: [String] = indexNames(statements)

    private static func indexNames(_ statements: [String]) -> [String] {
        statements.compactMap { statement in
            guard statement.hasPrefix("CREATE INDEX ") else { return nil }
            return statement.dropFirst("CREATE INDEX ".count).split(separator: " ").first.map(String.init)
        }
    }
}
