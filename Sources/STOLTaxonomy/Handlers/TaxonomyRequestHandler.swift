import Logging
import STOLModel
import STOLProtocol

/// How one kind of taxonomy request is answered: its name in the statistics, where
/// it runs, which of its ids a merge replaces, how it is checked and what it
/// answers. One conformance per request body, named once in
/// ``TaxonomyRequestTable``; ``TaxonomyService`` reads these and nothing else,
/// so a new request is a new handler and one row of that table.
///
/// Every handler checks its request before it does any work, and bounds its
/// answer before it builds it: a request that would cost more than the protocol
/// allows is refused with a typed `INVALID_REQUEST` naming the limit, or answered
/// with a marked truncation (`name_lookup`'s `total`).
protocol TaxonomyRequestHandler {
    associatedtype Body: Sendable

    /// The request's name in the request counts and the diagnostics report (the
    /// body's field name in `protocol/taxonomy.proto`); never its arguments.
    static var operation: String { get }

    /// Where the request runs, from the request alone (``RequestCost``): what the
    /// database has loaded decides nothing here, so the answer's encoding can be
    /// placed by the same rule.
    static func cost(_ body: Body) -> RequestCost

    /// The request's fields that name one taxon by id: when such an id was merged
    /// into another (NCBI's `merged.dmp`), the service answers the request again with
    /// the new id in these fields and says so in the envelope's `merged`. Empty for
    /// requests that name no single taxon, and for batches, which answer each of
    /// their merged ids themselves (``TaxonomyRequestContext/merged``).
    static var mergedIDFields: [WritableKeyPath<Body, Int64>] { get }

    static func answer(_ body: Body, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result
}

extension TaxonomyRequestHandler {
    static func cost(_ body: Body) -> RequestCost { .inline }
    static var mergedIDFields: [WritableKeyPath<Body, Int64>] { [] }
}

/// Where a request runs: what it may cost decides which threads it may hold.
enum RequestCost: Sendable, Equatable {
    /// On the event loop that read it: a lookup by id or through an index, tens to
    /// hundreds of microseconds from what is in memory. One that finds the
    /// in-memory indexes still loading (``TaxonomyError/memoryIndexesLoading``, in
    /// the seconds after a start or a switch) is handed to the task pool, which
    /// waits for them holding no thread.
    case inline
    /// On the task pool: it may take milliseconds (a search, a release's history),
    /// which would hold up every other connection of an event loop.
    case pool
    /// On the lower-priority threads of ``BulkExecutor``, paced per user
    /// (``BulkPacer``), its answer encoded there too: batches, subtrees, whole-tree
    /// relatives, whose work and answers grow with the request, so that they never
    /// delay another user's lookups on a busy machine.
    case bulk
}

/// What a handler answers with: the database selected for the request, the
/// service it belongs to, and what the envelope collects (merged ids).
struct TaxonomyRequestContext {
    let selection: ActiveDatabaseProvider.Selection
    let service: TaxonomyService
    let logger: Logger
    /// Merged ids a batch answered as their new taxa (the envelope's `merged`).
    var merged: [Stol_V1_MergedTaxon] = []

    var database: TaxonomyDatabase { selection.database }
}
