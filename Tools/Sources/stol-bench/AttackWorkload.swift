import ArgumentParser
import Foundation
import STOLModel
import STOLProtocol
import STOLTaxonomy
import SwiftProtobuf

/// What an attacker sends: each class of request issue 33 found costing the other
/// users, as one list of requests the attacker cycles through.
enum AttackRequests: String, CaseIterable, Codable, ExpressibleByArgument {
    /// A 512-byte search of one frequent word repeated, under a species (`within`),
    /// and the same query as one phrase without `within`: seconds of work each.
    case longSearch = "long-search"
    /// `roots`: cheap alone (45 ms on the full reference), answered inline.
    case roots
    /// `detail 2` (Bacteria, 13 ms): inline too.
    case detail
    /// The heaviest legal batches, in turn: name_lookup, lca_batch, induced_tree, a diff
    /// page, a whole-tree subtree and a lineage batch.
    case bulk
    /// A whole-tree subtree of 27,146 nodes (about 1 MB per answer): for pipelining.
    case subtree
    /// `list` of the attacker's favourites (50,000 after `fill`, about 2 MB per answer).
    case favoritesList = "fav-list"
    /// `count` of the attacker's favourites: a 16-byte answer, for pipelining many.
    case favoritesCount = "fav-count"
    /// `merge` of as many entries the attacker already has as fit in one request (64 KiB).
    case favoritesMerge = "fav-merge"
    /// The merges that give an attacker the most favourites a user may keep (50,000).
    case favoritesFill = "fav-fill"

    var service: String {
        switch self {
        case .favoritesList, .favoritesCount, .favoritesMerge, .favoritesFill: "favorites"
        default: "taxonomy"
        }
    }
}

/// The requests of an attack, made once by `stol-bench attack` from the database and
/// read by every attacker and the victim (which run as other users and do not open it).
struct AttackWorkload: Codable {
    /// Serialized request envelopes per ``AttackRequests`` (raw value): taxonomy or favourites.
    var requests: [String: [Data]] = [:]
    /// Taxa of every rank (and nodes of no main rank) the victim asks for by id.
    var victimTaxa: [Int64] = []

    /// The word the long searches repeat, and the species they search under. "sp" is
    /// in hundreds of thousands of NCBI names ("Streptomyces sp. …"), and 170 of it
    /// fill the 512-byte query limit.
    static let frequentWord = "sp"
    static let searchedUnder = "9606"
    /// A node of NCBI's whole tree with 27,146 nodes under it (Streptomycetaceae).
    static let largeSubtree: Int64 = 85011
    /// Ids the attackers keep as favourites (any positive id is a legal favourite).
    static let firstFavorite: Int64 = 1_000_000
    static let favoritesLimit = 50_000
    static let favoriteTime = "2025-01-01T00:00:00.000Z"

    init(lookups: LookupQueries) throws {
        let query = Array(repeating: Self.frequentWord, count: 170).joined(separator: " ")
        precondition(query.utf8.count <= ProtocolLimits.maximumQueryBytes)
        var withinSpecies = Stol_V1_SearchRequest()
        withinSpecies.query = query
        withinSpecies.within = Self.searchedUnder
        var phrase = Stol_V1_SearchRequest()
        phrase.query = query
        phrase.phrase = true
        try taxonomy(.longSearch, [withinSpecies, phrase].map { search in .with { $0.search = search } })
        try taxonomy(.roots, [.with { $0.roots = Stol_V1_RootsRequest() }])
        try taxonomy(.detail, [.with { $0.detail = .with { $0.taxonID = 2 } }])

        let species = try lookups.sampleIDs(rank: .species, count: 10_000)
        let subtree = Stol_V1_TaxonomyRequest.with {
            $0.subtree = .with { $0.taxonID = Self.largeSubtree; $0.maxTaxa = 50_000; $0.ranks = .all }
        }
        try taxonomy(.subtree, [subtree])
        let members = species.map(String.init)
        try taxonomy(.bulk, [
            .with { $0.nameLookup = .with { $0.names = Array(repeating: "environmental samples", count: 1000) } },
            .with {
                $0.lcaBatch = .with { batch in
                    batch.sets = stride(from: 0, to: members.count, by: 1000).map { start in
                        .with { $0.key = "from \(start)"; $0.members = Array(members[start..<min(start + 1000, members.count)]) }
                    }
                    batch.ranks = .all
                    batch.majority = 0.5
                }
            },
            .with { $0.inducedTree = .with { $0.taxonIds = species } },
            .with { $0.diff = .with { $0.fromRelease = ReleaseName.bundled; $0.toRelease = ReleaseName.bundled } },
            subtree,
            .with { $0.lineageBatch = .with { $0.queries = Array(members.prefix(1000)); $0.ranks = .all } },
        ])

        func entry(_ index: Int) -> Stol_V1_FavoriteEntry {
            .with { $0.taxonID = Self.firstFavorite + Int64(index); $0.createdAt = Self.favoriteTime }
        }
        try favorites(.favoritesList, [.with { $0.list = Stol_V1_ListFavorites() }])
        try favorites(.favoritesCount, [.with { $0.count = Stol_V1_CountFavorites() }])
        try favorites(.favoritesFill, stride(from: 0, to: Self.favoritesLimit, by: 1000).map { start in
            .with { $0.merge = .with { $0.entries = (start..<start + 1000).map(entry) } }
        })
        // As many of the attacker's own favourites as fit in the largest request: all duplicates.
        var merge = Stol_V1_FavoritesRequest.with { $0.id = UInt64.max }
        while (try merge.serializedBytes() as [UInt8]).count <= ProtocolLimits.maximumRequestFrameBytes {
            merge.merge.entries.append(entry(merge.merge.entries.count))
        }
        merge.merge.entries.removeLast()
        merge.id = 0
        try favorites(.favoritesMerge, [merge])

        for rank in TaxonRank.allCases { victimTaxa += try lookups.sampleIDs(rank: rank, count: 100) }
        victimTaxa += try lookups.sampleIDs(rank: nil, count: 200)
        victimTaxa.shuffle()
    }

    private mutating func taxonomy(_ kind: AttackRequests, _ list: [Stol_V1_TaxonomyRequest]) throws {
        requests[kind.rawValue] = try list.map { Data(try $0.serializedBytes() as [UInt8]) }
    }

    private mutating func favorites(_ kind: AttackRequests, _ list: [Stol_V1_FavoritesRequest]) throws {
        requests[kind.rawValue] = try list.map { Data(try $0.serializedBytes() as [UInt8]) }
    }

    /// The requests of `kind` as frames ready to write: the length prefix, then the body.
    func frames(_ kind: AttackRequests) -> [[UInt8]] {
        (requests[kind.rawValue] ?? []).map { body in
            withUnsafeBytes(of: UInt32(body.count).bigEndian) { Array($0) } + [UInt8](body)
        }
    }

    func write(to path: String) throws {
        try JSONEncoder().encode(self).write(to: URL(fileURLWithPath: path))
    }

    static func read(from path: String) throws -> AttackWorkload {
        try JSONDecoder().decode(AttackWorkload.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
