import Foundation
import Glibc
import GRDB
import Logging
import Synchronization

/// One user's favourites: a private SQLite file plus an in-memory set of ids.
///
/// An actor, so every operation of one user runs one at a time: a check and the
/// write that depends on it can never interleave with another request of the same
/// user. The SQLite calls are synchronous on purpose — an `await` inside an
/// operation would let a second request in half-way (actor reentrancy). They are
/// small single-row transactions, so they hold a cooperative thread only briefly.
///
/// Durability: the file is in WAL mode with `synchronous = NORMAL`. A commit
/// appends to the `-wal` file with `write(2)` before it returns, so once an
/// operation is acknowledged its data sits in the kernel's page cache and survives
/// any death of this process, `SIGKILL` included. Only an OS crash or power loss
/// can lose the last few transactions (the WAL is fsynced at checkpoints, not at
/// every commit); even then the file stays consistent, never half-written. That is
/// the trade docs/design/favourites.md §6 makes for a re-addable list: no fsync per tap.
///
/// The file is created lazily by the first write; reads of a user without a file
/// answer "empty" without creating one, so nothing reappears after ``forgetMe()``.
public actor FavoritesStore {
    /// Most favourites one user may keep (see ``FavoritesError/limitReached(_:)``).
    public static let maximumFavorites = 50_000

    /// Sent once to the user after their damaged file had to be re-created.
    public static let damagedFileNotice =
        "Your favourites file was damaged and has been re-created empty; favourites saved before were lost."

    /// The user's database file; `-wal` and `-shm` live beside it.
    public nonisolated let path: String
    private let logger: Logger
    /// When a favourite is added; nil: SQLite's clock (the column's default).
    private let now: (@Sendable () -> Date)?
    private var database: DatabaseQueue?
    /// The user's favourite ids in memory, so that is-favourite and count (the
    /// heart icon of every screen) need no disk I/O. Written only by the actor,
    /// after a commit.
    private struct Memory {
        /// Mirrors the `taxon_id` column; updated only after a commit succeeded.
        var ids: Set<Int64> = []
        /// The file is open and `ids` reflects it.
        var loaded = false
        var pendingNotice: String?
    }

    private nonisolated let memory = Mutex(Memory())

    private var pendingNotice: String? {
        get { memory.withLock { $0.pendingNotice } }
        set { memory.withLock { $0.pendingNotice = newValue } }
    }

    /// - Parameter now: the time a favourite is added at (a test's own clock, so
    ///   that timestamps differ without sleeping); nil takes SQLite's clock.
    public init(path: String, logger: Logger, now: (@Sendable () -> Date)? = nil) {
        self.path = path
        self.logger = logger
        self.now = now
    }

    // MARK: - Operations

    /// Adds `taxonID` unless it is already a favourite; returns whether anything changed.
    public func add(_ taxonID: Int64) throws(FavoritesError) -> Bool {
        try Self.validate(taxonID)
        let database = try openCreatingIfNeeded()
        try checkRoom(for: taxonID)
        let addedAt = now?()
        let inserted = try write(database) { db in try Self.insert(taxonID, at: addedAt, into: db) }
        memory.withLock { _ = $0.ids.insert(taxonID) }
        return inserted
    }

    /// Removes `taxonID` if it is a favourite; returns whether anything changed.
    public func remove(_ taxonID: Int64) throws(FavoritesError) -> Bool {
        try Self.validate(taxonID)
        guard let database = try open(creating: false) else { return false }
        let removed = try write(database) { db in try FavoriteEntry.deleteOne(db, key: taxonID) }
        memory.withLock { _ = $0.ids.remove(taxonID) }
        return removed
    }

    /// Adds `taxonID` when absent, removes it when present; returns the new state.
    public func toggle(_ taxonID: Int64) throws(FavoritesError) -> Bool {
        try Self.validate(taxonID)
        let database = try openCreatingIfNeeded()
        try checkRoom(for: taxonID)
        let addedAt = now?()
        let isFavorite = try write(database) { db in
            try FavoriteEntry.deleteOne(db, key: taxonID) ? false : try Self.insert(taxonID, at: addedAt, into: db)
        }
        memory.withLock { memory in
            if isFavorite { memory.ids.insert(taxonID) } else { memory.ids.remove(taxonID) }
        }
        return isFavorite
    }

    /// Adds the entries that are not favourites yet, each with the time it carries
    /// (a user's `fav import`, an administrator's restore), in one transaction: all
    /// of them or, on an error, none. Never removes anything, and a favourite that
    /// is present keeps its own time. Returns how many were added and how many
    /// were there already (an id given twice counts once, at its earliest time).
    public func merge(_ entries: [FavoriteEntry]) throws(FavoritesError) -> (added: Int, alreadyPresent: Int) {
        var earliest: [Int64: String] = [:]
        for entry in entries {
            try Self.validate(entry.taxonID)
            guard FavoriteEntry.isValidTimestamp(entry.createdAt) else {
                throw .invalidTimestamp(taxonID: entry.taxonID, entry.createdAt)
            }
            if let seen = earliest[entry.taxonID], seen <= entry.createdAt { continue }
            earliest[entry.taxonID] = entry.createdAt
        }
        guard !earliest.isEmpty else { return (0, 0) }
        let database = try openCreatingIfNeeded()
        let new = memory.withLock { memory in earliest.keys.filter { !memory.ids.contains($0) } }
        let count = memory.withLock { $0.ids.count }
        if count + new.count > Self.maximumFavorites {
            throw .limitReached(Self.maximumFavorites)
        }
        let added = try write(database) { db in
            var added: [Int64] = []
            for id in new.sorted() {
                try db.execute(sql: "INSERT OR IGNORE INTO favorites (taxon_id, created_at) VALUES (?, ?)",
                               arguments: [id, earliest[id]!])
                if db.changesCount > 0 { added.append(id) }
            }
            return added
        }
        memory.withLock { $0.ids.formUnion(added) }
        return (added.count, earliest.count - added.count)
    }

    /// Copies the user's file to `destination` (a new file) with SQLite's online
    /// backup API, then switches the copy to a rollback journal so it is one
    /// self-contained file. This actor runs it, so none of the user's requests
    /// can change the file half-way: the copy holds every favourite acknowledged
    /// before it began. Nil when the user has no file; else the rows copied.
    public func backup(to destination: String) throws(FavoritesError) -> Int? {
        guard let database = try open(creating: false) else { return nil }
        do {
            let copy = try DatabaseQueue(path: destination)
            defer { try? copy.close() }
            try database.backup(to: copy)
            return try copy.writeWithoutTransaction { db in
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE")
                return try FavoriteEntry.fetchCount(db)
            }
        } catch {
            throw failure(error)
        }
    }

    /// Answered from memory: no disk I/O per heart icon.
    public func isFavorite(_ taxonID: Int64) throws(FavoritesError) -> Bool {
        try Self.validate(taxonID)
        _ = try open(creating: false)
        return memory.withLock { $0.ids.contains(taxonID) }
    }

    /// All favourites, newest first; equal timestamps (same millisecond) by ascending id.
    public func list() throws(FavoritesError) -> [FavoriteEntry] {
        guard let database = try open(creating: false) else { return [] }
        return try read(database) { db in
            try FavoriteEntry
                .order(FavoriteEntry.Columns.createdAt.desc, FavoriteEntry.Columns.taxonID.asc)
                .fetchAll(db)
        }
    }

    /// Answered from memory.
    public func count() throws(FavoritesError) -> Int {
        _ = try open(creating: false)
        return memory.withLock { $0.ids.count }
    }

    /// The count and whether `taxonID` is a favourite, from memory and without the
    /// actor, for an answer made inline on an event loop
    /// (``FavoritesService/respondInline(to:context:)``): nil while the file is not
    /// open, or a notice waits for the user (the actor's path opens it and gives it).
    /// Memory is written after each commit and before its answer is sent, so a
    /// change the user was told of is seen here.
    public nonisolated func fromMemory(_ taxonID: Int64? = nil) -> (count: Int, isFavorite: Bool)? {
        memory.withLock { memory in
            guard memory.loaded, memory.pendingNotice == nil else { return nil }
            return (memory.ids.count, taxonID.map { memory.ids.contains($0) } ?? false)
        }
    }

    /// Deletes every favourite but keeps the (now empty) file; returns how many were removed.
    public func clear() throws(FavoritesError) -> Int {
        guard let database = try open(creating: false) else { return 0 }
        let removed = try write(database) { db in try FavoriteEntry.deleteAll(db) }
        memory.withLock { $0.ids.removeAll() }
        // secure_delete has zeroed the freed pages; a truncating checkpoint copies
        // them into the main file and empties the -wal, which still holds older
        // copies of the deleted rows. No residue after a clear (docs/design/favourites.md §4).
        do {
            try database.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        } catch {
            logger.notice("checkpoint after clearing favourites failed", metadata: ["error": "\(Self.reason(error))"])
        }
        return removed
    }

    /// The database size, `page_count * page_size` (0 when the user has no file).
    public func storageBytes() throws(FavoritesError) -> Int64 {
        guard let database = try open(creating: false) else { return 0 }
        return try read(database) { db in
            let pages = try Int64.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let pageSize = try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            return pages * pageSize
        }
    }

    /// Closes and deletes the user's file with its `-wal` and `-shm`: nothing is left.
    public func forgetMe() throws(FavoritesError) {
        close()
        memory.withLock { $0.ids.removeAll(); $0.pendingNotice = nil }
        try removeFiles()
    }

    /// The one-time notice for the user (a damaged file was re-created), then nil.
    public func takeNotice() -> String? {
        defer { pendingNotice = nil }
        return pendingNotice
    }

    /// Releases the SQLite connection; the next operation opens the file again.
    public func close() {
        memory.withLock { $0.loaded = false }
        try? database?.close()
        database = nil
    }

    // MARK: - Opening

    /// The open database; the first write creates the file.
    private func openCreatingIfNeeded() throws(FavoritesError) -> DatabaseQueue {
        guard let database = try open(creating: true) else {
            throw .storageFailure("cannot open the favourites file")  // unreachable: creating never answers nil
        }
        return database
    }

    /// The open database, opening (and, with `creating`, creating) it on first use.
    /// Nil when the user has no file and `creating` is false.
    private func open(creating: Bool) throws(FavoritesError) -> DatabaseQueue? {
        if let database { return database }
        if !creating && !FileManager.default.fileExists(atPath: path) { return nil }
        let opened: (queue: DatabaseQueue, ids: Set<Int64>)
        do {
            opened = try Self.openVerified(path)
        } catch where Self.isDamage(error) {
            // The file cannot be trusted, and a renamed-aside copy would be residue
            // the user cannot see or delete: remove it and start empty, and tell
            // the user once. No uid here: the notice must not identify anyone.
            logger.notice("a favourites file was damaged; deleted it and started an empty one")
            try removeFiles()
            pendingNotice = Self.damagedFileNotice
            do { opened = try Self.openVerified(path) } catch { throw Self.storageError(error) }
        } catch {
            throw Self.storageError(error)
        }
        database = opened.queue
        memory.withLock { $0.ids = opened.ids; $0.loaded = true }
        return opened.queue
    }

    /// Opens `path` (creating it 0600 in a 0700 directory), checks its integrity,
    /// migrates it and returns it with the ids that warm the cache.
    private static func openVerified(_ path: String) throws -> (queue: DatabaseQueue, ids: Set<Int64>) {
        try createFile(path)
        var configuration = Configuration()
        configuration.label = "favorites"
        configuration.prepareDatabase { db in
            // WAL + NORMAL: acknowledged commits survive a process kill (see the type's comment).
            guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                throw FavoritesError.storageFailure("cannot switch the favourites file to WAL mode")
            }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Deleted rows are overwritten with zeros, not left in free pages.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        do {
            let ids = try queue.write { db in
                guard try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"] else { throw DamagedFile() }
                try FavoritesSchema.migrate(db)
                return try FavoriteEntry.select(FavoriteEntry.Columns.taxonID, as: Int64.self).fetchSet(db)
            }
            return (queue, ids)
        } catch {
            try? queue.close()
            throw error
        }
    }

    /// Creates the directory (0700) and the file (0600) before SQLite sees them, so
    /// the data is never readable by others, not even for a moment; SQLite gives
    /// the `-wal` and `-shm` files the mode of the database file.
    ///
    /// Called only while this store has no connection open: closing a descriptor
    /// drops every POSIX lock the process holds on the file, SQLite's included.
    private static func createFile(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            guard chmod(directory, 0o700) == 0 else { throw FileError(operation: "restrict the directory", errno: errno) }
        }
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw FileError(operation: "create the favourites file", errno: errno) }
        defer { _ = Glibc.close(fd) }
        guard fchmod(fd, 0o600) == 0 else { throw FileError(operation: "restrict the favourites file", errno: errno) }
    }

    /// Deletes the database and its companions, then makes the deletion durable.
    private func removeFiles() throws(FavoritesError) {
        for suffix in ["", "-wal", "-shm", "-journal"] where unlink(path + suffix) != 0 && errno != ENOENT {
            throw .storageFailure(FileError(operation: "delete the favourites file", errno: errno).description)
        }
        let directory = Glibc.open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            _ = Glibc.close(directory)
        }
    }

    // MARK: - Helpers

    private static func validate(_ taxonID: Int64) throws(FavoritesError) {
        guard taxonID > 0, taxonID <= FavoritesError.maximumTaxonID else { throw .invalidTaxonID(taxonID) }
    }

    private func checkRoom(for taxonID: Int64) throws(FavoritesError) {
        let full = memory.withLock { $0.ids.count >= Self.maximumFavorites && !$0.ids.contains(taxonID) }
        if full {
            throw .limitReached(Self.maximumFavorites)
        }
    }

    /// Inserts with the schema's default timestamp, or `date` in the same format;
    /// false when the id was present.
    private static func insert(_ taxonID: Int64, at date: Date?, into db: Database) throws -> Bool {
        if let date {
            try db.execute(sql: """
                INSERT OR IGNORE INTO favorites (taxon_id, created_at)
                VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', ?, 'unixepoch'))
                """, arguments: [taxonID, date.timeIntervalSince1970])
        } else {
            try db.execute(sql: "INSERT OR IGNORE INTO favorites (taxon_id) VALUES (?)", arguments: [taxonID])
        }
        return db.changesCount > 0
    }

    /// Runs `updates` in a transaction; returns only after it committed.
    private func write<T>(_ database: DatabaseQueue, _ updates: (Database) throws -> T) throws(FavoritesError) -> T {
        do { return try database.write(updates) } catch { throw failure(error) }
    }

    private func read<T>(_ database: DatabaseQueue, _ value: (Database) throws -> T) throws(FavoritesError) -> T {
        do { return try database.read(value) } catch { throw failure(error) }
    }

    /// Damage found during an operation closes the file, so the next request
    /// re-opens it through the integrity check (and re-creates it if needed).
    private func failure(_ error: any Error) -> FavoritesError {
        if Self.isDamage(error) {
            logger.notice("a favourites file turned out damaged; it will be checked on next use")
            close()
        }
        return Self.storageError(error)
    }

    private static func isDamage(_ error: any Error) -> Bool {
        if error is DamagedFile { return true }
        guard let error = error as? DatabaseError else { return false }
        return error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
    }

    private static func storageError(_ error: any Error) -> FavoritesError {
        (error as? FavoritesError) ?? .storageFailure(reason(error))
    }

    /// A description of a storage failure that names neither the file (its name is
    /// the uid) nor any value: SQLite's own message, or the errno text.
    private static func reason(_ error: any Error) -> String {
        switch error {
        case let error as DatabaseError: error.message ?? "SQLite error \(error.resultCode.rawValue)"
        case let error as FileError: error.description
        default: "\(type(of: error))"
        }
    }
}

/// `PRAGMA integrity_check` did not answer "ok".
private struct DamagedFile: Error {}

/// A failed file-system call, described without the path.
private struct FileError: Error, CustomStringConvertible {
    let operation: String
    let errno: Int32
    var description: String { "cannot \(operation): \(String(cString: strerror(errno)))" }
}
