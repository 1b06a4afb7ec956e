import Foundation
import STOLClientKit
import STOLProtocol

/// `fav export --format json`: a user's favourites as a file they can keep, move to
/// another machine and give back to `fav import`. The ids and times are what
/// matters (what the daemon keeps); the names help a reader and are ignored on
/// import. `format` and `version` let `fav import` refuse a foreign file before
/// reading a single entry.
struct FavoritesExportDocument: Codable {
    static let formatName = "stol-favorites"
    static let currentVersion = 1

    struct Entry: Codable {
        let taxonID: Int64
        let createdAt: String
        var scientificName, commonName, rank: String?

        enum CodingKeys: String, CodingKey {
            case taxonID = "taxon_id", createdAt = "created_at"
            case scientificName = "scientific_name", commonName = "common_name", rank
        }
    }

    let format: String
    let version: Int
    /// The release the names come from (empty when they could not be looked up).
    let release: String
    let count: Int
    let favorites: [Entry]

    init(listing: FavoriteListing, release: String) {
        format = Self.formatName
        version = Self.currentVersion
        self.release = release
        favorites = listing.rows.map { row in
            Entry(taxonID: row.taxonID, createdAt: row.createdAt, scientificName: row.taxon?.scientificName,
                  commonName: row.taxon.flatMap { $0.commonName.isEmpty ? nil : $0.commonName },
                  rank: row.taxon.map(FavoriteText.rank))
        }
        count = favorites.count
    }

    /// Why a file is not one to import: said before anything is sent.
    enum ReadError: Error, CustomStringConvertible {
        case unreadable(String)
        case notJSON(String)
        case foreign(String)
        case badEntry(index: Int, String)

        var description: String {
            switch self {
            case .unreadable(let reason): "cannot read the file: \(reason)"
            case .notJSON(let reason): "the file is not a favourites export (not valid JSON: \(reason))"
            case .foreign(let reason): "the file is not a favourites export of stol-client: \(reason)"
            case .badEntry(let index, let reason): "favourite \(index + 1) of the file is damaged: \(reason)"
            }
        }
    }

    /// The entries of an export at `path` ("-": standard input), each checked as
    /// the daemon checks them, so a damaged file is refused whole.
    static func read(_ path: String) throws(ReadError) -> [Stol_V1_FavoriteEntry] {
        let data: Data
        do {
            data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile()
                : try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadable((error as NSError).localizedDescription)
        }
        /// Read in two steps, so a foreign file is named as such before its entries are judged.
        struct Header: Decodable { let format: String?; let version: Int? }
        struct Body: Decodable { let count: Int?; let favorites: [Item]? }
        struct Item: Decodable {
            let taxonID: Int64?
            let createdAt: String?
            enum CodingKeys: String, CodingKey { case taxonID = "taxon_id", createdAt = "created_at" }
        }
        let decoder = JSONDecoder()
        let header: Header
        do { header = try decoder.decode(Header.self, from: data) } catch {
            throw (try? JSONSerialization.jsonObject(with: data)) == nil
                ? .notJSON(Self.reason(error)) : .foreign("its top level is not an object with a \"format\"")
        }
        guard header.format == formatName else { throw .foreign("\"format\" is not \"\(formatName)\"") }
        guard header.version == currentVersion else {
            throw .foreign("\"version\" is \(header.version.map(String.init) ?? "missing"); this client reads \(currentVersion)")
        }
        let body: Body
        do { body = try decoder.decode(Body.self, from: data) } catch {
            throw .foreign("its favourites are not a list of {\"taxon_id\", \"created_at\"} (\(Self.reason(error)))")
        }
        guard let favorites = body.favorites else { throw .foreign("it has no \"favorites\" list") }
        if let count = body.count, count != favorites.count {
            throw .foreign("it says \(count) favourites but holds \(favorites.count) (cut short?)")
        }
        return try favorites.enumerated().map { (index, item) throws(ReadError) in
            guard let id = item.taxonID, id > 0, id <= 1 << 53 else {
                throw .badEntry(index: index, "\"taxon_id\" is missing or not a taxon id (1…\(1 << 53))")
            }
            guard let created = item.createdAt, isTimestamp(created) else {
                throw .badEntry(index: index, "\"created_at\" of \(id) is not YYYY-MM-DDTHH:MM:SS.mmmZ")
            }
            return .with { $0.taxonID = id; $0.createdAt = created }
        }
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
             DecodingError.valueNotFound(_, let context), DecodingError.keyNotFound(_, let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    /// The daemon's timestamp form (it checks again): 2026-02-26T10:15:30.123Z.
    static func isTimestamp(_ text: String) -> Bool {
        text.range(of: #"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$"#,
                   options: .regularExpression) != nil
    }
}
