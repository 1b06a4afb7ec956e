/// Where a taxonomy database comes from, as the pipeline writes it into the
/// database's `provenance` table (and so under the `.stol` file's signature):
/// which source and release, whose ids, under what licence, how to cite it, and
/// which tool built it when.
///
/// The id namespace is what keeps one installation from silently changing the
/// meaning of everyone's ids: NCBI taxids, GBIF keys and Open Tree ids are all
/// plain integers.
public struct Provenance: Sendable, Equatable {
    /// "NCBI Taxonomy", "GBIF Backbone Taxonomy", … (with "+ curated overlay" when one was added).
    public var source: String
    /// The source's release: a date or a version ("2024.9.7"); "unknown" when the build could not tell.
    public var release: String
    /// Whose ids the database's taxon ids are: `ncbi-taxid`, `gbif-key`, `col-id`, `ott-id`.
    public var idNamespace: String
    public var licence: String
    public var attribution: String
    /// One line a paper can cite.
    public var citation: String
    /// The tool and version that built the database.
    public var tool: String
    /// When the database was built (ISO 8601, UTC).
    public var built: String

    public init(source: String, release: String, idNamespace: String, licence: String, attribution: String,
                citation: String, tool: String, built: String) {
        self.source = source
        self.release = release
        self.idNamespace = idNamespace
        self.licence = licence
        self.attribution = attribution
        self.citation = citation
        self.tool = tool
        self.built = built
    }

    /// The table's keys, in the order they are written.
    public static let keys = ["source", "release", "id_namespace", "licence", "attribution", "citation", "tool", "built"]

    /// (key, value) rows of the `provenance` table.
    public var rows: [(key: String, value: String)] {
        zip(Self.keys, [source, release, idNamespace, licence, attribution, citation, tool, built]).map { ($0, $1) }
    }

    /// From the table's rows; nil when a key is missing (a database built before
    /// the table, or a damaged one).
    public init?(rows: [String: String]) {
        guard let source = rows["source"], let release = rows["release"], let idNamespace = rows["id_namespace"],
              let licence = rows["licence"], let attribution = rows["attribution"], let citation = rows["citation"],
              let tool = rows["tool"], let built = rows["built"] else { return nil }
        self.init(source: source, release: release, idNamespace: idNamespace, licence: licence, attribution: attribution,
                  citation: citation, tool: tool, built: built)
    }
}
