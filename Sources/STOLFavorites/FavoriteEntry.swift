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

    /// Whether `text` has the one form SQLite writes here,
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` with a real calendar date and time, so entries
    /// merged from a file sort and display like those the daemon made.
    public static func isValidTimestamp(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 24 else { return false }
        let shape = Array("dddd-dd-ddTdd:dd:dd.dddZ".utf8)
        for (byte, expected) in zip(bytes, shape) {
            if expected == UInt8(ascii: "d") {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return false }
            } else if byte != expected {
                return false
            }
        }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + Int(bytes[$1] - UInt8(ascii: "0")) } }
        let (year, month, day) = (number(0..<4), number(5..<7), number(8..<10))
        let (hour, minute, second) = (number(11..<13), number(14..<16), number(17..<19))
        guard (1...12).contains(month), hour < 24, minute < 60, second < 60 else { return false }
        // A day the month has: 2021-02-30 and 2023-04-31 are no dates (Gregorian leap years).
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
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
