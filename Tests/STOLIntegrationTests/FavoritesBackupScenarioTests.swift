import Foundation
import GRDB
import Glibc
import STOLTestFixtures
import Synchronization
import XCTest

/// Issue 23's favourites that can be backed up, through the real client and the
/// real `stol-favoritesd` behind `systemd-socket-activate`: a user's JSON export
/// and import, and root's online backup and restore of every user while other
/// users keep writing. Other users are played with `setpriv` (root needed).
final class FavoritesBackupScenarioTests: XCTestCase {
    var stack: StackHarness!

    override func setUpWithError() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run clients as other uids with setpriv")
        stack = try StackHarness()
        try stack.start(.taxonomy)
        try stack.start(.favorites)
    }

    override func tearDown() {
        stack = nil
    }

    private func assertOK(_ result: StackHarness.Result, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 0, "stdout: \(result.stdout)\nstderr: \(result.stderr)", file: file, line: line)
    }

    /// id → created_at of `uid`'s favourites, as `fav list --json` prints them.
    private func favourites(uid: UInt32) throws -> [Int64: String] {
        let entries = try stack.fav(["list", "--json"], uid: uid).json["entries"] as? [[String: Any]] ?? []
        return Dictionary(uniqueKeysWithValues: entries.map {
            (($0["taxon_id"] as? NSNumber)?.int64Value ?? 0, $0["created_at"] as? String ?? "")
        })
    }

    private func rows(of path: String) throws -> [Int64: String] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT taxon_id, created_at FROM favorites")
                .map { ($0[0] as Int64, $0[1] as String) })
        }
    }

    func testExportAsJSON_importedByAnotherUser_keepsIdsAndTimes_addsNothingTwice_andNamesUnknownIds() throws {
        let alice: UInt32 = 60101, bob: UInt32 = 60102
        for id in ["9689", "9606", "555555555"] { assertOK(try stack.fav(["add", id], uid: alice)) }
        assertOK(try stack.fav(["add", "9606"], uid: bob))
        let bobsOwnTime = try favourites(uid: bob)[9606]
        let export = try stack.fav(["export", "--format", "json"], uid: alice)
        assertOK(export)
        XCTAssertEqual(export.json["format"] as? String, "stol-favorites")
        let names = (export.json["favorites"] as? [[String: Any]] ?? []).compactMap { $0["scientific_name"] as? String }
        XCTAssertEqual(Set(names), ["Panthera leo", "Homo sapiens"], "names of the known ids, for a reader")
        let file = try StackHarness.makeDirectory(prefix: "favexport") + "/alice.json"
        try export.stdout.write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)

        let imported = try stack.fav(["import", file, "--json"], uid: bob)
        assertOK(imported)
        XCTAssertEqual((imported.json["added"] as? NSNumber)?.intValue, 2)
        XCTAssertEqual((imported.json["already_present"] as? NSNumber)?.intValue, 1)
        XCTAssertEqual((imported.json["unknown_ids"] as? [NSNumber])?.map(\.int64Value), [555_555_555])
        let alices = try favourites(uid: alice), bobs = try favourites(uid: bob)
        XCTAssertEqual(bobs[9689], alices[9689], "the original time comes along")
        XCTAssertEqual(bobs[555_555_555], alices[555_555_555])
        XCTAssertEqual(bobs[9606], bobsOwnTime, "a favourite Bob had keeps his time")

        let again = try stack.fav(["import", file, "--json"], uid: bob)
        XCTAssertEqual((again.json["added"] as? NSNumber)?.intValue, 0)
        XCTAssertEqual(try favourites(uid: bob), bobs)
    }

    func testImportOfADamagedOrForeignFile_exits65_andChangesNothing() throws {
        assertOK(try stack.fav(["add", "9689"]))
        let before = try favourites(uid: 0)
        let directory = try StackHarness.makeDirectory(prefix: "favbad")
        let good = #"{"format":"stol-favorites","version":1,"count":1,"favorites":[{"taxon_id":9606,"created_at":"2020-01-01T00:00:00.000Z"}]}"#
        let bad: [String: String] = [
            "cut": String(good.dropLast(20)),
            "foreign": #"{"format":"ete4","favorites":[]}"#,
            "newer": good.replacingOccurrences(of: #""version":1"#, with: #""version":2"#),
            "count": good.replacingOccurrences(of: #""count":1"#, with: #""count":2"#),
            "fraction": good.replacingOccurrences(of: "9606", with: "9606.5"),
            "text-id": good.replacingOccurrences(of: "9606", with: "\"9606\""),
            "zero": good.replacingOccurrences(of: "9606", with: "0"),
            "huge": good.replacingOccurrences(of: "9606", with: "9007199254740993"),
            "time": good.replacingOccurrences(of: "2020-01-01T00:00:00.000Z", with: "2020-01-01"),
            "list": "[1, 2, 3]",
            "binary": "\u{0}\u{1}SQLite format 3",
        ]
        for (name, text) in bad {
            let path = directory + "/" + name + ".json"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let result = try stack.fav(["import", path])
            XCTAssertEqual(result.status, 65, "\(name): \(result.stdout) \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("nothing was imported"), "\(name): \(result.stderr)")
        }
        // A file that cannot be read is a failure (1), not a damaged file (65), as the man page says.
        let absent = try stack.fav(["import", directory + "/absent.json"])
        XCTAssertEqual(absent.status, 1, absent.stderr)
        XCTAssertTrue(absent.stderr.contains("cannot read") && absent.stderr.contains("nothing was imported"), absent.stderr)
        XCTAssertEqual(try stack.fav(["import", directory]).status, 1, "a directory cannot be read as a file")
        XCTAssertEqual(try favourites(uid: 0), before)
        // The same file, whole, is accepted: the refusals were about the damage.
        try good.write(toFile: directory + "/good.json", atomically: true, encoding: .utf8)
        assertOK(try stack.fav(["import", directory + "/good.json"]))
        XCTAssertEqual(try favourites(uid: 0)[9606], "2020-01-01T00:00:00.000Z")
    }

    func testBackupAndRestore_asAnotherUser_areRefusedWithExit4() throws {
        let user: UInt32 = 60111
        let directory = try StackHarness.makeDirectory(prefix: "favbk") + "/backup"
        let backup = try stack.fav(["backup", directory], uid: user)
        XCTAssertEqual(backup.status, 4, backup.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory))
        XCTAssertEqual(try stack.fav(["restore", directory], uid: user).status, 4)
    }

    func testBackupUnderWriters_holdsEveryAcknowledgedFavourite_andRestoreBringsThemBackWhileWritersGoOn() throws {
        let users: [UInt32] = [60121, 60122, 60123]
        /// Shared with the writer threads; unchecked: StackHarness is only read here
        /// (each call runs a client process of its own).
        final class Writers: @unchecked Sendable {
            let stack: StackHarness
            init(_ stack: StackHarness) { self.stack = stack }
            /// Per user, each acknowledged id with the epoch its add started in.
            let acknowledged = Mutex([UInt32: [Int64: Int]]())
            /// Raised once the victim's clear has returned: an add that started after it
            /// committed after the clear. (An add acknowledged after the clear may have
            /// committed before it, and been cleared: its client exited late.)
            let epoch = Atomic(0)
            let stop = Atomic(false)
            let progress = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
        }
        let writers = Writers(stack)
        // Each user adds ids one client process at a time; an id counts once the
        // client exited 0 (the daemon acknowledged a commit).
        for (index, uid) in users.enumerated() {
            writers.done.enter()
            DispatchQueue.global().async {
                defer { writers.done.leave() }
                var id = Int64(1_000_000 * (index + 1))
                while !writers.stop.load(ordering: .relaxed) {
                    id += 1
                    let started = writers.epoch.load(ordering: .sequentiallyConsistent)
                    guard let result = try? writers.stack.fav(["add", "\(id)"], uid: uid), result.status == 0 else { continue }
                    writers.acknowledged.withLock { $0[uid, default: [:]][id] = started }
                    writers.progress.signal()
                }
            }
        }
        func acknowledged() -> [UInt32: Set<Int64>] {
            writers.acknowledged.withLock { $0.mapValues { Set($0.keys) } }
        }
        // At least three acknowledged adds per user before the backup begins.
        while users.contains(where: { (acknowledged()[$0]?.count ?? 0) < 3 }) {
            XCTAssertEqual(writers.progress.wait(timeout: .now() + 30), .success, "the writers stalled")
        }
        let before = acknowledged()
        let directory = try StackHarness.makeDirectory(prefix: "favbk") + "/backup"
        let backup = try stack.fav(["backup", directory, "--json"])
        assertOK(backup)
        let manifest = backup.json
        XCTAssertEqual(manifest["format"] as? String, "stol-favorites-backup")
        var copies: [UInt32: [Int64: String]] = [:]
        for uid in users {
            let copy = try rows(of: directory + "/\(uid).sqlite")
            let missing = before[uid]!.subtracting(copy.keys)
            XCTAssertTrue(missing.isEmpty, "uid \(uid): acknowledged before the backup, missing from it: \(missing.sorted())")
            copies[uid] = copy
        }
        var info = stat()
        XCTAssertEqual(stat(directory + "/\(users[0]).sqlite", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertFalse(FileManager.default.fileExists(atPath: stack.stateDirectory + "/favorites/.backup"),
                       "the daemon's copies and their directory are gone once root's client copied them out")

        // One user loses everything while all three keep writing; the restore brings it back.
        let victim = users[0]
        assertOK(try stack.fav(["clear", "--yes"], uid: victim))
        writers.epoch.store(1, ordering: .sequentiallyConsistent)
        let restore = try stack.fav(["restore", directory])
        assertOK(restore)
        XCTAssertTrue(restore.stdout.contains("uid \(victim): "), restore.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: stack.stateDirectory + "/favorites/.restore"),
                       "a restore leaves no staging directory behind")
        writers.stop.store(true, ordering: .relaxed)
        writers.done.wait()
        let after = acknowledged()
        let live = try favourites(uid: victim)
        for (id, time) in copies[victim]! {
            XCTAssertEqual(live[id], time, "favourite \(id) is back with its original time")
        }
        let sinceTheClear = Set(writers.acknowledged.withLock { $0[victim, default: [:]] }.filter { $0.value >= 1 }.keys)
        XCTAssertTrue(sinceTheClear.isSubset(of: Set(live.keys)),
                      "the restore removed what was saved after the clear: \(sinceTheClear.subtracting(live.keys).sorted())")
        for uid in users.dropFirst() {
            XCTAssertTrue(after[uid]!.isSubset(of: Set(try favourites(uid: uid).keys)), "uid \(uid) lost a favourite")
        }
    }

    func testRestoreOfADamagedBackup_changesNobodysFavourites() throws {
        let alice: UInt32 = 60131, bob: UInt32 = 60132
        assertOK(try stack.fav(["add", "9689"], uid: alice))
        assertOK(try stack.fav(["add", "9606"], uid: bob))
        let directory = try StackHarness.makeDirectory(prefix: "favbk") + "/backup"
        assertOK(try stack.fav(["backup", directory]))
        assertOK(try stack.fav(["clear", "--yes"], uid: alice))
        assertOK(try stack.fav(["clear", "--yes"], uid: bob))
        // Bob's copy is damaged after the backup: the restore refuses before touching Alice.
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: directory + "/\(bob).sqlite"))
        try handle.seek(toOffset: 0)
        handle.write(Data(repeating: 0x41, count: 100))
        try handle.close()
        let restore = try stack.fav(["restore", directory])
        XCTAssertEqual(restore.status, 6, restore.stderr)
        XCTAssertTrue(restore.stderr.contains("not a favourites backup"), restore.stderr)
        XCTAssertEqual(try favourites(uid: alice), [:])
        XCTAssertEqual(try favourites(uid: bob), [:])
        XCTAssertFalse(FileManager.default.fileExists(atPath: stack.stateDirectory + "/favorites/.restore"),
                       "a refused restore leaves no staging directory behind either")
        // Only Alice: her file is intact.
        assertOK(try stack.fav(["restore", directory, "--uid", "\(alice)"]))
        XCTAssertEqual(Set(try favourites(uid: alice).keys), [9689])
        XCTAssertEqual(try favourites(uid: bob), [:])
    }
}
