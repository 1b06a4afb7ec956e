import CMemory
import Foundation
import Glibc
import GRDB
import Logging
import STOLModel
import STOLFileSystem
import STOLProtocol
import STOLTransport
import Synchronization

/// One taxonomy database file, opened read-only.
///
/// Opening checks what the server relies on (required tables present, its facts
/// by their one reader's rules, ``DatabaseFacts``, and a schema version this build
/// understands) so that an unusable reference database is detected at switch
/// time and the bundled one keeps serving.
///
/// Several read-only connections serve concurrent requests (one GRDB queue
/// would serialise every client behind one thread). The in-memory indexes
/// (``MemoryIndexes``) are built in the background after opening, so opening
/// stays fast (cold start) on the full NCBI tree.
public final class TaxonomyDatabase: Sendable {
    public let path: String
    public let kind: Stol_V1_DatabaseKind
    public let schemaVersion: Int
    /// Where this schema keeps the eight-rank view and the whole tree.
    public let layout: TaxonomyLayout
    /// Rows of `taxa`: every node in schema 3, the eight-rank view before.
    public let taxaCount: Int
    private let speciesCountSlot = Mutex<Int?>(nil)
    /// Taxa of main rank species: counted when first asked (`status`, diagnostics),
    /// not at every open, whose first answer waited 73 ms for it on NCBI's. When
    /// the whole tree (every row of `taxa`) is in memory it is counted there, in a few
    /// milliseconds: a batch's first request is a `status` (the release it pins), and
    /// SQL's count held a one-off job's first answer 70–100 ms.
    public var speciesCount: Int {
        if let known = speciesCountSlot.withLock({ $0 }) { return known }
        let counted: Int
        if schemaVersion >= 3, let tree = memoryIndexes?.wholeTree {
            counted = tree.count(ofMainRank: .species)
        } else {
            let sql = "SELECT count(*) FROM taxa WHERE \(layout.mainRank) = 'species'"
            guard let fromRows = try? read({ db in try Int.fetchOne(db, sql: sql) ?? 0 }) else { return 0 }
            counted = fromRows
        }
        speciesCountSlot.withLock { $0 = counted }
        return counted
    }
    public let namesCount: Int
    /// Rows per species in `top_n_relatives` (the pipeline's N; 0 when empty).
    public let precomputedRelatives: Int
    /// Nodes of the source's whole tree (schema 3 `taxa`, schema 2 `tree_nodes`): 0
    /// when the database keeps only the main ranks (schema 1, or a schema 2 build
    /// without the tree).
    public let fullTreeCount: Int
    public let sizeBytes: UInt64
    public let fingerprint: String
    /// The `provenance` table; nil for a database built before it.
    public let provenance: Provenance?
    /// The name that pins this database: ``ReleaseName/bundled`` for the bundled one,
    /// else its release (``ReleaseName/of(_:)``).
    public let release: String
    /// `schema_version.applied_at`: when the pipeline built it.
    public let buildTime: String
    /// The language tags of its names (`names.lang`), so a request for a language
    /// it has no names in is told so instead of silently getting none.
    public let languages: Set<String>
    private let readers: [DatabaseQueue]
    /// The connection the in-memory indexes are built from, none of the readers:
    /// a request that found every reader busy and waited on the one the build
    /// holds waited for the whole build (measured by `stol-bench switch`: 4.8 s).
    private let indexReader: DatabaseQueue
    private let freeReaders: Mutex<[Int]>
    /// Each user's own connections (``ReaderKey``), for requests; the shared
    /// ``readers`` serve the rest.
    let userReaders: UserReaders
    private let indexes = IndexesSlot()

    /// Read connections: a two-core machine is served well by four.
    public static let readerCount = 4

    /// When ``MemoryIndexes`` are built.
    enum IndexLoading {
        /// On a thread of its own, started when the database is opened.
        case background
        /// Never (the benchmark's in-process floor opens databases without them).
        case never
        /// Once ``startLoadingMemoryIndexes()`` is called: tests hold the build
        /// back to see what is answered while it has not finished.
        case onRequest
    }

