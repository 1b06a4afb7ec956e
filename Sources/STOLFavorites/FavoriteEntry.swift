import GRDB

/// One saved favourite: the opaque species key and when it was saved.
///
/// These are the only two facts the service keeps (docs/design/favourites.md §1,
/// §2): nothing here identifies a person, and the user's uid is only the
/// file's name, never a value inside it.
public struct FavoriteEntry: Codable, Equatable, Sendable, FetchableRecord, TableRecord {
    public static let databaseTableName = "favorites"

    public var taxonID: Int64
    /// ISO-8601 UTC with milliseconds exactly as SQLite wrote it
    /// (`2026-02-26T10:15:30.123Z`); kept as text so it reaches clients unchanged.
    public var createdAt: String

    public init(taxonID: Int64, createdAt: String) {
        self.taxonID = taxonID
        self.createdAt = createdAt
    }

    /// Both columns, in this order, whatever the table's column order: ``init(row:)``
    /// reads them by position.
    public static var databaseSelection: [any SQLSelectable] { [Columns.taxonID, Columns.createdAt] }

    /// Decoded by position rather than through `Decodable`: listing 10,000
    /// favourites is on a waiting user's path, and the keyed decoder cost more than
    /// the query itself (issue 5: a list of 10,000 in ≤ 20 ms).
    public init(row: Row) throws {
        taxonID = row[0]
        createdAt = row[1]
    }

    enum CodingKeys: String, CodingKey {
        case taxonID = "taxon_id"
        case createdAt = "created_at"
    }

    /// The two columns, for type-checked queries.
    public enum Columns {
        public static let taxonID = Column(CodingKeys.taxonID)
        public static let createdAt = Column(CodingKeys.createdAt)
    }
}
