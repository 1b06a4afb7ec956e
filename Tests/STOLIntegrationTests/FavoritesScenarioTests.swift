import Foundation
import GRDB
import Glibc
import STOLProtocol
import STOLTestFixtures
import XCTest

/// docs/design/favourites.md §12 (T1–T12) and issue 5's guarantees, through the real parts: the
/// real `stol-favoritesd` behind the real `systemd-socket-activate`, the real
/// `stol-client` (or a raw socket for what the client will not send), real SQLite
/// files. Other users are played with `setpriv` (those tests need root).
final class FavoritesScenarioTests: XCTestCase {
    var stack: StackHarness!

    override func setUpWithError() throws {
        stack = try StackHarness()
    }

    override func tearDown() {
        stack = nil
    }

    private func startFavorites() throws {
        try stack.start(.favorites)
    }

    private func assertOK(_ result: StackHarness.Result, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 0, "stdout: \(result.stdout)\nstderr: \(result.stderr)", file: file, line: line)
    }

    private func count(uid: UInt32? = nil) throws -> Int? {
        (try stack.fav(["count", "--json"], uid: uid).json["count"] as? NSNumber)?.intValue
    }

    private func isFavorite(_ id: String, uid: UInt32? = nil) throws -> Bool? {
        try stack.fav(["is", id, "--json"], uid: uid).json["is_favorite"] as? Bool
    }

    // MARK: - docs/design/favourites.md §12, T1–T12, through the socket

    func testAdd_makesTheTaxonAFavouriteAndCountsOne_T1() throws {
        try startFavorites()
        let added = try stack.fav(["add", "9689", "--json"])
        assertOK(added)
        XCTAssertEqual(added.json["changed"] as? Bool, true)
        XCTAssertEqual(try isFavorite("9689"), true)
        XCTAssertEqual(try count(), 1)
    }

    func testAddingTheSameTaxonTwice_isNoErrorAndCountStaysOne_T2() throws {
        try startFavorites()
        assertOK(try stack.fav(["add", "9689"]))
        let again = try stack.fav(["add", "9689", "--json"])
        assertOK(again)
        XCTAssertEqual(again.json["changed"] as? Bool, false)
        XCTAssertEqual(again.json["is_favorite"] as? Bool, true)
        XCTAssertEqual(try count(), 1)
    }

    func testRemove_makesTheTaxonNoFavouriteAndCountsZero_T3() throws {
        try startFavorites()
        assertOK(try stack.fav(["add", "9689"]))
        let removed = try stack.fav(["remove", "9689", "--json"])
        assertOK(removed)
        XCTAssertEqual(removed.json["changed"] as? Bool, true)
        XCTAssertEqual(try isFavorite("9689"), false)
        XCTAssertEqual(try count(), 0)
    }

    func testRemovingATaxonThatIsNoFavourite_isNoError_T4() throws {
        try startFavorites()
        assertOK(try stack.fav(["add", "38942"]))
        let removed = try stack.fav(["remove", "9689", "--json"])
        assertOK(removed)
        XCTAssertEqual(removed.json["changed"] as? Bool, false)
        XCTAssertEqual(try count(), 1)
    }

    func testToggle_whenAbsent_addsAndAnswersTrue_T5() throws {
        try startFavorites()
        let toggled = try stack.fav(["toggle", "9689", "--json"])
        assertOK(toggled)
        XCTAssertEqual(toggled.json["is_favorite"] as? Bool, true)
        XCTAssertEqual(try count(), 1)
    }

    func testToggle_whenPresent_removesAndAnswersFalse_T6() throws {
        try startFavorites()
        assertOK(try stack.fav(["add", "9689"]))
        assertOK(try stack.fav(["add", "38942"]))
        let toggled = try stack.fav(["toggle", "9689", "--json"])
        assertOK(toggled)
        XCTAssertEqual(toggled.json["is_favorite"] as? Bool, false)
        XCTAssertEqual(try count(), 1)
        XCTAssertEqual(try isFavorite("38942"), true)
    }

    func testList_returnsTheMostRecentlyAddedFirst_T7() throws {
        try startFavorites()
        // Ascending ids, so the id tie-break alone would give the opposite order.
        for id in ["3310", "9689", "38942"] { assertOK(try stack.fav(["add", id])) }
        let list = try stack.fav(["list", "--json"])
        assertOK(list)
        XCTAssertEqual(list.listedIDs, [38942, 9689, 3310])
    }

    func testList_whenEmpty_isEmptyAndNoError_T8() throws {
        try startFavorites()
        let json = try stack.fav(["list", "--json"])
        assertOK(json)
        XCTAssertEqual(json.listedIDs, [])
        XCTAssertEqual((json.json["count"] as? NSNumber)?.intValue, 0)
        let text = try stack.fav(["list"])
        assertOK(text)
        XCTAssertTrue(text.stdout.contains("No favourites yet"), text.stdout)
    }

    func testClearAll_leavesCountZeroAndAnEmptyList_T9() throws {
        try startFavorites()
        for id in ["9689", "38942", "9694"] { assertOK(try stack.fav(["add", id])) }
        let cleared = try stack.fav(["clear", "--yes", "--json"])
        assertOK(cleared)
        XCTAssertEqual((cleared.json["removed"] as? NSNumber)?.intValue, 3)
        XCTAssertEqual(try count(), 0)
        XCTAssertEqual(try stack.fav(["list", "--json"]).listedIDs, [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: stack.favoritesFile(uid: getuid())),
                      "clear keeps the (empty) file; forget-me deletes it")
    }

    func testStorageBytes_afterAnInsert_isPositive_T10() throws {
        try startFavorites()
        XCTAssertEqual((try stack.fav(["storage", "--json"]).json["bytes"] as? NSNumber)?.intValue, 0)
        assertOK(try stack.fav(["add", "9689"]))
        let bytes = (try stack.fav(["storage", "--json"]).json["bytes"] as? NSNumber)?.intValue ?? 0
        XCTAssertGreaterThan(bytes, 0)
    }

    func testFavouritesFile_hasExactlyTheColumnsTaxonIDAndCreatedAt_T11() throws {
        try startFavorites()
        assertOK(try stack.fav(["add", "9689"]))
        let (columns, objects) = try inspectFavorites(stack.favoritesFile(uid: getuid())) { db in
            (try Row.fetchAll(db, sql: "PRAGMA table_info(favorites)").map { $0["name"] as String },
             try String.fetchAll(db, sql: "SELECT name FROM sqlite_master ORDER BY name"))
        }
        XCTAssertEqual(columns, ["taxon_id", "created_at"])
        XCTAssertEqual(objects, ["favorites", "idx_favorites_created"], "no other table could hold anything else")
    }

    func testRestartOfTheDaemon_keepsEveryFavouriteInOrder_T12() throws {
        try startFavorites()
        for id in ["9689", "38942", "9694"] { assertOK(try stack.fav(["add", id])) }
        let before = try stack.fav(["list", "--json"]).listedIDs
        XCTAssertEqual(stack.stop(.favorites), 0, stack.log(.favorites))
        try startFavorites()
        XCTAssertEqual(try stack.fav(["list", "--json"]).listedIDs, before)
        XCTAssertEqual(before, [9694, 38942, 9689])
        XCTAssertEqual(try isFavorite("38942"), true)
    }

    // MARK: - Names, sorting, export (the client and the taxonomy server)

    func testAddByName_resolvesScientificAndCommonNamesInAnyLanguage() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        let lion = try stack.fav(["add", "lion"])
        assertOK(lion)
        XCTAssertTrue(lion.stdout.contains("9689") && lion.stdout.contains("Panthera leo"), lion.stdout)
        assertOK(try stack.fav(["add", "Quercus", "robur"]))  // several words form one name
        XCTAssertEqual(try stack.fav(["list", "--json"]).listedIDs, [38942, 9689])
        let spanish = try stack.fav(["toggle", "--lang", "es", "león", "--json"])  // diacritics as typed
        assertOK(spanish)
        XCTAssertEqual((spanish.json["taxon_id"] as? NSNumber)?.int64Value, 9689)
        XCTAssertEqual(spanish.json["is_favorite"] as? Bool, false)
    }

    func testAmbiguousName_inAScript_failsWithExitCode6ListingTheCandidatesAndChangesNothing() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        // "ginkgo" is the genus Ginkgo and the common name of Ginkgo biloba.
        let text = try stack.fav(["add", "ginkgo"])
        XCTAssertEqual(text.status, 6, text.stderr)
        XCTAssertTrue(text.stderr.contains("ambiguous"), text.stderr)
        XCTAssertTrue(text.stderr.contains("3310") && text.stderr.contains("3311"), text.stderr)
        let json = try stack.fav(["add", "ginkgo", "--json"])
        XCTAssertEqual(json.status, 6)
        let error = json.jsonError
        XCTAssertEqual(json.stdout, "", "a --json error goes to standard error")
        XCTAssertEqual(error?["code"] as? String, "INVALID_REQUEST")
        XCTAssertEqual(Set(((error?["details"] as? [String: String])?["candidates"] ?? "").split(separator: ",")),
                       ["3310", "3311"])
        XCTAssertEqual(try count(), 0)
        // --rank narrows it to one.
        let genus = try stack.fav(["add", "--rank", "genus", "ginkgo", "--json"])
        assertOK(genus)
        XCTAssertEqual((genus.json["taxon_id"] as? NSNumber)?.int64Value, 3310)
    }

    func testAmbiguousName_onATerminal_asksAndAddsTheChosenTaxon() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        let result = try stack.clientOnTerminal(["fav", "add", "ginkgo", "--json"], input: "2\n")
        assertOK(result)
        // The prompt (on stderr) numbers the candidates; choice 2 is whichever it listed second.
        let second = try XCTUnwrap(result.stderr.split(separator: "\n").first { $0.contains("2) ") }, result.stderr)
        let chosen = try XCTUnwrap(Int64(second.split(separator: ")")[1].split(separator: " ")[0]), String(second))
        XCTAssertTrue([3310, 3311].contains(chosen))
        XCTAssertEqual((result.json["taxon_id"] as? NSNumber)?.int64Value, chosen)
        XCTAssertEqual(try stack.fav(["list", "--json"]).listedIDs, [chosen])

        let cancelled = try stack.clientOnTerminal(["fav", "add", "ginkgo"], input: "\n")
        XCTAssertEqual(cancelled.status, 64, cancelled.stderr)
        XCTAssertEqual(try count(), 1)
    }

    func testUnknownName_isNotFoundWithExitCode3() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        let result = try stack.fav(["add", "zzyzxquux"])
        XCTAssertEqual(result.status, 3, result.stderr)
        XCTAssertTrue(result.stderr.contains("no taxon is named"), result.stderr)
        XCTAssertEqual(try count(), 0)
    }

    func testMisspelledName_isNeverAddedSilently_notFoundWithSuggestionsInAScript() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        let result = try stack.fav(["add", "Panthra", "leo", "--json"])
        XCTAssertEqual(result.status, 3, result.stdout)
        let error = result.jsonError
        XCTAssertEqual(error?["code"] as? String, "NOT_FOUND")
        if let suggestions = (error?["details"] as? [String: String])?["suggestions"] {  // when the server searches fuzzily
            XCTAssertTrue(suggestions.split(separator: ",").contains("9689"), suggestions)
        }
        XCTAssertEqual(try count(), 0)
    }

    func testList_showsNamesNextToIdsAndKeepsATaxonTheActiveDatabaseLacks() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        assertOK(try stack.fav(["add", "9689"]))
        let unknown = try stack.fav(["add", "987654321"])  // positive but in no database: accepted
        assertOK(unknown)
        XCTAssertTrue(unknown.stdout.contains("Not found in active database"), unknown.stdout)

        let text = try stack.fav(["list"])
        assertOK(text)
        let lines = text.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.contains("9689") && $0.contains("Panthera leo") && $0.contains("lion") }, text.stdout)
        XCTAssertTrue(lines.contains { $0.contains("987654321") && $0.contains("Not found in active database") }, text.stdout)
        let entries = try stack.fav(["list", "--json"]).json["entries"] as? [[String: Any]] ?? []
        XCTAssertEqual(entries.map { $0["found"] as? Bool }, [false, true])
        XCTAssertEqual(entries.last?["scientific_name"] as? String, "Panthera leo")
        XCTAssertEqual(try count(), 2, "listing never drops a favourite")

        // Without the taxonomy service the list still shows ids.
        stack.stop(.taxonomy)
        let bare = try stack.fav(["list"])
        assertOK(bare)
        XCTAssertTrue(bare.stdout.contains("987654321") && bare.stdout.contains("9689"), bare.stdout)
        XCTAssertTrue(bare.stderr.contains("not running"), bare.stderr)
    }

    /// A long list is named with `get_taxa` batches (1000 ids each) on the one
    /// client call path, not one `get_taxon` per favourite: 2,500 favourites (ids
    /// 1…2,500, some in the test database, most not) are all listed, the known
    /// ones with their names, in three requests, the server's counts say.
    func testLongList_isNamedInBatchesOfGetTaxa_keepingEveryFavourite() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        let connection = try FavoritesConnection(path: stack.socketPath(.favorites))
        let ids: [Int64] = Array(1...2_500).map { Int64($0) }
        for id in ids { XCTAssertEqual(try connection.call(FavoritesConnection.add(id)).protocolError, nil) }
        let listed = try stack.fav(["list", "--json"])
        assertOK(listed)
        let entries = listed.json["entries"] as? [[String: Any]] ?? []
        XCTAssertEqual(entries.count, 2_500, "listing never drops a favourite")
        let found = entries.filter { $0["found"] as? Bool == true }
        XCTAssertGreaterThan(found.count, 0)
        XCTAssertTrue(found.allSatisfy { !($0["scientific_name"] as? String ?? "").isEmpty })
        let diagnostics = try stack.client(["diagnostics"])
        assertOK(diagnostics)
        XCTAssertTrue(diagnostics.stdout.contains("get_taxa: 3"), diagnostics.stdout)
        XCTAssertFalse(diagnostics.stdout.contains("get_taxon:"), diagnostics.stdout)
    }

    func testList_sortsByRecentScientificOrCommonNameInTheChosenLanguage() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        // Panthera leo (lion, león), Quercus robur (pedunculate oak, roble común),
        // Ursus arctos (brown bear, oso pardo), Ginkgo (genus: no common name), an unknown id.
        for id in ["9689", "38942", "9644", "3310", "987654321"] { assertOK(try stack.fav(["add", id])) }
        func order(_ arguments: [String]) throws -> [Int64] {
            let result = try stack.fav(["list", "--json"] + arguments)
            XCTAssertEqual(result.status, 0, result.stderr)
            return result.listedIDs
        }
        XCTAssertEqual(try order([]), [987654321, 3310, 9644, 38942, 9689])
        XCTAssertEqual(try order(["--sort", "recent"]), [987654321, 3310, 9644, 38942, 9689])
        XCTAssertEqual(try order(["--sort", "scientific"]), [3310, 9689, 38942, 9644, 987654321])
        XCTAssertEqual(try order(["--sort", "common"]), [9644, 9689, 38942, 3310, 987654321])
        XCTAssertEqual(try order(["--sort", "common", "--lang", "es"]), [9689, 9644, 38942, 3310, 987654321])
        XCTAssertEqual(try stack.fav(["list", "--sort", "size"]).status, 64)
    }

    func testExport_isTheSpecsPlainTextWithNamesOnlyNoIdsNoTimestamps() throws {
        try stack.start(.taxonomy)
        try startFavorites()
        for id in ["9689", "38942", "987654321"] { assertOK(try stack.fav(["add", id])) }
        let export = try stack.fav(["export", "--sort", "scientific"])
        assertOK(export)
        XCTAssertEqual(export.stdout, """
            My Favourite Species — Species: Tree of Life

            1. Panthera leo (lion)
            2. Quercus robur (pedunculate oak)
            3. Not found in active database

            """)
        let spanish = try stack.fav(["export", "--lang", "es"])
        assertOK(spanish)
        XCTAssertTrue(spanish.stdout.contains("1. Not found in active database\n2. Quercus robur (roble común)\n3. Panthera leo (león)"),
                      spanish.stdout)
        for output in [export.stdout, spanish.stdout, try stack.fav(["export", "--json"]).stdout] {
            XCTAssertFalse(output.contains("9689") || output.contains("38942") || output.contains("987654321"), output)
            XCTAssertNil(output.firstMatch(of: /\d{4}-\d\d-\d\d/), "no timestamps: \(output)")
        }
    }

    func testClear_onATerminal_clearsOnlyAfterTheUserTypesYes() throws {
        try startFavorites()
        for id in ["9689", "38942"] { assertOK(try stack.fav(["add", id])) }
        let declined = try stack.clientOnTerminal(["fav", "clear"], input: "no\n")
        XCTAssertEqual(declined.status, 64, declined.stderr)
        XCTAssertTrue(declined.stderr.contains("remove all 2 saved species"), declined.stderr)
        XCTAssertEqual(try count(), 2)
        let confirmed = try stack.clientOnTerminal(["fav", "clear"], input: "yes\n")
        assertOK(confirmed)
        XCTAssertEqual(try count(), 0)
    }

    // MARK: - Bad input

    func testIdsOutOfRange_getInvalidRequestAndChangeNothing_unknownPositiveIdsAreAccepted() throws {
        try startFavorites()
        let connection = try FavoritesConnection(path: stack.socketPath(.favorites))
        XCTAssertTrue(try connection.call(FavoritesConnection.add(9689)).state.changed)
        for id: Int64 in [0, -1, .min, (1 << 53) + 1, .max] {
            for body in [FavoritesConnection.add(id), FavoritesConnection.toggle(id), FavoritesConnection.remove(id),
                         FavoritesConnection.isFavorite(id)] {
                let answer = try connection.call(body)
                XCTAssertEqual(answer.protocolError?.code, .invalidRequest, "id \(id): \(answer)")
            }
        }
        XCTAssertEqual(try connection.listedIDs(), [9689])
        // Positive ids no database knows are kept: they may exist in another database.
        XCTAssertTrue(try connection.call(FavoritesConnection.add(1 << 53)).state.isFavorite)
        XCTAssertTrue(try connection.call(FavoritesConnection.add(999_999_999)).state.isFavorite)
        XCTAssertEqual(try connection.count(), 3)
        // The client refuses "-5" as an option and forwards "0" to get the daemon's typed error.
        XCTAssertEqual(try stack.fav(["add", "-5"]).status, 64)
        let zero = try stack.fav(["add", "0", "--json"])
        XCTAssertEqual(zero.status, 6)
        XCTAssertEqual(zero.jsonError?["code"] as? String, "INVALID_REQUEST")
    }

    func testOversizedMalformedAndEmptyRequests_getTypedErrorsAndChangeNothing() throws {
        try startFavorites()
        let keeper = try FavoritesConnection(path: stack.socketPath(.favorites))
        XCTAssertTrue(try keeper.call(FavoritesConnection.add(9689)).state.changed)

        let announcing = try FavoritesConnection(path: stack.socketPath(.favorites))
        try announcing.socket.sendRaw([0x7f, 0xff, 0xff, 0xff])  // announces 2 GiB
        XCTAssertEqual(try announcing.receive().protocolError?.code, .frameTooLarge)

        let oversized = try FavoritesConnection(path: stack.socketPath(.favorites))
        let body = [UInt8](repeating: 0x08, count: ProtocolLimits.maximumRequestFrameBytes + 1)
        let length = UInt32(body.count).bigEndian
        try oversized.socket.sendRaw(withUnsafeBytes(of: length) { Array($0) } + body)
        XCTAssertEqual(try oversized.receive().protocolError?.code, .frameTooLarge)

        let garbage = try FavoritesConnection(path: stack.socketPath(.favorites))
        try garbage.socket.sendRaw([0, 0, 0, 4, 0x07, 0xff, 0xff, 0xff])  // wire type 7 does not exist
        XCTAssertEqual(try garbage.receive().protocolError?.code, .malformedFrame)
        XCTAssertThrowsError(try garbage.receive(), "the connection is closed after a framing error")

        let truncated = try FavoritesConnection(path: stack.socketPath(.favorites))
        try truncated.socket.sendRaw([0, 0, 0, 10, 0x08, 0x01])  // half a frame, then gone
        truncated.socket.close()

        XCTAssertEqual(try keeper.call(nil).protocolError?.code, .invalidRequest, "a request without a body")
        // Field 99, a body from a newer client: UNIMPLEMENTED, and the connection stays usable.
        try keeper.socket.sendRaw([0, 0, 0, 5, 0x08, 0x63, 0x9A, 0x06, 0x00])
        XCTAssertEqual(try keeper.receive().protocolError?.code, .unimplemented)
        XCTAssertEqual(try keeper.listedIDs(), [9689], "nothing changed, and the daemon still serves")
        XCTAssertEqual(try stack.fav(["count"]).stdout.hasPrefix("1 "), true)
    }

    // MARK: - Users

    func testTwoUsers_neverSeeOrChangeEachOthersFavourites() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run clients as other uids with setpriv")
        try stack.start(.taxonomy)
        try startFavorites()
        let alice: UInt32 = 60021, bob: UInt32 = 60022
        assertOK(try stack.fav(["add", "lion"], uid: alice))
        assertOK(try stack.fav(["add", "9694"], uid: alice))
        assertOK(try stack.fav(["add", "38942"], uid: bob))

        XCTAssertEqual(try stack.fav(["list", "--json"], uid: alice).listedIDs, [9694, 9689])
        XCTAssertEqual(try stack.fav(["list", "--json"], uid: bob).listedIDs, [38942])
        XCTAssertEqual(try isFavorite("9689", uid: bob), false)
        XCTAssertFalse(try stack.fav(["export"], uid: bob).stdout.contains("Panthera"))

        // Bob toggling Alice's favourite adds it for Bob only; then Bob clears and forgets.
        XCTAssertEqual(try stack.fav(["toggle", "9689", "--json"], uid: bob).json["is_favorite"] as? Bool, true)
        XCTAssertEqual(try count(uid: alice), 2)
        assertOK(try stack.fav(["clear", "--yes"], uid: bob))
        XCTAssertEqual(try stack.fav(["list", "--json"], uid: alice).listedIDs, [9694, 9689])
        assertOK(try stack.fav(["forget-me", "--yes"], uid: bob))
        XCTAssertFalse(FileManager.default.fileExists(atPath: stack.favoritesFile(uid: bob)))
        XCTAssertEqual(try count(uid: alice), 2)
        XCTAssertEqual(try count(), 0, "root (the test itself) has none either")

        var info = stat()
        XCTAssertEqual(stat(stack.favoritesFile(uid: alice), &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(stack.stateDirectory + "/favorites", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700, "no user can list the other users' files")
    }

    func testNoRequestCanNameAnotherUsersFile_unknownFieldsAndPassedDescriptorsAreIgnored() throws {
        try XCTSkipUnless(StackHarness.isRoot, "needs root to run clients as other uids with setpriv")
        try startFavorites()
        let victim: UInt32 = 60031
        assertOK(try stack.fav(["add", "38942"], uid: victim))
        let victimFile = stack.favoritesFile(uid: victim)

        // An add for taxon 9689 that also carries the victim's uid and file path as
        // fields the protocol does not have (in the envelope and in the body), and
        // the victim's open file as an SCM_RIGHTS descriptor.
        func field(_ number: UInt8, _ text: String) -> [UInt8] {
            [number << 3 | 2, UInt8(text.utf8.count)] + Array(text.utf8)
        }
        let naming = ["\(victim)", victimFile, "../\(victim).sqlite"]
        var body: [UInt8] = try Stol_V1_AddFavorite.with { $0.taxonID = 9689 }.serializedBytes()
        body += field(2, naming[0]) + field(3, naming[1]) + field(4, naming[2])
        var bytes: [UInt8] = [0x08, 0x01]  // id 1
        bytes += [10 << 3 | 2, UInt8(body.count)] + body  // body case `add` (field 10)
        bytes += field(2, naming[0]) + field(3, naming[1]) + field(9, naming[2])
        XCTAssertEqual(try Stol_V1_FavoritesRequest(serializedBytes: bytes).add.taxonID, 9689, "the frame is well formed")
        let connection = try FavoritesConnection(path: stack.socketPath(.favorites))
        let victimDescriptor = open(victimFile, O_RDWR)
        XCTAssertGreaterThanOrEqual(victimDescriptor, 0)
        defer { close(victimDescriptor) }
        let length = UInt32(bytes.count).bigEndian
        try connection.socket.sendRaw(withUnsafeBytes(of: length) { Array($0) } + bytes, passing: victimDescriptor)
        let answer = try connection.receive()
        XCTAssertTrue(answer.state.isFavorite, "\(answer)")

        // The add landed in the caller's own file (uid 0), and only there.
        XCTAssertEqual(try connection.listedIDs(), [9689])
        XCTAssertEqual(try stack.fav(["list", "--json"], uid: victim).listedIDs, [38942])
        let files = try FileManager.default.contentsOfDirectory(atPath: stack.stateDirectory + "/favorites")
            .filter { $0.hasSuffix(".sqlite") }.sorted()
        XCTAssertEqual(files, ["\(getuid()).sqlite", "\(victim).sqlite"])
    }

    // MARK: - Concurrency and durability

    /// Toggles per client: 40 by default, 12 when CI=true (STOL_STRESS_TOGGLES overrides
    /// both). A count, not a time: one user's 50 clients are a heavy user, whose requests
    /// run at nice +10 (`LaneMeter`), so how many fit in a few seconds depends on what
    /// else the machine runs (430 in 3 s once under `make test`'s parallel load).
    private var togglesPerClient: Int {
        let environment = ProcessInfo.processInfo.environment
        if let value = environment["STOL_STRESS_TOGGLES"].flatMap(Int.init) { return value }
        return environment["CI"] == "true" ? 12 : 40
    }

    func testFiftyConcurrentClientsToggling_leaveCountAndListConsistentWithTheAcknowledgedAnswers() throws {
        try startFavorites()
        let path = stack.socketPath(.favorites)
        let ids: [Int64] = Array(1...24)
        let toggles = togglesPerClient
        let acknowledged = LockedLog<(id: Int64, isFavorite: Bool)>()
        let failures = LockedLog<String>()
        let seeded = SplitMix64(for: self)  // which ids each client toggles: printed, replayed with STOL_TEST_SEED
        onThreads(50) { index in
            var mine: [(id: Int64, isFavorite: Bool)] = []
            var generator = seeded.derived(index)
            do {
                let connection = try FavoritesConnection(path: path)
                for _ in 0..<toggles {
                    let id = ids.randomElement(using: &generator)!
                    let answer = try connection.call(FavoritesConnection.toggle(id))
                    guard case .state(let state) = answer.result, state.taxonID == id else {
                        failures.append(contentsOf: ["client \(index): \(answer)"])
                        break
                    }
                    mine.append((id, state.isFavorite))
                }
            } catch {
                failures.append(contentsOf: ["client \(index): \(error)"])
            }
            acknowledged.append(contentsOf: mine)
        }
        XCTAssertEqual(failures.all, [])
        let answers = acknowledged.all
        XCTAssertGreaterThan(answers.count, 500, "the clients really toggled")

        // Each id starts absent and every toggle flips it, so its acknowledged answers
        // alternate true, false, true, …: at most one more "true" than "false", and it
        // is a favourite now exactly when there is one more.
        var expected = Set<Int64>()
        for id in ids {
            let added = answers.filter { $0.id == id && $0.isFavorite }.count
            let removed = answers.filter { $0.id == id && !$0.isFavorite }.count
            XCTAssertTrue(added - removed == 0 || added - removed == 1, "id \(id): \(added) adds, \(removed) removes")
            if added - removed == 1 { expected.insert(id) }
        }
        let check = try FavoritesConnection(path: path)
        XCTAssertEqual(try check.count(), UInt64(expected.count))
        let listed = try check.listedIDs()
        XCTAssertEqual(listed.count, Set(listed).count, "no id is listed twice")
        XCTAssertEqual(Set(listed), expected)
        for id in ids {
            XCTAssertEqual(try check.call(FavoritesConnection.isFavorite(id)).state.isFavorite, expected.contains(id))
        }
    }

    func testKillMinus9DuringAStreamOfAdds_losesNoAcknowledgedFavouriteAndLeavesTheFileIntact() throws {
        try startFavorites()
        let path = stack.socketPath(.favorites)
        let file = stack.favoritesFile(uid: getuid())
        var acknowledgedSoFar = Set<Int64>()
        var attemptedSoFar = Set<Int64>()
        let rounds = 5
        // The kill lands after a random number of acknowledged adds (not after a random
        // time: the stream is observed, not slept through), from the printed seed.
        var generator = SplitMix64(for: self)
        for round in 0..<rounds {
            let acknowledged = LockedLog<Int64>()
            let attempted = LockedLog<Int64>()
            let killAfter = Int.random(in: 20...400, using: &generator)
            // Two writers, each adding fresh ids one after another until the daemon dies.
            let writers = startThreads(2) { writer in
                var tried: [Int64] = []
                guard let connection = try? FavoritesConnection(path: path) else { return }
                for k in 0..<Int64(1_000_000) {
                    let id = Int64(round + 1) * 10_000_000 + Int64(writer) * 1_000_000 + k + 1
                    tried.append(id)
                    guard let answer = try? connection.call(FavoritesConnection.add(id)),
                          case .state(let state) = answer.result, state.isFavorite else { break }
                    acknowledged.append(contentsOf: [id])  // seen at once: the kill waits for a number of these
                }
                attempted.append(contentsOf: tried)
            }
            XCTAssertTrue(waitUntil(seconds: 60) { acknowledged.count >= killAfter },
                          "round \(round): \(killAfter) adds were never acknowledged")
            XCTAssertEqual(stack.crash(.favorites), 128 + SIGKILL, "round \(round), after \(killAfter) acknowledged adds")
            writers.wait()
            XCTAssertGreaterThan(acknowledged.all.count, 0, "round \(round): adds were acknowledged before the kill")
            acknowledgedSoFar.formUnion(acknowledged.all)
            attemptedSoFar.formUnion(attempted.all)

            try startFavorites()  // restart: the new daemon recovers the WAL
            let listed = Set(try FavoritesConnection(path: path).listedIDs())
            XCTAssertTrue(acknowledgedSoFar.isSubset(of: listed),
                          "round \(round): lost \(acknowledgedSoFar.subtracting(listed).count) acknowledged favourites")
            XCTAssertTrue(listed.isSubset(of: attemptedSoFar), "round \(round): ids nobody sent appeared")
            XCTAssertEqual(try inspectFavorites(file) { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }, ["ok"])
        }
        XCTAssertEqual(stack.stop(.favorites), 0)
        let (integrity, columns, rows) = try inspectFavorites(file) { db in
            (try String.fetchAll(db, sql: "PRAGMA integrity_check"),
             try Row.fetchAll(db, sql: "PRAGMA table_info(favorites)").map { $0["name"] as String },
             try Int64.fetchSet(db, sql: "SELECT taxon_id FROM favorites"))
        }
        XCTAssertEqual(integrity, ["ok"])
        XCTAssertEqual(columns, ["taxon_id", "created_at"])
        XCTAssertTrue(acknowledgedSoFar.isSubset(of: rows))
    }
}
