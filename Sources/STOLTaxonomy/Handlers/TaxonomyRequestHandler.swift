import Logging
import STOLModel
import STOLProtocol

/// How one kind of taxonomy request is answered: where it runs, how it is
/// checked, and what it answers. One conformance per request body; the service
/// only dispatches (``TaxonomyService``).
///
/// Every handler checks its request before it does any work, and bounds its
/// answer before it builds it: a request that would cost more than the protocol
/// allows is refused with a typed `INVALID_REQUEST` naming the limit, or answered
/// with a marked truncation (`name_lookup`'s `total`).
protocol TaxonomyRequestHandler {
    associatedtype Body

    /// True when the request is answered on the event loop that read it: a lookup
    /// by id or through an index, tens to hundreds of microseconds, from what is
    /// already in memory. Anything that may take longer (a scan, a batch, a wait
    /// for the in-memory trees) runs on the task pool instead.
    static func runsInline(_ body: Body, database: TaxonomyDatabase) -> Bool

    /// True for bulk work (batches, subtrees, whole-tree relatives): it runs on the
    /// lower-priority threads of ``BulkExecutor``, so that it never delays another
    /// user's lookups on a busy machine.
    static func isBulk(_ body: Body) -> Bool

    static func answer(_ body: Body, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result
}

extension TaxonomyRequestHandler {
    static func runsInline(_ body: Body, database: TaxonomyDatabase) -> Bool { true }
    static func isBulk(_ body: Body) -> Bool { false }
}

/// What a handler answers with: the database selected for the request, the
/// service it belongs to, and what the envelope collects (merged ids).
struct TaxonomyRequestContext {
    let selection: ActiveDatabaseProvider.Selection
    let service: TaxonomyService
    let logger: Logger
    /// Merged ids a batch answered as their new taxa (the envelope's `merged`).
    var merged: [Stol_V1_MergedTaxon] = []

    var queries: TaxonomyQueries { TaxonomyQueries(database: selection.database) }
    var database: TaxonomyDatabase { selection.database }
}

/// The checks the handlers share.
enum RequestChecks {
    static func id(_ id: Int64) throws(TaxonomyError) {
        guard id > 0 else { throw .invalidArgument("taxon ids are positive integers, got \(id)") }
    }

    static func pageSize(_ requested: UInt32) throws(TaxonomyError) -> Int {
        if requested == 0 { return Int(ProtocolLimits.defaultPageSize) }
        guard requested <= ProtocolLimits.maximumPageSize else {
            throw .invalidArgument("limit must be at most \(ProtocolLimits.maximumPageSize)")
        }
        return Int(requested)
    }

    /// At most ``TaxonomyQueries/maximumBatchQueries`` items of a batch.
    static func batch(_ count: Int, _ what: String) throws(TaxonomyError) {
        guard count <= TaxonomyQueries.maximumBatchQueries else {
            throw .invalidArgument("at most \(TaxonomyQueries.maximumBatchQueries) \(what) per request")
        }
    }

    /// The language of common names a request asks for: "en" when it names none;
    /// one the database has no names in is refused (a typo such as `--lang sp`
    /// would otherwise answer every taxon without its common name, silently).
    static func language(_ requested: String, in database: TaxonomyDatabase) throws(TaxonomyError) -> String {
        if requested.isEmpty || requested == "en" || database.languages.contains(requested) {
            return requested.isEmpty ? "en" : requested
        }
        let known = database.languages.sorted()
        let shown = known.prefix(30).joined(separator: ", ") + (known.count > 30 ? ", …" : "")
        var hint = ""
        if let close = known.first(where: { $0.lowercased() == requested.lowercased()
                                            || $0.lowercased() == requested.lowercased().split(separator: "-").first.map(String.init) }) {
            hint = "; did you mean \(close)?"
        }
        throw .invalidArgument("release \(database.release) has no names in language '\(requested.prefix(35))'\(hint) "
                               + "(it has: \(shown.isEmpty ? "none" : shown))")
    }

    /// IUCN Red List categories (`protocol/PROTOCOL.md` §4, `conservation`).
    static let conservationCodes: Set<String> = ["LC", "NT", "VU", "EN", "CR", "EW", "EX", "NE", "DD"]
}
