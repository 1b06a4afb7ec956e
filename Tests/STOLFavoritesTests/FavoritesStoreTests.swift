import Foundation
import GRDB
import STOLFavorites
import STOLTestFixtures
import Synchronization
import XCTest

/// The store against real files: docs/design/favourites.md §12 (T1–T12) plus the Linux service's
/// own guarantees (file mode, damaged files, forget-me, id validation).
final class FavoritesStoreTests: XCTestCase {
    private var directory = ""
    private var path: String { directory + "/favorites/1000.sqlite" }

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
    }

    private func makeStore() -> FavoritesStore {
        FavoritesStore(path: path, logger: quietLogger)
    }

    // MARK: - docs/design/favourites.md §12

    func testAdd_whenAbsent_makesItAFavouriteAndCountsOne() async throws {  // T1
        let store = makeStore()
        let changed = try await store.add(42)
        let isFavourite = try await store.isFavorite(42)
        let count = try await store.count()
        XCTAssertTrue(changed)
        XCTAssertTrue(isFavourite)
        XCTAssertEqual(count, 1)
    }

    func testAdd_whenAlreadyPresent_isANoOpAndCountStaysOne() async throws {  // T2
        let store = makeStore()
        _ = try await store.add(42)
        let changed = try await store.add(42)
        let count = try await store.count()
        XCTAssertFalse(changed)
        XCTAssertEqual(count, 1)
    }

    func testRemove_whenPresent_removesItAndCountsZero() async throws {  // T3
        let store = makeStore()
        _ = try await store.add(42)
        let changed = try await store.remove(42)
        let isFavourite = try await store.isFavorite(42)
        let count = try await store.count()
        XCTAssertTrue(changed)
        XCTAssertFalse(isFavourite)
        XCTAssertEqual(count, 0)
    }

    func testRemove_whenAbsent_isANoOpWithoutError() async throws {  // T4
        let store = makeStore()
        _ = try await store.add(1)
        let changed = try await store.remove(42)
        let count = try await store.count()
        XCTAssertFalse(changed)
        XCTAssertEqual(count, 1)
    }

    func testToggle_whenAbsent_addsAndReturnsTrue() async throws {  // T5
        let store = makeStore()
        let isFavourite = try await store.toggle(42)
        let count = try await store.count()
        XCTAssertTrue(isFavourite)
        XCTAssertEqual(count, 1)
    }

    func testToggle_whenPresent_removesAndReturnsFalse() async throws {  // T6
        let store = makeStore()
        _ = try await store.add(42)
        _ = try await store.add(7)
        let isFavourite = try await store.toggle(42)
        let stillFavourite = try await store.isFavorite(42)
        let count = try await store.count()
        XCTAssertFalse(isFavourite)
        XCTAssertFalse(stillFavourite)
        XCTAssertEqual(count, 1)
    }

    func testList_returnsMostRecentlyAddedFirst() async throws {  // T7
        // The store's clock is the test's: each add is one millisecond after the previous.
        let clock = Mutex(Date(timeIntervalSince1970: 1_767_225_600))  // 2026-01-01T00:00:00Z
        let store = FavoritesStore(path: path, logger: quietLogger) {
            clock.withLock { now in
                now += 0.001
                return now
            }
        }
        // Ascending ids, so the id tie-break alone would give the opposite order.
        for id: Int64 in [100, 200, 300] { _ = try await store.add(id) }
        let entries = try await store.list()
        XCTAssertEqual(entries.map(\.taxonID), [300, 200, 100])
        // The time is written as SQLite's own default writes it.
        XCTAssertEqual(entries.map(\.createdAt),
                       ["2026-01-01T00:00:00.003Z", "2026-01-01T00:00:00.002Z", "2026-01-01T00:00:00.001Z"])
    }

    func testList_withEqualTimestamps_ordersByAscendingID() async throws {
        let store = FavoritesStore(path: path, logger: quietLogger) { Date(timeIntervalSince1970: 1_767_225_600) }
        for id: Int64 in [300, 100, 200] { _ = try await store.toggle(id) }
        let entries = try await store.list()
        XCTAssertEqual(entries.map(\.taxonID), [100, 200, 300])
        XCTAssertEqual(Set(entries.map(\.createdAt)), ["2026-01-01T00:00:00.000Z"])
    }

    func testAdd_withoutAClock_stampsSQLitesTimeInTheSameFormat() async throws {
        let store = makeStore()
        _ = try await store.add(5)
        let entries = try await store.list()
        let stamp = try XCTUnwrap(entries.first?.createdAt)
        XCTAssertNotNil(stamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/), stamp)
    }

    func testList_whenEmpty_returnsEmptyArray() async throws {  // T8
        let store = makeStore()
        let beforeAnyFile = try await store.list()
        _ = try await store.toggle(1)
        _ = try await store.toggle(1)
        let afterRemoval = try await store.list()
        XCTAssertEqual(beforeAnyFile, [])
        XCTAssertEqual(afterRemoval, [])
    }

    func testClear_removesEveryFavouriteAndKeepsTheFile() async throws {  // T9
        let store = makeStore()
        for id: Int64 in 1...5 { _ = try await store.add(id) }
        let removed = try await store.clear()
        let count = try await store.count()
        let list = try await store.list()
        let isFavourite = try await store.isFavorite(3)
        XCTAssertEqual(removed, 5)
        XCTAssertEqual(count, 0)
        XCTAssertEqual(list, [])
        XCTAssertFalse(isFavourite)
        XCTAssertTrue(fileExists(path))
        await store.close()
        let rows = try inspect(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM favorites") }
        XCTAssertEqual(rows, 0)
    }

    func testStorageBytes_afterInsert_isPositive() async throws {  // T10
        let store = makeStore()
        let withoutFile = try await store.storageBytes()
        _ = try await store.add(42)
        let bytes = try await store.storageBytes()
        XCTAssertEqual(withoutFile, 0)
        XCTAssertGreaterThan(bytes, 0)
    }

    func testSchema_hasExactlyTheTwoPrivacyReviewedColumns() async throws {  // T11
        let store = makeStore()
        _ = try await store.add(42)
        await store.close()
        let columns = try inspect(path) { db in
            try Row.fetchAll(db, sql: "PRAGMA table_info(favorites)").map { row -> [String] in
                [row["name"], row["type"], "\(row["notnull"] as Int)", "\(row["pk"] as Int)"]
            }
        }
        XCTAssertEqual(columns, [["taxon_id", "INTEGER", "0", "1"], ["created_at", "TEXT", "1", "0"]])
        let (objects, userVersion, journalMode) = try inspect(path) { db in
            (try String.fetchAll(db, sql: "SELECT type || ' ' || name FROM sqlite_master ORDER BY name"),
             try Int.fetchOne(db, sql: "PRAGMA user_version"),
             try String.fetchOne(db, sql: "PRAGMA journal_mode"))
        }
        XCTAssertEqual(objects, ["table favorites", "index idx_favorites_created"])
        XCTAssertEqual(userVersion, 1)
        XCTAssertEqual(journalMode, "wal")
    }

    func testReopen_withTheSamePath_keepsEveryFavourite() async throws {  // T12
        let first = makeStore()
        for id: Int64 in [3, 1, 2] { _ = try await first.add(id) }
        await first.close()
        let second = makeStore()
        let count = try await second.count()
        let isFavourite = try await second.isFavorite(2)
        let ids = try await second.list().map(\.taxonID)
        XCTAssertEqual(count, 3)
        XCTAssertTrue(isFavourite)
        XCTAssertEqual(Set(ids), [1, 2, 3])
    }

    // MARK: - Ordering and timestamps

    func testList_whenTimestampsTie_ordersByAscendingTaxonID() async throws {
        let store = makeStore()
        _ = try await store.add(1)
        await store.close()
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "DELETE FROM favorites")
            for id in [30, 10, 20] {
                try db.execute(sql: "INSERT INTO favorites VALUES (?, '2026-02-26T10:15:30.123Z')", arguments: [id])
            }
            try db.execute(sql: "INSERT INTO favorites VALUES (5, '2026-02-26T10:15:30.122Z')")
        }
        try queue.close()
        let ids = try await store.list().map(\.taxonID)
        XCTAssertEqual(ids, [10, 20, 30, 5])
    }

    func testCreatedAt_isUTCWithMilliseconds() async throws {
        let store = makeStore()
        _ = try await store.add(42)
        let createdAt = try await store.list().first?.createdAt
        let stamp = try XCTUnwrap(createdAt)
        XCTAssertNotNil(stamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/), stamp)
    }

    // MARK: - Files

    func testFirstWrite_createsFile0600InDirectory0700() async throws {
        let store = makeStore()
        _ = try await store.add(42)
        XCTAssertEqual(permissions(of: directory + "/favorites"), 0o700)
        XCTAssertEqual(permissions(of: path), 0o600)
        XCTAssertEqual(permissions(of: path + "-wal"), 0o600)
        XCTAssertEqual(permissions(of: path + "-shm"), 0o600)
    }

    func testReads_whenUserHasNoFile_answerEmptyAndCreateNothing() async throws {
        let store = makeStore()
        let count = try await store.count()
        let isFavourite = try await store.isFavorite(42)
        let removed = try await store.remove(42)
        let cleared = try await store.clear()
        XCTAssertEqual(count, 0)
        XCTAssertFalse(isFavourite)
        XCTAssertFalse(removed)
        XCTAssertEqual(cleared, 0)
        XCTAssertFalse(fileExists(directory + "/favorites"))
    }

    func testForgetMe_deletesTheFileWithItsWALAndSHM() async throws {
        let store = makeStore()
        _ = try await store.add(42)
        XCTAssertFalse(databaseFiles(path).isEmpty)
        try await store.forgetMe()
        XCTAssertEqual(databaseFiles(path), [])
        let count = try await store.count()
        XCTAssertEqual(count, 0)
        XCTAssertEqual(databaseFiles(path), [], "a read after forget-me must not re-create the file")
        _ = try await store.add(7)
        let ids = try await store.list().map(\.taxonID)
        XCTAssertEqual(ids, [7], "nothing from before forget-me comes back")
    }

    // MARK: - Damaged files

    func testOpen_whenFileIsGarbage_recreatesItEmptyAndNoticesOnce() async throws {
        let store = makeStore()
        _ = try await store.add(42)
        await store.close()
        try scribble(over: path)

        let count = try await store.count()
        let notice = await store.takeNotice()
        let secondNotice = await store.takeNotice()
        XCTAssertEqual(count, 0)
        XCTAssertEqual(notice, FavoritesStore.damagedFileNotice)
        XCTAssertNil(secondNotice)
        let changed = try await store.add(7)
        XCTAssertTrue(changed)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/favorites").sorted(),
                       ["1000.sqlite", "1000.sqlite-shm", "1000.sqlite-wal"], "no damaged copy is left aside")
        XCTAssertEqual(permissions(of: path), 0o600)
    }

    func testOpen_whenPagesAreCorrupt_recreatesItEmpty() async throws {
        let store = makeStore()
        for id: Int64 in 1...500 { _ = try await store.add(id) }
        await store.close()
        try scribble(over: path, from: 4096, minimumBytes: 0)  // keep the valid header page

        let count = try await store.count()
        let notice = await store.takeNotice()
        XCTAssertEqual(count, 0)
        XCTAssertEqual(notice, FavoritesStore.damagedFileNotice)
    }

    func testOpen_whenSchemaIsNewer_failsAndKeepsTheFile() async throws {
        let store = makeStore()
        _ = try await store.add(42)
        await store.close()
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in try db.execute(sql: "PRAGMA user_version = 2") }
        try queue.close()

        do throws(FavoritesError) {
            _ = try await store.count()
            XCTFail("a file from a newer daemon must not be opened")
        } catch {
            XCTAssertEqual(error, .unsupportedSchemaVersion(2))
        }
        let rows = try inspect(path) { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM favorites") }
        XCTAssertEqual(rows, 1)
    }

    // MARK: - Cap

    func testAdd_atTheCapOf50000_isRefusedButRemovingAndTogglingOffStillWork() async throws {
        let store = makeStore()
        _ = try await store.add(1)
        await store.close()
        // Fill the file directly (one transaction), then let the store warm its cache from it.
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: """
                WITH RECURSIVE n(x) AS (SELECT 2 UNION ALL SELECT x + 1 FROM n WHERE x < ?)
                INSERT INTO favorites (taxon_id) SELECT x FROM n
                """, arguments: [FavoritesStore.maximumFavorites])
        }
        try queue.close()
        let full = try await store.count()
        XCTAssertEqual(full, FavoritesStore.maximumFavorites)

        for operation in ["add", "toggle"] {
            do {
                _ = operation == "add" ? try await store.add(1_000_000) : try await store.toggle(1_000_000)
                XCTFail("\(operation) of a new id at the cap was accepted")
            } catch {
                XCTAssertEqual(error, .limitReached(FavoritesStore.maximumFavorites))
                XCTAssertEqual(error.protocolError.code, .invalidRequest)
            }
        }
        let present = try await store.add(7)  // already there: a no-op, not an error
        XCTAssertFalse(present)
        let toggledOff = try await store.toggle(7)
        XCTAssertFalse(toggledOff)
        let roomAgain = try await store.add(1_000_000)
        XCTAssertTrue(roomAgain)
        let count = try await store.count()
        let isFavourite = try await store.isFavorite(1_000_000)
        XCTAssertEqual(count, FavoritesStore.maximumFavorites)
        XCTAssertTrue(isFavourite)
    }

    // MARK: - Validation

    func testInvalidTaxonIDs_areRejectedAndChangeNothing() async throws {
        let store = makeStore()
        _ = try await store.add(42)
        for id: Int64 in [0, -1, .min, FavoritesError.maximumTaxonID + 1, .max] {
            await assertRejected(id) { try await store.add(id) }
            await assertRejected(id) { try await store.toggle(id) }
            await assertRejected(id) { try await store.remove(id) }
            await assertRejected(id) { try await store.isFavorite(id) }
        }
        let ids = try await store.list().map(\.taxonID)
        XCTAssertEqual(ids, [42])
        let largest = try await store.add(FavoritesError.maximumTaxonID)
        XCTAssertTrue(largest, "2^53 itself is a valid id")
    }

    private func assertRejected(_ id: Int64, _ operation: () async throws -> Bool,
                                file: StaticString = #filePath, line: UInt = #line) async {
        do {
            _ = try await operation()
            XCTFail("id \(id) was accepted", file: file, line: line)
        } catch {
            let error = error as? FavoritesError
            XCTAssertEqual(error, .invalidTaxonID(id), file: file, line: line)
            XCTAssertEqual(error?.protocolError.code, .invalidRequest, file: file, line: line)
        }
    }
}
