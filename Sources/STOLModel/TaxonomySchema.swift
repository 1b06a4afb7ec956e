/// The taxonomy database schema (docs/design/data-and-format.md §2–§4; `protocol/STOL-FORMAT.md` §3).
///
/// Version 3 (what the pipeline writes) keeps one tree: `taxa` holds every node
/// of the source with its rank verbatim (NCBI's `no rank`, `clade`, `strain`, …)
/// and its parent in the source, plus the eight-rank view as two columns:
/// `main_rank` (one of domain … species, or NULL) and `main_parent_id` (the
/// nearest ancestor of a main rank above it). Names (`names`) attach to any node
/// and keep the source's class (`name_class`, e.g. `genbank common name`).
///
/// Older versions stay servable: version 1 is the eight-rank view alone (`taxa`
/// holds only domain … species, each under its nearest kept ancestor); version 2
/// adds the source's whole tree beside it in `tree_nodes` (without names), the
/// ids the source retired (`merged_ids`, `deleted_ids`) and search's prominence.
/// Version 3 folds `tree_nodes` into `taxa`, so that every node is a taxon with
/// names, and an id outside the eight ranks is no longer "not found".
///
/// The pipeline creates it; the taxonomy server only reads it, understands
/// every version from 1 to ``currentVersion`` and refuses a newer one.
public enum TaxonomySchema {
    /// The schema version this build writes and understands.
    public static let currentVersion = 3

    /// Every version this build reads (`.stol` headers, installed and served databases).
    public static let supportedVersions: ClosedRange<UInt32> = 1...UInt32(currentVersion)

    /// The first version with the retired ids and prominence (and, in version 2
    /// only, `tree_nodes`).
    public static let fullTreeVersion = 2

    /// The schema cookie (header offset 40) every database the pipeline writes, and every
    /// row delta's result (`protocol/STOL-FORMAT.md` §10.2), is set to just before its
    /// `VACUUM INTO`, which writes it plus one. Without it the cookie would count the DDL
    /// a file went through, and a base that went through one more `VACUUM INTO` than a
    /// fresh build would yield a result one byte away from the signed release.
    public static let fileSchemaCookie = 1000

    /// The first version in which `taxa` holds every node (``mainRankColumns``).
    public static let everyNodeVersion = 3

    /// The eight ranks, as the CHECK constraints and the pipeline spell them.
    public static let mainRankList = "'domain','kingdom','phylum','class','order','family','genus','species'"