    /// Where the tree's image is read from and written to (``TreeImageCache``); nil: none.
    let treeImages: TreeImageCache?

    /// - Parameter loadIndexes: build ``MemoryIndexes`` in the background (the
    ///   benchmark's in-process floor opens databases without them).
    /// - Parameter treeImages: read the tree from its image there, else build it and
    ///   write its image there.
    public convenience init(path: String, kind: Stol_V1_DatabaseKind, loadIndexes: Bool = true,
                            treeImages: TreeImageCache? = nil) throws(TaxonomyError) {
        try self.init(path: path, kind: kind, indexLoading: loadIndexes ? .background : .never, treeImages: treeImages)
    }

    init(path: String, kind: Stol_V1_DatabaseKind, indexLoading: IndexLoading, treeImages: TreeImageCache? = nil) throws(TaxonomyError) {
        self.path = path
        self.kind = kind
        self.treeImages = treeImages
        guard let stat = FileStat(path: path) else {
            throw .databaseUnusable(path: path, reason: "file not found or not readable")
        }
        self.sizeBytes = stat.size
        self.fingerprint = stat.fingerprint
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "taxonomy"
        // The file is never written in place (a new database replaces it by
        // rename), so each connection may keep its shared lock: no fcntl lock and
        // unlock, and no change-counter check, around every query (measured:
        // a visible share of a 20 µs lookup).
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
        }
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            let (facts, counts, languages) = try queue.inDatabase { db throws -> (DatabaseFacts, DatabaseCounts, Set<String>) in
                let tables = try Set(String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type IN ('table')"))
                func requireTables(of version: Int) throws {
                    let missing = TaxonomySchema.requiredTables(version: version).filter { !tables.contains($0) }
                    guard missing.isEmpty else {
                        throw TaxonomyError.databaseUnusable(path: path, reason: "missing tables \(missing.joined(separator: ", "))")
                    }
                }
                // A file that is no taxonomy database (an empty file is a valid empty
                // SQLite database) is told by the tables every version has, before its facts.
                try requireTables(of: 1)
                let facts: DatabaseFacts
                do throws(DatabaseFactsError) {
                    facts = try DatabaseFacts.read(db)
                } catch {
                    throw TaxonomyError.databaseUnusable(path: path, reason: error.description)
                }
                guard TaxonomySchema.supportedVersions.contains(facts.schemaVersion) else {
                    throw TaxonomyError.databaseUnusable(
                        path: path, reason: "schema version \(facts.schemaVersion); this server understands 1...\(TaxonomySchema.currentVersion)")
                }
                let version = Int(facts.schemaVersion)
                try requireTables(of: version)
                // One index seek per language (idx_names_lang), not a scan of every name.
                let languages = try Set(String.fetchAll(db, sql: """
                    WITH RECURSIVE tags(tag) AS (
                        SELECT min(lang) FROM names
                        UNION ALL
                        SELECT (SELECT min(lang) FROM names WHERE lang > tag) FROM tags WHERE tag IS NOT NULL)
                    SELECT tag FROM tags WHERE tag IS NOT NULL AND tag <> ''
                    """))
                return (facts, try DatabaseCounts.fetch(db, schemaVersion: version), languages)
            }
            schemaVersion = Int(facts.schemaVersion)
            provenance = facts.provenance
            release = kind == .bundled ? ReleaseName.bundled : facts.release
            buildTime = facts.buildTime
            self.languages = languages
            layout = TaxonomyLayout(schemaVersion: schemaVersion)
            taxaCount = counts.taxa
            namesCount = counts.names
            precomputedRelatives = counts.precomputedRelatives
            fullTreeCount = counts.wholeTreeNodes
            var readers = [queue]
            for _ in 1..<Self.readerCount { readers.append(try DatabaseQueue(path: path, configuration: configuration)) }
            self.readers = readers
            indexReader = try DatabaseQueue(path: path, configuration: configuration)
            userReaders = UserReaders { [configuration] in try DatabaseQueue(path: path, configuration: configuration) }
        } catch let error as TaxonomyError {
            throw error
        } catch {
            throw .databaseUnusable(path: path, reason: "\(error)")
        }
        freeReaders = Mutex(Array(readers.indices))
        switch indexLoading {
        case .background: startLoadingMemoryIndexes()
        case .never:
            _ = indexes.claimBuild()
            indexes.fill(MemoryIndexes.empty)
        case .onRequest: break
        }
    }

    /// A switch away from this database frees its indexes (over 100 MiB on the
    /// full NCBI build) and its connections' page caches. Freed, that memory may stay
    /// with the allocator, and the daemon's RSS at the peak of both databases (+143
    /// MiB after an activate and a deactivate in `stol-bench soak`, under glibc's
    /// malloc); so it is freed and handed back (`stol_heap_return_freed`) on a thread
    /// of its own: the last reference may go while the provider's lock is held.
    deinit {
        let readers = self.readers + [indexReader], slot = indexes, userReaders = self.userReaders
        let thread = Thread(named: "stol.release") {
            slot.release()
            for reader in readers { try? reader.close() }
            userReaders.close()
            stol_heap_return_freed()
        }
        thread.start()
    }

    /// Builds the in-memory indexes on a thread of its own (not one of the
    /// cooperative pool: the build takes seconds on the full tree), unless a
    /// build was started already. The tree answers as soon as it is there (read
    /// from its image, or built), before the names' indexes; a tree built from the
    /// rows is written as an image at once, on a thread of its own (``TreeImageWrites``).
    func startLoadingMemoryIndexes() {
        guard indexes.claimBuild() else { return }
        let reader = indexReader
        let slot = indexes
        let layout = self.layout
        let image = treeImages?.entry(databasePath: path, fingerprint: fingerprint)
        let path = self.path, buildID = provenance?.buildID
        let release = self.release, everyNode = layout.everyNode
        let thread = Thread(named: "stol.indexes") {
            let logger = Logger(label: "stol.taxonomy")
            let started = ContinuousClock.now
            // The server's own image first (rewritten when a shipped one was refused), then the
            // pipeline's, whose key reads the database's header: here, not on the open's path.
            let images = [image, ShippedTreeImage.entry(databasePath: path, buildID: buildID)].compactMap { $0 }
            let loaded = try? reader.inDatabase { db in
                try MemoryIndexes.load(db, layout: layout, images: images, background: slot.builder) { tree, source in
                    slot.fillTree(tree)
                    logger.info("tree ready", metadata: ["release": "\(release)", "seconds": "\((ContinuousClock.now - started).inSeconds)"])
                    // A tree built from the rows is imaged at once, beside the names' indexes: a
                    // stop right after a first start (a one-off job, a restart) waits for it.
                    if let image, everyNode, case .rows(let miss) = source, let built = tree.tree {
                        if case .refused(let reason)? = miss {
                            logger.notice("tree image refused; writing the server's own", metadata: ["path": "\(image.path)", "reason": "\(reason)"])
                        }
                        TreeImageWrites.shared.start(image, built, logger: logger)
                    }
                    // The rest (the names' indexes) is background work that requests answered from
                    // the tree should not wait behind: as bulk lanes run (BackgroundPriority), until a
                    // request waits for the names and raises it (BackgroundThread). Linux
                    // applies it to the calling thread, here the indexes' own (a Thread of ours, and
                    // what it starts from now on); a tree built from the rows is handed out from a
                    // libdispatch worker of the shared pool, which keeps its priority.
                    if source == .image || source == .shippedImage {
                        slot.builder.lowerCallingThread()
                        // And it starts once the first requests pause: a one-off job's lineages
                        // need the tree alone, and end before the names would be built.
                        slot.builder.waitUntilRequestsPause()
                    }
                }
            }
            slot.fill(loaded?.0 ?? MemoryIndexes.empty, treeSource: loaded?.treeSource ?? .none)
            logger.info("indexes ready", metadata: ["release": "\(release)", "seconds": "\((ContinuousClock.now - started).inSeconds)",
                                                    "tree": "\(loaded?.treeSource.description ?? "none")"])
            // The build's scratch (the rows read, the builders' arrays) is freed by now;
            // handed back, it is not counted against the next release a pinned request opens.
            stol_heap_return_freed()
            slot.settle()
            slot.builder.endCallingThread()
        }
        thread.start()
    }

    /// Whether a request waited for the names' indexes and so raised their build (tests).
    var indexesBuildRaised: Bool { indexes.builder.wasRaised }

    /// Where the tree came from, once the indexes are built (tests, diagnostics).
    var treeSource: MemoryIndexes.TreeSource? { indexes.treeSource }

    /// The in-memory indexes if they are built already (never waits): the tree
    /// alone while the names' indexes are still built (``MemoryIndexes/namesLoaded``).
    public var memoryIndexes: MemoryIndexes? { indexes.current }

    /// The in-memory tree when it holds the source's whole tree, or why it cannot
    /// answer: absent from the database (schema 1), still loading, or not built (the
    /// diagnostics report says why).
    func wholeTree() throws(TaxonomyError) -> TaxonomyTree {
        guard fullTreeCount > 0 else { throw .fullTreeAbsent }
        guard let indexes = memoryIndexes else { throw .memoryIndexesLoading }
        guard let tree = indexes.wholeTree else { throw .fullTreeAbsent }
        return tree
    }

    /// The in-memory indexes, once built: suspends the calling task meanwhile,
    /// holding no thread (a request that needs them must not take one of the
    /// cooperative pool's few threads away from every other request).
    public func loadedMemoryIndexes() async -> MemoryIndexes {
        await indexes.loaded()
    }

    /// Hands out `tree` alone, as a build does before the names' indexes (tests:
    /// what answers in between, on a database opened with ``IndexLoading/onRequest``).
    func publishTreeOnly(_ tree: TaxonomyTree) {
        indexes.fillTree(.treeOnly(tree, holdsWholeTree: layout.everyNode))
    }

    /// Blocks until the indexes are built and the tree's image is written (tests).
    @available(*, noasync, message: "blocks the thread")
    func waitForBackgroundWork() {
        indexes.waitUntilSettled()
        TreeImageWrites.shared.waitUntilWritten()
    }

    /// Returns once the tree answers (``memoryIndexes`` holds at least the tree
    /// alone), suspended meanwhile: a request that needs nothing else goes on then,
    /// seconds before the names' indexes are built.
    public func treeLoaded() async {
        await indexes.treeLoaded()
    }

    /// The in-memory indexes, blocking the calling thread until built: for
    /// synchronous callers on threads of their own (the benchmark, tests).
    @available(*, noasync, message: "blocks the thread; use await loadedMemoryIndexes()")
    public func waitForMemoryIndexes() -> MemoryIndexes {
        indexes.waitUntilBuilt()
    }

    public var identity: Stol_V1_DatabaseIdentity {
        var identity = Stol_V1_DatabaseIdentity()
        identity.kind = kind
        identity.fingerprint = fingerprint
        identity.schemaVersion = UInt32(schemaVersion)
        identity.release = release
        if let provenance {
            identity.source = provenance.source
            identity.idNamespace = provenance.idNamespace
        }
        return identity
    }

    /// Runs `body` on the asking user's own connection (``ReaderLease/current``, set for
    /// every request), else on a free shared one (any when all are busy).
    func read<T>(_ body: (Database) throws -> T) throws(TaxonomyError) -> T {
        do {
            if let lease = ReaderLease.current { return try lease.queue(of: userReaders).inDatabase(body) }
            if let index = freeReaders.withLock({ $0.popLast() }) {
                defer { freeReaders.withLock { $0.append(index) } }
                return try readers[index].inDatabase(body)
            }
            return try readers[Int.random(in: 0..<readers.count)].inDatabase(body)
        } catch let error as TaxonomyError {
            throw error
        } catch {
            throw .query("\(error)")
        }
    }
}

