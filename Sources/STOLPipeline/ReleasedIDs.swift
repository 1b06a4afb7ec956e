import Foundation
import GRDB
import STOLModel

/// The record of released taxon ids (docs/design/stable-ids.md §4–§5: once an id
/// is released it is immutable, because users' favourites are keyed by it).
///
/// A record is a TSV file with a header, one taxon per line, sorted by id:
/// `id\trank\tscientific_name`. A release writes it from the database it ships
/// (`stol-pipeline record-ids`); every later build is checked against every record
/// in `Pipeline/released-ids/` (`stol-pipeline check-ids`), and fails when a
/// released id disappeared or changed its scientific name or rank. New ids are fine.
public struct ReleasedIDs: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        public var rank: String
        public var scientificName: String
    }

    public var entries: [TaxonID: Entry]

    public static let header = "id\trank\tscientific_name"

    public init(entries: [TaxonID: Entry]) {
        self.entries = entries
    }

    /// Reads the taxa of a built database: every node since schema 3, each with its
    /// main rank where it has one (as records of schema 2 wrote it: `domain`, not
    /// NCBI's `superkingdom`), else its own.
    public init(database path: String) throws {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        var entries: [TaxonID: Entry] = [:]
        try queue.read { db in
            let rank = try db.columns(in: "taxa").contains { $0.name == "main_rank" } ? "coalesce(main_rank, rank)" : "rank"
            let rows = try Row.fetchCursor(db, sql: "SELECT id, \(rank) AS rank, scientific_name FROM taxa")
            while let row = try rows.next() {
                entries[row["id"]] = Entry(rank: row["rank"], scientificName: row["scientific_name"])
            }
        }
        self.entries = entries
    }

    /// Reads a record file.
    public init(recordFile path: String) throws(SourceError) {
        var (reader, header) = try DelimitedRowReader.headedTable(path: path)
        let id = try header.required("id"), rank = try header.required("rank")
        let name = try header.required("scientific_name")
        var entries: [TaxonID: Entry] = [:]
        while reader.next() {
            guard let taxonID = reader.int64(id) else {
                throw .badValue(file: path, line: reader.line, column: "id", value: reader.string(id))
            }
            guard let rankValue = reader.optionalString(rank), let nameValue = reader.optionalString(name) else {
                throw .badValue(file: path, line: reader.line, column: "rank/scientific_name", value: "")
            }
            entries[taxonID] = Entry(rank: rankValue, scientificName: nameValue)
        }
        self.entries = entries
    }

    /// Writes the record, sorted by id, replacing `path` atomically.
    public func write(to path: String) throws {
        var text = Self.header + "\n"
        for id in entries.keys.sorted() {
            let entry = entries[id]!
            text += "\(id)\t\(entry.rank)\t\(entry.scientificName)\n"
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// One broken promise.
    public enum Violation: Equatable, Sendable, CustomStringConvertible {
        case disappeared(TaxonID, Entry)
        case renamed(TaxonID, from: String, to: String)
        case reranked(TaxonID, from: String, to: String)

        public var description: String {
            switch self {
            case .disappeared(let id, let entry): "\(id) (\(entry.rank) \(entry.scientificName)) disappeared"
            case .renamed(let id, let from, let to): "\(id) changed its scientific name from '\(from)' to '\(to)'"
            case .reranked(let id, let from, let to): "\(id) changed its rank from \(from) to \(to)"
            }
        }
    }

    /// Every released id that `build` breaks, in id order.
    public func violations(in build: ReleasedIDs) -> [Violation] {
        var result: [Violation] = []
        for id in entries.keys.sorted() {
            let released = entries[id]!
            guard let now = build.entries[id] else {
                result.append(.disappeared(id, released))
                continue
            }
            if now.scientificName != released.scientificName {
                result.append(.renamed(id, from: released.scientificName, to: now.scientificName))
            }
            if now.rank != released.rank {
                result.append(.reranked(id, from: released.rank, to: now.rank))
            }
        }
        return result
    }
}