    /// DDL statements in creation order (tables, then indexes, then FTS).
    public static let statements: [String] = [
        """
        CREATE TABLE schema_version (
            version     INTEGER PRIMARY KEY,
            applied_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now'))
        )
        """,
        """
        CREATE TABLE taxa (
            id              INTEGER PRIMARY KEY,
            parent_id       INTEGER REFERENCES taxa(id),
            rank            TEXT    NOT NULL,
            main_rank       TEXT
                CHECK (main_rank IN ('domain','kingdom','phylum','class','order','family','genus','species')),
            main_parent_id  INTEGER REFERENCES taxa(id),
            scientific_name TEXT    NOT NULL,
            author          TEXT,
            year            INTEGER,
            status          TEXT    NOT NULL DEFAULT 'accepted'
                CHECK (status IN ('accepted','synonym','doubtful')),
            conservation    TEXT
        )
        """,
        "CREATE INDEX idx_taxa_parent ON taxa(parent_id)",
        "CREATE INDEX idx_taxa_main_parent ON taxa(main_parent_id)",
        "CREATE INDEX idx_taxa_rank   ON taxa(main_rank)",
        "CREATE INDEX idx_taxa_name   ON taxa(scientific_name)",
        """
        CREATE TABLE names (
            id          INTEGER PRIMARY KEY,
            taxon_id    INTEGER NOT NULL REFERENCES taxa(id) ON DELETE CASCADE,
            name        TEXT    NOT NULL,
            lang        TEXT    NOT NULL,
            name_type   TEXT    NOT NULL
                CHECK (name_type IN ('common','synonym','vernacular','trade','acronym','includes','authority','misspelling')),
            name_class  TEXT,
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
        ) WITHOUT ROWID
        """,
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

    /// What version 2 added to version 1, less its `tree_nodes` (folded into `taxa` in version 3).
    public static let fullTreeStatements: [String] = [
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

    /// Where a database comes from (``Provenance``): one row per key. Written by
    /// every build since it was added; optional for the server and the verifier, so
    /// that databases built before it keep importing and serving ("unknown").
    public static let provenanceStatement = """
        CREATE TABLE provenance (
            key         TEXT PRIMARY KEY,
            value       TEXT NOT NULL
        ) WITHOUT ROWID
        """

    /// Every statement a database of ``currentVersion`` is made with.
    public static let allStatements = statements + fullTreeStatements + [provenanceStatement]

    /// Tables every taxonomy database of `version` must have (the server checks on open).
    public static func requiredTables(version: Int) -> [String] {
        requiredColumns(version: version).map(\.table)
    }

    /// The columns the server reads, per table, in a database of `version`.
    public static func requiredColumns(version: Int) -> [(table: String, columns: [String])] {
        switch version {
        case ...1: legacyColumns
        case 2: legacyColumns + [("tree_nodes", ["id", "parent_id", "rank", "scientific_name"])] + retiredAndProminenceColumns
        default: columns + retiredAndProminenceColumns
        }
    }

    /// The indexes a database of `version` must have: without them the server's
    /// queries would scan whole tables (2.6 M rows), so an imported database must
    /// have every one.
    public static func requiredIndexes(version: Int) -> [String] {
        switch version {
        case ...1: legacyIndexes
        case 2: legacyIndexes + ["idx_tree_nodes_name"]
        default: indexNames(allStatements)
        }
    }

    static let retiredAndProminenceColumns: [(table: String, columns: [String])] = [
        ("merged_ids", ["old_id", "new_id"]),
        ("deleted_ids", ["id"]),
        ("prominence", ["taxon_id", "score"]),
    ]

    /// The columns of version 3 the server reads, per table: the verifier refuses an
    /// imported database that lacks one (a shape check after `PRAGMA integrity_check`).
    static let columns: [(table: String, columns: [String])] = [
        ("schema_version", ["version", "applied_at"]),
        ("taxa", ["id", "parent_id", "rank", "main_rank", "main_parent_id", "scientific_name", "author", "year",
                  "status", "conservation"]),
        ("names", ["id", "taxon_id", "name", "lang", "name_type", "name_class", "is_preferred"]),
    ] + sharedColumns

    /// Versions 1 and 2: `taxa` is the eight-rank view, names have no class.
    static let legacyColumns: [(table: String, columns: [String])] = [
        ("schema_version", ["version", "applied_at"]),
        ("taxa", ["id", "parent_id", "rank", "scientific_name", "author", "year", "status", "conservation"]),
        ("names", ["id", "taxon_id", "name", "lang", "name_type", "is_preferred"]),
    ] + sharedColumns

    static let sharedColumns: [(table: String, columns: [String])] = [
        ("refs", ["id", "taxon_id", "citation", "url", "ref_type"]),
        ("traits", ["id", "taxon_id", "trait_key", "trait_value", "unit", "source_ref"]),
        ("euler_tour", ["seq", "taxon_id", "depth"]),
        ("first_occurrence", ["taxon_id", "seq"]),
        ("top_n_relatives", ["taxon_id", "relative_id", "rank_order", "lca_id", "lca_depth", "distance"]),
        ("fts_taxa", ["taxon_id", "scientific_name", "common_names", "synonyms"]),
    ]

    /// The indexes of versions 1 and 2 (version 3 adds `idx_taxa_main_parent`).
    static let legacyIndexes = [
        "idx_taxa_parent", "idx_taxa_rank", "idx_taxa_status", "idx_taxa_name", "idx_names_taxon", "idx_names_lang",
        "idx_names_type", "idx_refs_taxon", "idx_traits_taxon", "idx_traits_key", "idx_top_n_taxon",
    ]

    private static func indexNames(_ statements: [String]) -> [String] {
        statements.compactMap { statement in
            guard statement.hasPrefix("CREATE INDEX ") else { return nil }
            return statement.dropFirst("CREATE INDEX ".count).split(separator: " ").first.map(String.init)
        }
    }
}
