import Foundation
import Glibc
import GRDB
import STOLFavorites
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import Synchronization
import XCTest

/// Merging (a user's `fav import`), the online backup of every user's file and its
/// restore, on real SQLite files with concurrent writers; the service's root-only rule.
final class FavoritesBackupTests: XCTestCase {
    private var directory = ""
    private var registry: FavoritesRegistry!
    private var backup: FavoritesBackup!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self) + "/favorites"
        registry = FavoritesRegistry(directory: directory, logger: quietLogger)
        backup = FavoritesBackup(registry: registry)
    }

    private func store(_ uid: UInt32) -> FavoritesStore {
        FavoritesStore(path: "\(directory)/\(uid).sqlite", logger: quietLogger)
    }

    private func entries(_ uid: UInt32) async throws -> [Int64: String] {
        try await registry.withStore(for: uid) { store in
            Dictionary(uniqueKeysWithValues: try await store.list().map { ($0.taxonID, $0.createdAt) })
        }
    }

    /// The rows of a backed-up copy, read with a connection of the test's own.
    private func rows(ofCopy path: String) throws -> [Int64: String] {
        try inspect(path) { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT taxon_id, created_at FROM favorites")
                .map { ($0[0] as Int64, $0[1] as String) })
        }
    }

    // MARK: - Merge

    func testMerge_addsWhatIsMissingWithItsOwnTime_keepsPresentTimes_andRemovesNothing() async throws {
        let store = store(1)
        _ = try await store.add(10)
        let tenAddedAt = try await store.list()[0].createdAt
        let merged = try await store.merge([
            FavoriteEntry(taxonID: 10, createdAt: "2001-01-01T00:00:00.000Z"),
            FavoriteEntry(taxonID: 20, createdAt: "2002-02-02T02:02:02.222Z"),
            FavoriteEntry(taxonID: 20, createdAt: "2000-01-01T00:00:00.000Z"),  // the earliest of a repeated id wins
            FavoriteEntry(taxonID: 30, createdAt: "2003-03-03T03:03:03.333Z"),
        ])
        XCTAssertEqual(merged.added, 2)
        XCTAssertEqual(merged.alreadyPresent, 1)
        let listed = Dictionary(uniqueKeysWithValues: try await store.list().map { ($0.taxonID, $0.createdAt) })
        XCTAssertEqual(listed, [10: tenAddedAt, 20: "2000-01-01T00:00:00.000Z", 30: "2003-03-03T03:03:03.333Z"])
        let thirty = try await store.isFavorite(30)
        XCTAssertEqual(thirty, true, "the in-memory set follows the merge")
        let again = try await store.merge([FavoriteEntry(taxonID: 30, createdAt: "2010-01-01T00:00:00.000Z")])
        XCTAssertEqual(again.added, 0)
        XCTAssertEqual(again.alreadyPresent, 1)
    }

    func testMerge_withOneBadTimeOrId_changesNothing() async throws {
        let store = store(1)
        _ = try await store.add(10)
        // Impossible calendar dates too: no 30 February, no 31 April, 29 February only in leap years.
        for bad in ["2001-13-01T00:00:00.000Z", "2001-01-01 00:00:00", "2001-01-01T00:00:00.000+01:00", "", "yesterday",
                    "2021-02-30T00:00:00.000Z", "2023-04-31T12:00:00.000Z", "2023-02-29T00:00:00.000Z",
                    "1900-02-29T00:00:00.000Z", "2024-06-00T00:00:00.000Z"] {
            do {
                _ = try await store.merge([FavoriteEntry(taxonID: 20, createdAt: "2001-01-01T00:00:00.000Z"),
                                           FavoriteEntry(taxonID: 21, createdAt: bad)])
                XCTFail("\(bad) was merged")
            } catch {
                XCTAssertEqual(error.protocolError.code, .invalidRequest, bad)
            }
        }
        do {
            _ = try await store.merge([FavoriteEntry(taxonID: 20, createdAt: "2001-01-01T00:00:00.000Z"),
                                       FavoriteEntry(taxonID: 0, createdAt: "2001-01-01T00:00:00.000Z")])
            XCTFail("id 0 was merged")
        } catch {
            XCTAssertEqual(error, .invalidTaxonID(0))
        }
        let ids = try await store.list().map(\.taxonID)
        XCTAssertEqual(ids, [10], "nothing of a refused merge stays")
    }

    func testMerge_acceptsTheLastDayOfEveryMonth_andLeapDays() async throws {
        let store = store(1)
        let days = ["2024-01-31", "2024-02-29", "2023-02-28", "2000-02-29", "2024-04-30", "2024-12-31"]
        let merged = try await store.merge(days.enumerated().map { FavoriteEntry(taxonID: Int64($0 + 1), createdAt: $1 + "T23:59:59.999Z") })
        XCTAssertEqual(merged.added, days.count)
    }

    func testMerge_overTheLimit_isRefusedWhole() async throws {
        let store = store(1)
        _ = try await store.add(1)
        let tooMany = (2...Int64(FavoritesStore.maximumFavorites + 1)).map {
            FavoriteEntry(taxonID: $0, createdAt: "2001-01-01T00:00:00.000Z")
        }
        do {
            _ = try await store.merge(tooMany)
            XCTFail("a merge over the limit went through")
        } catch {
            XCTAssertEqual(error, .limitReached(FavoritesStore.maximumFavorites))
        }
        let count = try await store.count()
        XCTAssertEqual(count, 1)
        // Exactly up to the limit is fine.
        let merged = try await store.merge(Array(tooMany.dropLast()))
        XCTAssertEqual(merged.added, FavoritesStore.maximumFavorites - 1)
    }

    // MARK: - Backup and restore under writers

    func testBackup_underConcurrentWriters_holdsEveryFavouriteAcknowledgedBeforeItBegan_andRestoreBringsThemBack() async throws {
        let users: [UInt32] = [1001, 1002, 1003]
        /// Shared with the writer tasks (a class: Mutex and Atomic cannot be captured).
        final class Progress: Sendable {
            let acknowledged = Mutex([UInt32: Set<Int64>]())
            let stop = Atomic(false)
        }
        let progress = Progress()
        // Writers add ids as fast as they can; an id counts once its add returned.
        let writers = users.map { uid in
            Task { [registry] in
                var next: Int64 = Int64(uid) * 1_000_000
                while !progress.stop.load(ordering: .relaxed) {
                    next += 1
                    let id = next
                    _ = try await registry!.withStore(for: uid) { try await $0.add(id) }
                    progress.acknowledged.withLock { _ = $0[uid, default: []].insert(id) }
                    await Task.yield()
                }
            }
        }
        // Wait (by polling the writers' own progress) until each has written some.
        while progress.acknowledged.withLock({ state in users.contains { (state[$0]?.count ?? 0) < 20 } }) { await Task.yield() }
        let before = progress.acknowledged.withLock { $0 }
        let made = try await backup.backupAll()
        XCTAssertEqual(made.users.map(\.uid), users)
        var copies: [UInt32: [Int64: String]] = [:]
        for user in made.users {
            let copy = try rows(ofCopy: made.directory + "/" + user.fileName)
            XCTAssertEqual(copy.count, user.favorites)
            XCTAssertTrue(before[user.uid]!.isSubset(of: Set(copy.keys)),
                          "uid \(user.uid): \(before[user.uid]!.subtracting(copy.keys).count) acknowledged favourites missing")
            copies[user.uid] = copy
            // The copy is one self-contained file with the live schema's two columns.
            XCTAssertEqual(try inspect(made.directory + "/" + user.fileName) { db in
                try Row.fetchAll(db, sql: "PRAGMA table_info(favorites)").map { $0["name"] as String }
            }, ["taxon_id", "created_at"])
        }

        // A user loses everything while the writers go on; the restore puts the backup back.
        let victim = users[0]
        _ = try await registry.withStore(for: victim) { try await $0.clear() }
        let cleared = progress.acknowledged.withLock { $0[victim] ?? [] }
        let staging = try backup.prepareRestore()
        try FileManager.default.copyItem(atPath: made.directory + "/\(victim).sqlite", toPath: staging + "/copy.sqlite")
        let restored = try await backup.restore(uid: victim, fileName: "copy.sqlite")
        progress.stop.store(true, ordering: .relaxed)
        for writer in writers { try await writer.value }
        let after = progress.acknowledged.withLock { $0 }
        let live = try await entries(victim)
        for (id, time) in copies[victim]! {
            XCTAssertEqual(live[id], time, "favourite \(id) is back with its original time")
        }
        let writtenSinceTheClear = after[victim]!.subtracting(cleared)
        XCTAssertTrue(writtenSinceTheClear.isSubset(of: Set(live.keys)), "the restore removed what was saved since")
        XCTAssertGreaterThanOrEqual(restored?.added ?? 0, copies[victim]!.count - writtenSinceTheClear.count)
        XCTAssertFalse(fileExists(staging + "/copy.sqlite"), "the staged file is deleted")
        for uid in users.dropFirst() {
            let ids = try await entries(uid).keys
            XCTAssertTrue(after[uid]!.isSubset(of: Set(ids)))
        }
    }

    func testRestore_refusesFilesThatAreNotFavouritesBackups_andChangesNothing() async throws {
        _ = try await registry.withStore(for: 7) { try await $0.add(42) }
        let staging = try backup.prepareRestore()
        func make(_ name: String, _ sql: String) throws {
            let queue = try DatabaseQueue(path: staging + "/" + name)
            try queue.write { try $0.execute(sql: sql) }
            try queue.close()
        }
        let favouritesTable = """
            CREATE TABLE favorites (taxon_id INTEGER PRIMARY KEY, created_at TEXT NOT NULL);
            CREATE INDEX idx_favorites_created ON favorites(created_at DESC);
            """
        try make("third-column.sqlite", """
            CREATE TABLE favorites (taxon_id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, note TEXT);
            CREATE INDEX idx_favorites_created ON favorites(created_at DESC);
            """)
        try make("other-table.sqlite", favouritesTable + "CREATE TABLE users (name TEXT);")
        try make("text-id.sqlite", favouritesTable.replacingOccurrences(of: "INTEGER PRIMARY KEY", with: "")
                 + "INSERT INTO favorites VALUES ('lion', '2001-01-01T00:00:00.000Z');")
        try make("bad-time.sqlite", favouritesTable + "INSERT INTO favorites VALUES (9689, 'last week');")
        try make("zero-id.sqlite", favouritesTable + "INSERT INTO favorites VALUES (0, '2001-01-01T00:00:00.000Z');")
        try make("newer-schema.sqlite", favouritesTable + "PRAGMA user_version = 99;")
        try make("damaged.sqlite", favouritesTable + "INSERT INTO favorites VALUES (1, '2001-01-01T00:00:00.000Z');")
        try scribble(over: staging + "/damaged.sqlite", from: 100)
        try Data("not sqlite at all".utf8).write(to: URL(fileURLWithPath: staging + "/text.sqlite"))
        for name in ["third-column.sqlite", "other-table.sqlite", "text-id.sqlite", "bad-time.sqlite", "zero-id.sqlite",
                     "newer-schema.sqlite", "damaged.sqlite", "text.sqlite", "absent.sqlite", "../7.sqlite", ""] {
            do {
                _ = try await backup.restore(uid: 7, fileName: name)
                XCTFail("\(name) was restored")
            } catch {
                XCTAssertEqual(error.protocolError.code, .invalidRequest, name)
                XCTAssertTrue(error.protocolError.message.contains("nothing was restored"), error.protocolError.message)
            }
            let ids = try await entries(7).keys.sorted()
            XCTAssertEqual(ids, [42], name)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: staging), [], "every staged file is deleted")
        XCTAssertTrue(fileExists(directory + "/7.sqlite"), "the user's own file is untouched by a refused name")
    }

    func testCheckOnly_checksAndDeletesTheStagedFile_butMergesNothing() async throws {
        _ = try await registry.withStore(for: 8) { try await $0.add(1) }
        let made = try await backup.backupAll()
        _ = try await registry.withStore(for: 8) { try await $0.clear() }
        let staging = try backup.prepareRestore()
        try FileManager.default.copyItem(atPath: made.directory + "/8.sqlite", toPath: staging + "/c.sqlite")
        let checked = try await backup.restore(uid: 8, fileName: "c.sqlite", checkOnly: true)
        XCTAssertNil(checked)
        let left = try await entries(8)
        XCTAssertEqual(left, [:])
        XCTAssertFalse(fileExists(staging + "/c.sqlite"))
    }

    func testBackupAndRestore_areRefusedToEveryoneButRoot() async throws {
        let service = FavoritesService(registry: registry)
        for body: Stol_V1_FavoritesRequest.OneOf_Body in [.backup(.init()), .prepareRestore(.init()),
                                                         .restore(.with { $0.uid = 0; $0.fileName = "0.sqlite" })] {
            let response = await service.respond(to: .with { $0.id = 3; $0.body = body },
                                                 context: RequestContext(peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000),
                                                                         logger: quietLogger))
            XCTAssertEqual(response.error.code, .permissionDenied, "\(body)")
        }
        XCTAssertFalse(fileExists(directory + "/.backup"), "a refused backup made nothing")
        let asRoot = await service.respond(to: .with { $0.id = 4; $0.body = .backup(.init()) },
                                           context: RequestContext(peer: PeerCredentials(pid: 1, uid: 0, gid: 0), logger: quietLogger))
        XCTAssertEqual(asRoot.backup.users, [], "root may; nobody has a file yet")
    }

    func testBackupFiles_areNamedByUidOnly_otherFilesOfTheDirectoryAreIgnored() async throws {
        _ = try await registry.withStore(for: 5) { try await $0.add(1) }
        FileManager.default.createFile(atPath: directory + "/notes.sqlite", contents: Data("x".utf8))
        FileManager.default.createFile(atPath: directory + "/12a.sqlite", contents: Data("x".utf8))
        let made = try await backup.backupAll()
        XCTAssertEqual(made.users.map(\.uid), [5])
        XCTAssertEqual(made.users.map(\.fileName), ["5.sqlite"])
        XCTAssertEqual(made.users.map(\.favorites), [1])
        XCTAssertEqual(permissions(of: made.directory), 0o700)
    }
}
