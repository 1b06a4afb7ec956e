import Foundation
import STOLFavorites
import STOLTestFixtures
import STOLProtocol
import STOLTransport
import SwiftProtobuf
import XCTest

/// The wire mapping of ``FavoritesService``, called as the server calls it: with a
/// ``RequestContext`` whose peer is what SO_PEERCRED would say.
final class FavoritesServiceTests: XCTestCase {
    private var directory = ""
    private var service: FavoritesService!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self) + "/favorites"
        service = FavoritesService(directory: directory, logger: quietLogger)
    }

    private func context(uid: UInt32) -> RequestContext {
        RequestContext(peer: PeerCredentials(pid: 4242, uid: uid, gid: uid), logger: quietLogger)
    }

    private func send(_ body: Stol_V1_FavoritesRequest.OneOf_Body?, as uid: UInt32,
                      id: UInt64 = 1) async -> Stol_V1_FavoritesResponse {
        var request = Stol_V1_FavoritesRequest()
        request.id = id
        request.body = body
        return await service.respond(to: request, context: context(uid: uid))
    }

    private func add(_ taxonID: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body {
        var add = Stol_V1_AddFavorite()
        add.taxonID = taxonID
        return .add(add)
    }

    private func toggle(_ taxonID: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body {
        var toggle = Stol_V1_ToggleFavorite()
        toggle.taxonID = taxonID
        return .toggle(toggle)
    }

    private func isFavorite(_ taxonID: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body {
        var query = Stol_V1_IsFavorite()
        query.taxonID = taxonID
        return .isFavorite(query)
    }

    private func listedIDs(as uid: UInt32) async -> [Int64] {
        await send(.list(Stol_V1_ListFavorites()), as: uid).list.entries.map(\.taxonID)
    }

    func testTwoUsers_neverSeeOrChangeEachOthersFavourites() async throws {
        let alice: UInt32 = 1001, bob: UInt32 = 1002
        _ = await send(add(1), as: alice)
        _ = await send(add(2), as: alice)
        _ = await send(add(3), as: bob)

        let aliceIDs = await listedIDs(as: alice)
        let bobIDs = await listedIDs(as: bob)
        XCTAssertEqual(Set(aliceIDs), [1, 2])
        XCTAssertEqual(bobIDs, [3])
        let bobSeesAlices = await send(isFavorite(1), as: bob).state.isFavorite
        XCTAssertFalse(bobSeesAlices)

        let cleared = await send(.clear(Stol_V1_ClearFavorites()), as: bob).cleared.removed
        XCTAssertEqual(cleared, 1)
        _ = await send(.forgetMe(Stol_V1_ForgetMe()), as: bob)
        let aliceCount = await send(.count(Stol_V1_CountFavorites()), as: alice).count.count
        XCTAssertEqual(aliceCount, 2)
        XCTAssertTrue(fileExists(directory + "/1001.sqlite"))
        XCTAssertEqual(databaseFiles(directory + "/1002.sqlite"), [])
    }

    func testEachOperation_answersWithItsResultAndEchoesTheRequestID() async throws {
        let uid: UInt32 = 1000
        let added = await send(add(42), as: uid, id: 7)
        XCTAssertEqual(added.id, 7)
        XCTAssertEqual(added.state.taxonID, 42)
        XCTAssertTrue(added.state.isFavorite)
        XCTAssertTrue(added.state.changed)

        let again = await send(add(42), as: uid).state
        XCTAssertTrue(again.isFavorite)
        XCTAssertFalse(again.changed)

        let toggled = await send(toggle(42), as: uid).state
        XCTAssertFalse(toggled.isFavorite)
        XCTAssertTrue(toggled.changed)

        var remove = Stol_V1_RemoveFavorite()
        remove.taxonID = 42
        let removed = await send(.remove(remove), as: uid).state
        XCTAssertFalse(removed.isFavorite)
        XCTAssertFalse(removed.changed)

        _ = await send(add(5), as: uid)
        let entries = await send(.list(Stol_V1_ListFavorites()), as: uid).list.entries
        XCTAssertEqual(entries.map(\.taxonID), [5])
        XCTAssertTrue(entries[0].createdAt.hasSuffix("Z"))
        let bytes = await send(.storage(Stol_V1_StorageBytes()), as: uid).storage.bytes
        XCTAssertGreaterThan(bytes, 0)
        let forgotten = await send(.forgetMe(Stol_V1_ForgetMe()), as: uid)
        guard case .forgotten = forgotten.result else { return XCTFail("\(forgotten)") }
    }

    func testRequestWithoutBody_isInvalidRequest() async {
        let response = await send(nil, as: 1000, id: 9)
        XCTAssertEqual(response.id, 9)
        XCTAssertEqual(response.protocolError?.code, .invalidRequest)
        XCTAssertEqual(response.protocolError?.message, "request has no body")
    }

    func testRequestWithABodyThisServerDoesNotKnow_isUnimplemented() async throws {
        // Field 99 with a length-delimited empty message: a body a newer client might send.
        let request = try Stol_V1_FavoritesRequest(serializedBytes: [0x08, 0x03, 0x9A, 0x06, 0x00])
        XCTAssertNil(request.body)
        let response = await service.respond(to: request, context: context(uid: 1000))
        XCTAssertEqual(response.id, 3)
        XCTAssertEqual(response.protocolError?.code, .unimplemented)
    }

    func testNonPositiveTaxonIDs_areInvalidRequestAndChangeNothing() async {
        _ = await send(add(42), as: 1000)
        for id: Int64 in [0, -5] {
            let added = await send(add(id), as: 1000)
            let toggled = await send(toggle(id), as: 1000)
            XCTAssertEqual(added.protocolError?.code, .invalidRequest)
            XCTAssertEqual(toggled.protocolError?.code, .invalidRequest)
        }
        let ids = await listedIDs(as: 1000)
        XCTAssertEqual(ids, [42])
    }

    func testDamagedFile_isReportedInExactlyOneResponse() async throws {
        _ = await send(add(42), as: 1000)
        await service.registry.withStore(for: 1000) { await $0.close() }
        try scribble(over: directory + "/1000.sqlite")

        let first = await send(.count(Stol_V1_CountFavorites()), as: 1000)
        let second = await send(.count(Stol_V1_CountFavorites()), as: 1000)
        XCTAssertEqual(first.count.count, 0)
        XCTAssertEqual(first.notice, FavoritesStore.damagedFileNotice)
        XCTAssertEqual(second.notice, "")
    }
}
