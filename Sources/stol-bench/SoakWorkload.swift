import Foundation
import STOLModel
import STOLProtocol
import STOLTaxonomy

/// What a soak client does, in the order it cycles through.
enum SoakOperation: String, CaseIterable, Codable {
    case search = "search"
    case searchFiltered = "search, filtered"
    case searchPrefix = "search, prefix"
    case browse = "taxon/children/lineage"
    case detail = "detail"
    case compare = "compare"
    case relatives = "relatives"
    case lineageBatch = "lineage batch of 50"
    /// Pinned to the bundled database while the default switches: every answer must come from it.
    case pinned = "pinned to bundled"
    case favoriteAdd = "favourite add"
    case favoriteCheck = "favourite is-favourite"
    case favoriteRemove = "favourite remove"
    case favoriteList = "favourite list"
}

/// The requests of a soak, made once by `stol-bench soak` from the database and
/// read by every `soak-worker` (which may run as another user and cannot open it).
struct SoakWorkload: Codable {
    /// Serialized `Stol_V1_TaxonomyRequest`s per taxonomy operation.
    var taxonomy: [String: [Data]] = [:]
    /// Real taxon ids to mark as favourites.
    var favoriteIDs: [Int64] = []

    init(lookups: LookupQueries) throws {
        let sample = try TaxonomyBench.Workload(lookups: lookups, size: 500)
        func requests(_ operations: [TaxonomyBench.Operation]) throws -> [Data] {
            try operations.flatMap { sample.requests($0) }.map { body in
                var request = Stol_V1_TaxonomyRequest()
                request.body = body
                return Data(try request.serializedBytes() as [UInt8])
            }
        }
        taxonomy[SoakOperation.search.rawValue] = try requests([.searchWord, .searchFuzzy])
        taxonomy[SoakOperation.searchFiltered.rawValue] = try requests([.searchRank, .searchStatus, .searchCombined, .searchShortWords])
        taxonomy[SoakOperation.searchPrefix.rawValue] = try requests([.searchPrefix12, .searchPrefix])
        taxonomy[SoakOperation.browse.rawValue] = try requests([.taxon, .children, .ancestors])
        taxonomy[SoakOperation.detail.rawValue] = try requests([.detail])
        taxonomy[SoakOperation.compare.rawValue] = try requests([.compare])
        taxonomy[SoakOperation.relatives.rawValue] = try requests([.relativesPrecomputed, .relativesComputed])
        let species = try lookups.sampleIDs(rank: .species, count: 1000)
        taxonomy[SoakOperation.lineageBatch.rawValue] = try stride(from: 0, to: species.count - 50, by: 50).map { start in
            var request = Stol_V1_TaxonomyRequest()
            var batch = Stol_V1_LineageBatchRequest()
            batch.queries = species[start..<start + 50].map(String.init)
            request.lineageBatch = batch
            return Data(try request.serializedBytes() as [UInt8])
        }
        favoriteIDs = Array(species.prefix(200))
        // Taxa every bundled database has (the curated overlay's), asked of it by name.
        taxonomy[SoakOperation.pinned.rawValue] = try ([9606, 9689, 9615, 562, 3702, 7227, 10090, 9913] as [Int64]).map { id in
            var request = Stol_V1_TaxonomyRequest()
            request.release = ReleaseName.bundled
            request.getTaxon = .with { $0.taxonID = id }
            return Data(try request.serializedBytes() as [UInt8])
        }
    }

    func write(to path: String) throws {
        try JSONEncoder().encode(self).write(to: URL(fileURLWithPath: path))
    }

    static func read(from path: String) throws -> SoakWorkload {
        try JSONDecoder().decode(SoakWorkload.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    func requests(_ operation: SoakOperation) throws -> [Stol_V1_TaxonomyRequest] {
        try (taxonomy[operation.rawValue] ?? []).map { try Stol_V1_TaxonomyRequest(serializedBytes: [UInt8]($0)) }
    }
}

/// What one worker (one user) measured: latencies in ms and errors per operation.
struct SoakResult: Codable {
    var samples: [String: [Double]] = [:]
    var errors: [String: Int] = [:]
    /// The first few error messages, to say what went wrong.
    var messages: [String] = []
}