/// Where the background build leaves the indexes, and who waits for them.
private final class IndexesSlot: Sendable {
    /// Two fields rather than an enum with both as payloads: a multi-payload enum
    /// keeps its case in spare bits of the indexes' pointers, where LeakSanitizer
    /// (the fuzz build) no longer recognises them and reports the indexes leaked.
    private struct State {
        var built: MemoryIndexes?
        /// The tree alone (``MemoryIndexes/treeOnly(_:holdsWholeTree:)``), until ``built``.
        var treeOnly: MemoryIndexes?
        var waiters: [CheckedContinuation<MemoryIndexes, Never>] = []
        var treeSource: MemoryIndexes.TreeSource?
        /// Waiting for the tree alone (or the whole indexes, whichever comes first).
        var treeWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// The build's thread, raised as soon as a request waits for the names' indexes.
    let builder = BackgroundThread()
    /// Whether a build was started (or the empty indexes filled in).
    private let claimed = Mutex(false)
    /// Signalled once built, for ``waitUntilBuilt()``.
    private let ready = DispatchSemaphore(value: 0)
    /// Signalled when the build's thread is done (``waitUntilSettled()``; the image is
    /// written on a thread of its own, ``TreeImageWrites``).
    private let settled = DispatchSemaphore(value: 0)

