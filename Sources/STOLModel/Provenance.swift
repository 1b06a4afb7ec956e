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
    /// One build's own name (`build_id`: 32 random hex digits, written by every build
    /// since 2026-11-29; nil before): what names the database's content where a path,
    /// a size or a time cannot (two builds of one release in the same second are two
    /// databases). A tree image the pipeline writes beside the database names it
    /// (`ShippedTreeImage` in STOLTaxonomy).
    public var buildID: String?

    public init(source: String, release: String, idNamespace: String, licence: String, attribution: String,
                citation: String, tool: String, built: String, buildID: String? = nil) {
        self.source = source
        self.release = release
        self.idNamespace = idNamespace
        self.licence = licence
        self.attribution = attribution
        self.citation = citation
        self.tool = tool
        self.built = built
        self.buildID = buildID
    }

    /// The table's keys every database with the table has, in the order they are written
    /// (`build_id` follows them, when there is one).
    public static let keys = ["source", "release", "id_namespace", "licence", "attribution", "citation", "tool", "built"]

    /// (key, value) rows of the `provenance` table.
    public var rows: [(key: String, value: String)] {
        zip(Self.keys, [source, release, idNamespace, licence, attribution, citation, tool, built]).map { ($0, $1) }
            + (buildID.map { [("build_id", $0)] } ?? [])
    }

    /// A new ``buildID``: 128 bits from the system's random source, as hex.
    public static func newBuildID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// From the table's rows; nil when a key is missing (a database built before
    /// the table, or a damaged one).
    public init?(rows: [String: String]) {
        guard let source = rows["source"], let release = rows["release"], let idNamespace = rows["id_namespace"],
              let licence = rows["licence"], let attribution = rows["attribution"], let citation = rows["citation"],
              let tool = rows["tool"], let built = rows["built"] else { return nil }
        self.init(source: source, release: release, idNamespace: idNamespace, licence: licence, attribution: attribution,
                  citation: citation, tool: tool, built: built, buildID: rows["build_id"])
    }
}
