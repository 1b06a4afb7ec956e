import Logging
import STOLModel
import STOLProtocol
import STOLTransport

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

    /// Which of the caller's lanes the request runs on (`WorkClass`), from the
    /// request alone: bulk work (batches, subtrees, whole-tree relatives: work and
    /// answers that grow with the request) at a lower priority than the user's own
    /// lookups. Every request runs on its user's threads either way; what the
    /// database has loaded decides nothing here.
    static func cost(_ body: Body) -> WorkClass

    /// Whether the request may be answered inline, on the event loop that read it
    /// (``TaxonomyService/respondInline(to:context:)``): its work is a few
    /// microseconds whatever the request holds. False by default.
    static func answersInline(_ body: Body) -> Bool

    /// Whether the request counts as the users' activity that work nobody asked for
    /// waits to pause (``STOLTransport/RequestActivity``: the names' build after a
    /// start). True by default; false for a request that is what a script polls while
    /// it waits for that very work.
    static var holdsBackIdleWork: Bool { get }

    /// The request's fields that name one taxon by id: when such an id was merged
    /// into another (NCBI's `merged.dmp`), the service answers the request again with
    /// the new id in these fields and says so in the envelope's `merged`. Empty for
    /// requests that name no single taxon, and for batches, which answer each of
    /// their merged ids themselves (``TaxonomyRequestContext/merged``).
    static var mergedIDFields: [WritableKeyPath<Body, Int64>] { get }

    static func answer(_ body: Body, _ context: inout TaxonomyRequestContext) throws -> Stol_V1_TaxonomyResponse.OneOf_Result
}

extension TaxonomyRequestHandler {
    static func cost(_ body: Body) -> WorkClass { .interactive }
    static func answersInline(_ body: Body) -> Bool { false }
    static var holdsBackIdleWork: Bool { true }
    static var mergedIDFields: [WritableKeyPath<Body, Int64>] { [] }
}

/// What a handler answers with: the database selected for the request, the
/// service it belongs to, and what the envelope collects (merged ids).
struct TaxonomyRequestContext {
    let selection: ActiveDatabaseProvider.Selection
    let service: TaxonomyService
    /// The caller (SO_PEERCRED): whose counts the diagnostics report shows.
    let uid: UInt32
    let logger: Logger
    /// Merged ids a batch answered as their new taxa (the envelope's `merged`).
    var merged: [Stol_V1_MergedTaxon] = []

    var database: TaxonomyDatabase { selection.database }
}
