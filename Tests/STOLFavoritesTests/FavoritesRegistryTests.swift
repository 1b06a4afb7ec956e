import Foundation
import STOLFavorites
import STOLTestFixtures
import STOLProtocol
import STOLTransport
import XCTest

/// How long users' stores stay open: bounded in number, closed when idle, never
/// under a request, and reopened with nothing lost. Open files are counted in
/// `/proc/self/fd`, the resource the limit exists for.
final class FavoritesRegistryTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self) + "/favorites"
    }

    private func service(maximumOpenStores: Int = 64) -> FavoritesService {
        FavoritesService(registry: FavoritesRegistry(directory: directory, logger: quietLogger,
                                                     limits: .init(maximumOpenStores: maximumOpenStores)))
    }

    private static func send(_ body: Stol_V1_FavoritesRequest.OneOf_Body, as uid: UInt32,
                             to service: FavoritesService) async -> Stol_V1_FavoritesResponse {
        var request = Stol_V1_FavoritesRequest()
        request.id = 1
        request.body = body
        let context = RequestContext(peer: PeerCredentials(pid: 4242, uid: uid, gid: uid), logger: quietLogger)
        return await service.respond(to: request, context: context)
    }

    private static func add(_ taxonID: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body {
        var add = Stol_V1_AddFavorite()
        add.taxonID = taxonID
        return .add(add)
    }

    private static func list(as uid: UInt32, from service: FavoritesService) async -> [Stol_V1_FavoriteEntry] {
        await send(.list(Stol_V1_ListFavorites()), as: uid, to: service).list.entries
    }

    /// The uids whose favourites file this process has open now (database, `-wal`
    /// or `-shm`), read from the kernel's table of this process's descriptors.
    private func uidsWithOpenFiles() throws -> Set<UInt32> {
        var uids = Set<UInt32>()
        for fd in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd),
                  target.hasPrefix(directory + "/") else { continue }
            let name = target.dropFirst(directory.count + 1).prefix { $0 != "." }
            if let uid = UInt32(name) { uids.insert(uid) }
        }
        return uids
    }

    func testManyUsersConnectingOnce_keepTheOpenStoresBoundedByTheLimit() async throws {
        let service = service(maximumOpenStores: 4)
        for uid in UInt32(2000)..<2040 {
            let answer = await Self.send(Self.add(Int64(uid)), as: uid, to: service)
            XCTAssertTrue(answer.state.changed, "uid \(uid): \(answer)")
            XCTAssertLessThanOrEqual(service.registry.openStoreCount, 4, "after uid \(uid)")
            let open = try uidsWithOpenFiles()
            XCTAssertLessThanOrEqual(open.count, 4, "after uid \(uid): \(open.sorted())")
            XCTAssertTrue(open.contains(uid), "the user just served keeps their file open")
        }
        // The least recently used went first: the last four are the ones open.
        XCTAssertEqual(try uidsWithOpenFiles(), Set(2036..<2040))
        // Every user's favourite is still there when they come back.
        for uid in UInt32(2000)..<2040 {
            let entries = await Self.list(as: uid, from: service)
            XCTAssertEqual(entries.map(\.taxonID), [Int64(uid)], "uid \(uid)")
        }
        XCTAssertLessThanOrEqual(try uidsWithOpenFiles().count, 4)
    }

    func testAStoreClosedWhenIdle_reopensWithItsFavouritesIntact() async throws {
        let service = service()
        for id: Int64 in [9689, 38942, 9694] { _ = await Self.send(Self.add(id), as: 1000, to: service) }
        let before = await Self.list(as: 1000, from: service)
        XCTAssertEqual(try uidsWithOpenFiles(), [1000])

        let closed = await service.registry.closeIdleStores(unusedSince: .now)
        XCTAssertEqual(closed, 1)
        XCTAssertEqual(service.registry.openStoreCount, 0)
        XCTAssertEqual(try uidsWithOpenFiles(), [], "the file is closed")
        XCTAssertNil(service.registry.existingStore(for: 1000), "nothing answers from a closed store's memory")

        let after = await Self.list(as: 1000, from: service)
        XCTAssertEqual(after, before, "same ids, same times, same order")
        XCTAssertEqual(Set(after.map(\.taxonID)), [9694, 38942, 9689])
        let count = await Self.send(.count(Stol_V1_CountFavorites()), as: 1000, to: service)
        XCTAssertEqual(count.count.count, 3)
        XCTAssertEqual(try uidsWithOpenFiles(), [1000], "reopened on use")
    }

    func testClosingIdleStores_spareThoseUsedAfterTheCutoff() async throws {
        let service = service()
        _ = await Self.send(Self.add(1), as: 1000, to: service)
        let cutoff = ContinuousClock.now
        _ = await Self.send(Self.add(2), as: 1001, to: service)

        let closed = await service.registry.closeIdleStores(unusedSince: cutoff)
        XCTAssertEqual(closed, 1)
        XCTAssertEqual(try uidsWithOpenFiles(), [1001])
    }

    func testAStoreWithARequestInFlight_isNeverClosed_neitherWhenIdleNorOverTheLimit() async throws {
        let registry = FavoritesRegistry(directory: directory, logger: quietLogger, limits: .init(maximumOpenStores: 1))
        let (entered, inside) = AsyncStream.makeStream(of: FavoritesStore.self)
        let (proceed, release) = AsyncStream.makeStream(of: Void.self)
        // A request of uid 1000 that adds, then waits inside the registry until released.
        let request = Task {
            try await registry.withStore(for: 1000) { store throws(FavoritesError) in
                _ = try await store.add(1)
                inside.yield(store)
                for await _ in proceed { break }
                return try await store.add(2)
            }
        }
        var iterator = entered.makeAsyncIterator()
        let held = await iterator.next()

        let closedInFlight = await registry.closeIdleStores(unusedSince: .now)
        XCTAssertEqual(closedInFlight, 0, "in flight: not idle")
        // Another user over the limit of one: the store in flight cannot make room.
        try await registry.withStore(for: 1001) { store throws(FavoritesError) in _ = try await store.add(3) }
        XCTAssertEqual(try uidsWithOpenFiles(), [1000, 1001])
        XCTAssertTrue(registry.existingStore(for: 1000) === held, "still the same store")

        release.yield()
        let added = try await request.value
        XCTAssertTrue(added, "the request finishes on its store")
        // Once idle, it goes.
        let closedIdle = await registry.closeIdleStores(unusedSince: .now)
        XCTAssertEqual(closedIdle, 2)
        XCTAssertEqual(try uidsWithOpenFiles(), [])
        let ids = try await registry.withStore(for: 1000) { store throws(FavoritesError) in
            try await store.list().map(\.taxonID)
        }
        XCTAssertEqual(Set(ids), [1, 2])
    }

    /// Eight users, a limit of two open stores and idle sweeps in between: stores
    /// are closed and reopened all the time under concurrent requests. Every
    /// acknowledged add is in the file, and each user's in-memory answers agree
    /// with it (two live stores of one user would each miss the other's adds).
    func testConcurrentRequestsOfManyUsers_underConstantClosing_loseNothing() async throws {
        let service = service(maximumOpenStores: 2)
        let users = UInt32(3000)..<3008
        let perUser = 25
        await withTaskGroup(of: Void.self) { group in
            for uid in users {
                group.addTask {
                    for id in 1...perUser {
                        let answer = await Self.send(Self.add(Int64(id)), as: uid, to: service)
                        XCTAssertTrue(answer.state.changed, "uid \(uid) id \(id): \(answer)")
                    }
                }
            }
            group.addTask {
                for _ in 0..<50 {
                    await service.registry.closeIdleStores(unusedSince: .now)
                    await Task.yield()
                }
            }
        }
        XCTAssertLessThanOrEqual(try uidsWithOpenFiles().count, 2)
        for uid in users {
            let entries = await Self.list(as: uid, from: service)
            XCTAssertEqual(Set(entries.map(\.taxonID)), Set((1...perUser).map(Int64.init)), "uid \(uid)")
            var count = Stol_V1_FavoritesRequest()
            count.count = Stol_V1_CountFavorites()
            let counted = await service.respond(
                to: count, context: RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid), logger: quietLogger))
            XCTAssertEqual(counted.count.count, UInt64(perUser), "uid \(uid): memory agrees with the file")
        }
    }
}