    func settle() { settled.signal() }

    /// Blocks until the build's thread has finished everything (tests; only once
    /// ``TaxonomyDatabase/startLoadingMemoryIndexes()`` has started it).
    func waitUntilSettled() {
        settled.wait()
        settled.signal()
    }

    /// True for the first caller only: the one that builds.
    func claimBuild() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }

    var built: MemoryIndexes? {
        state.withLock { $0.built }
    }

    /// The whole indexes when built, else the tree alone when it is there.
    var current: MemoryIndexes? {
        state.withLock { $0.built ?? $0.treeOnly }
    }

    /// Stores the tree alone, for the requests that need nothing else, until ``fill(_:)``.
    func fillTree(_ indexes: MemoryIndexes) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.built == nil else { return [] }
            state.treeOnly = indexes
            defer { state.treeWaiters = [] }
            return state.treeWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the tree alone or the whole indexes are there.
    func treeLoaded() async {
        if current != nil { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let there = state.withLock { state -> Bool in
                if state.built != nil || state.treeOnly != nil { return true }
                state.treeWaiters.append(continuation)
                return false
            }
            if there { continuation.resume() }
        }
    }

    var treeSource: MemoryIndexes.TreeSource? {
        state.withLock { $0.treeSource }
    }

    /// Stores the indexes and resumes every task waiting for them (once).
    func fill(_ indexes: MemoryIndexes, treeSource: MemoryIndexes.TreeSource = .none) {
        let (waiters, treeWaiters) = state.withLock { state in
            guard state.built == nil else { return ([CheckedContinuation<MemoryIndexes, Never>](), [CheckedContinuation<Void, Never>]()) }
            state.built = indexes
            state.treeOnly = nil
            state.treeSource = treeSource
            defer { state.waiters = []; state.treeWaiters = [] }
            return (state.waiters, state.treeWaiters)
        }
        for waiter in waiters { waiter.resume(returning: indexes) }
        for waiter in treeWaiters { waiter.resume() }
        ready.signal()
    }

    /// The whole indexes, once built; a request waiting for them raises their build
    /// (``BackgroundThread/raise()``): it is no longer work nobody waits for.
    func loaded() async -> MemoryIndexes {
        if let built { return built }
        return await withCheckedContinuation { continuation in
            let built = state.withLock { state -> MemoryIndexes? in
                if let built = state.built { return built }
                state.waiters.append(continuation)
                return nil
            }
            if let built { continuation.resume(returning: built) } else { builder.raise() }
        }
    }

    /// Drops the indexes (their database is going away), once a build that is
    /// still running has finished: it would fill the slot again.
    func release() {
        if claimed.withLock({ $0 }) { _ = waitUntilBuilt() }
        state.withLock { state in
            state.built = MemoryIndexes.empty
            state.treeOnly = nil
        }
    }

    func waitUntilBuilt() -> MemoryIndexes {
        if let built { return built }
        builder.raise()
        ready.wait()
        ready.signal()  // for the next waiter: the semaphore stays signalled once built
        return built ?? MemoryIndexes.empty
    }
}
