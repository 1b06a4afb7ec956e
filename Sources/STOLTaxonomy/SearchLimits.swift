import GRDB
import STOLModel
import STOLProtocol

/// What one search may examine (docs/design/queries-and-algorithms.md §7.7; protocol/PROTOCOL.md
/// §9): its cost is bounded before it is paid, by what it will look at, not by the
/// bytes of its text. A query over ``words`` is refused (`INVALID_REQUEST` naming the
/// limit); a search that reaches another cap answers the best of what it examined and
/// says so (`SearchResponse.partial`).
public struct SearchLimits: Sendable, Equatable {
    /// Distinct words a query may match (``SearchQuery/matchWordCount``: a word typed
    /// again counts once, a phrase counts each of its words). Each costs a posting
    /// list merged by FTS5; the longest names people paste have fewer.
    public var words: Int
    /// Rows of a full-text match one walk may read while it looks for the few that pass
    /// a filter it cannot give FTS5 (`within` a large taxon, a rank).
    public var rowsPerWalk: Int
    /// Rows all the walks of one search may read.
    public var rows: Int
    /// SQLite steps of all the full-text statements of one search (``SQLStepMeter``):
    /// what FTS5 does inside one step, merging the posting lists of frequent words or
    /// checking a phrase in each of their rows, is counted here.
    public var sqlSteps: Int
    /// A `within` taxon with at most this many nodes under it (itself included) is
    /// searched by its nodes' own names rather than through the words' matches: a
    /// frequent word under a small taxon would otherwise be looked for among all its
    /// matches in the tree.
    public var cladeNodes: Int
    /// Candidates scored in all (each costs a read of its names).
    public var candidates: Int

    public init(words: Int = 16, rowsPerWalk: Int = 20_000, rows: Int = 40_000, sqlSteps: Int = 400_000,
                cladeNodes: Int = 2_000, candidates: Int = 2_500) {
        self.words = words
        self.rowsPerWalk = rowsPerWalk
        self.rows = rows
        self.sqlSteps = sqlSteps
        self.cladeNodes = cladeNodes
        self.candidates = candidates
    }

    /// The limits every search runs with.
    public static let standard = SearchLimits()
}

/// What one search examined: the counters its caps are checked against, for tests and
/// benchmarks to see the work a request did, not how long it took.
public struct SearchWork: Sendable, Equatable {
    /// Full-text rows read by walks that filter them.
    public var rowsRead = 0
    /// SQLite steps of the full-text statements (in steps of ``SQLStepMeter/granularity``).
    public var sqlSteps = 0
    /// Nodes of a small `within` taxon searched by their names.
    public var cladeNodes = 0
    /// Candidates scored (gathered before scoring, approximate ones included).
    public var candidates = 0
    /// A cap stopped the search before it examined every match: the hits are the best
    /// of what it examined.
    public var partial = false
}

/// A search's hits and what finding them took.
public struct SearchAnswer: Sendable {
    public var hits: [Stol_V1_SearchHit]
    public var work: SearchWork
}

/// One search under way: its limits, the meter of its full-text statements and its
/// counters, handed to every source of candidates.
final class SearchRun {
    let limits: SearchLimits
    let meter: SQLStepMeter
    var work = SearchWork()

    init(limits: SearchLimits) {
        self.limits = limits
        meter = SQLStepMeter(limit: limits.sqlSteps)
    }

    /// Marks the answer partial: a cap stopped the search.
    func capped() { work.partial = true }

    /// `ids` without repeats, as many as may still be scored (``SearchLimits/candidates``,
    /// the first kept: the exact names come first); counted.
    func bounded(_ ids: [TaxonID]) -> [TaxonID] {
        var seen = Set<TaxonID>()
        var unique = ids.filter { seen.insert($0).inserted }
        let room = max(0, limits.candidates - work.candidates)
        if unique.count > room {
            unique = Array(unique.prefix(room))
            capped()
        }
        work.candidates += unique.count
        return unique
    }

    /// The ids a full-text statement gives (its first column) that `accept` passes, until
    /// `limit` passed, the statement ended, or a cap stopped it: the search's SQL steps
    /// (``SQLStepMeter``), or, for a walk that filters (`filters`), the rows one walk or
    /// the whole search may read. What it found before a cap is kept, and the answer is
    /// then partial. The loop is the place for a cancellation check as well: the meter
    /// stops the statement once the task is cancelled.
    func ids(_ db: Database, _ sql: String, _ arguments: StatementArguments, limit: Int, filters: Bool = false,
             accept: (TaxonID) -> Bool = { _ in true }) throws -> [TaxonID] {
        var ids: [TaxonID] = []
        guard limit > 0 else { return ids }
        guard !meter.exhausted else {
            capped()
            return ids
        }
        do {
            try meter.metered(db) {
                let rows = try TaxonID.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
                var read = 0
                while ids.count < limit, let id = try rows.next() {
                    if filters {
                        if read >= limits.rowsPerWalk || work.rowsRead >= limits.rows {
                            capped()
                            break
                        }
                        read += 1
                        work.rowsRead += 1
                    }
                    if accept(id) { ids.append(id) }
                }
            }
        } catch where SQLStepMeter.isInterruption(error) {
            capped()
        }
        work.sqlSteps = meter.steps
        return ids
    }
}
