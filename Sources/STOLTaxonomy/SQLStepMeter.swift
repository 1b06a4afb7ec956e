import GRDB
import GRDBSQLite

/// Counts the SQLite virtual-machine steps of the statements run inside
/// ``metered(_:_:)`` and stops them once a budget is spent, or once the task that runs
/// them is cancelled (its client has gone).
///
/// A full-text query does its work inside SQLite, where no loop of ours can count it:
/// one step of "every name with these 16 words" or of a phrase of frequent words
/// merges posting lists of hundreds of thousands of rows before it returns a row (or
/// none). SQLite's progress handler is called every ``granularity`` steps of every
/// statement, FTS5's reads of its index pages included, so it meters that work as it
/// is done: counting steps (not time) makes the cap the same on every machine and the
/// answer the same for the same request. A statement it stops throws
/// `SQLITE_INTERRUPT`; the connection stays usable.
final class SQLStepMeter {
    /// Steps between two calls of the handler.
    static let granularity: Int32 = 64

    /// Steps allowed in all, over every metered statement.
    let limit: Int
    /// Steps counted so far (in units of ``granularity``).
    private(set) var steps = 0
    /// Whether a statement was stopped because the budget was spent.
    private(set) var interrupted = false

    init(limit: Int) {
        self.limit = limit
    }

    var exhausted: Bool { steps >= limit }

    /// Runs `body` with the meter on `db`'s connection; a statement that the meter stops
    /// makes `body` throw a `DatabaseError` with `SQLITE_INTERRUPT` (``isInterruption(_:)``).
    func metered<T>(_ db: Database, _ body: () throws -> T) rethrows -> T {
        let handler: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { context in
            guard let context else { return 0 }
            let meter = Unmanaged<SQLStepMeter>.fromOpaque(context).takeUnretainedValue()
            meter.steps += Int(SQLStepMeter.granularity)
            if meter.steps >= meter.limit || Task.isCancelled {
                meter.interrupted = true
                return 1
            }
            return 0
        }
        sqlite3_progress_handler(db.sqliteConnection, Self.granularity, handler, Unmanaged.passUnretained(self).toOpaque())
        defer { sqlite3_progress_handler(db.sqliteConnection, 0, nil, nil) }
        return try body()
    }

    /// Whether `error` is a statement this meter stopped.
    static func isInterruption(_ error: any Error) -> Bool {
        (error as? DatabaseError)?.resultCode == .SQLITE_INTERRUPT
    }
}
