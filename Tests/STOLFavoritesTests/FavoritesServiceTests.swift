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

    /// `count` and `is_favorite` answered inline (on an event loop, from the open store's
    /// memory) are the lane's answers byte for byte, after every kind of change; nothing
    /// else is answered inline, nor anything while the user's store is not open, or
    /// while a notice waits for the user (the lane gives it).
    func testInlineCountAndIsFavorite_areTheLanesAnswers_onlyWhileTheStoreIsOpen() async throws {
        func request(_ body: Stol_V1_FavoritesRequest.OneOf_Body, id: UInt64) -> Stol_V1_FavoritesRequest {
            .with { $0.id = id; $0.body = body }
        }
        let count = request(.count(Stol_V1_CountFavorites()), id: 5)
        XCTAssertNil(service.respondInline(to: count, context: context(uid: 1000)), "no store open yet")
        let changes: [Stol_V1_FavoritesRequest.OneOf_Body] = [add(9689), add(9606), toggle(9606), toggle(42),
                                                             .clear(Stol_V1_ClearFavorites()), add(7)]
        for (step, change) in changes.enumerated() {
            _ = await send(change, as: 1000)
            for query in [count, request(isFavorite(9689), id: 6), request(isFavorite(7), id: 7), request(isFavorite(42), id: 8)] {
                let inline = try XCTUnwrap(service.respondInline(to: query, context: context(uid: 1000)), "step \(step)")
                let lane = await service.respond(to: query, context: context(uid: 1000))
                XCTAssertEqual(try inline.serializedBytes() as [UInt8], try lane.serializedBytes() as [UInt8], "step \(step)")
            }
        }
        XCTAssertNil(service.respondInline(to: count, context: context(uid: 1001)), "another user's store is not theirs")
        XCTAssertNil(service.respondInline(to: request(isFavorite(0), id: 9), context: context(uid: 1000)), "invalid ids go to the lane")
        XCTAssertNil(service.respondInline(to: request(add(5), id: 10), context: context(uid: 1000)))

        await service.registry.withStore(for: 1000) { await $0.close() }
        try scribble(over: directory + "/1000.sqlite")
        XCTAssertNil(service.respondInline(to: count, context: context(uid: 1000)), "closed: the lane opens it")
        _ = await send(isFavorite(1), as: 1000)  // opens the damaged file anew; its notice is given with this answer
        let afterNotice = try XCTUnwrap(service.respondInline(to: count, context: context(uid: 1000)))
        XCTAssertEqual(afterNotice.count.count, 0)
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
