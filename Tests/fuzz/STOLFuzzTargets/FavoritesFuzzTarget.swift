import Foundation
import STOLFavorites
import STOLProtocol
import STOLTestFixtures
import STOLTransport

/// `stol-favoritesd`'s request handling (``FavoritesService``) on a real state
/// directory, for one user (a fixed peer uid, as SO_PEERCRED would give it), fed
/// what that user could send on one connection (``RequestStream``).
///
/// Each input starts from a user without favourites and is checked against
/// ``FavoritesModel``: every state, count and clear answer is the model's, a list
/// holds exactly the model's ids, newest first (ties by ascending id), storage is
/// 0 bytes exactly when the user has no file, forget-me leaves no file behind. An
/// out-of-range id is INVALID_REQUEST and changes nothing; no request is answered
/// INTERNAL or with a notice (the file is never damaged here).
public final class FavoritesFuzzTarget: FuzzTarget {
    public static let name = "fuzz-favorites"
    public static let inputIsRequestStream = true

    let service: FavoritesService
    static let uid: UInt32 = 4242
    static let context = RequestContext(peer: PeerCredentials(pid: 1, uid: uid, gid: uid), logger: quietLogger)
    static let allowedErrors: Set<Stol_V1_ErrorCode> = [.invalidRequest, .unimplemented, .permissionDenied]

    init(service: FavoritesService) {
        self.service = service
    }

    public static func make() throws -> FavoritesFuzzTarget {
        let directory = try FuzzScratch.makeDirectory("stolfuzz-favorites") + "/favorites"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return FavoritesFuzzTarget(service: FavoritesService(directory: directory, logger: quietLogger))
    }

    public func run(_ input: [UInt8]) throws(FuzzFailure) {
        let registry = service.registry
        let reset = runBlocking { () async -> String? in
            do {
                try await registry.withStore(for: Self.uid) { store async throws in try await store.forgetMe() }
            } catch { return "\(error)" }
            return nil
        }
        if let reset { throw FuzzFailure("cannot start from a user without favourites: \(reset)") }
        var model = FavoritesModel()
        for item in RequestStream<Stol_V1_FavoritesRequest>.cut(input) {
            switch item {
            case .framingError(let error):
                try ResponseCheck.framingError(error, as: Stol_V1_FavoritesResponse.self)
            case .request(let request, _):
                try answer(request, model: &model)
            }
        }
    }

    private func answer(_ request: Stol_V1_FavoritesRequest, model: inout FavoritesModel) throws(FuzzFailure) {
        let service = self.service
        let response = runBlocking { await service.respond(to: request, context: Self.context) }
        let what = RequestStream<Stol_V1_FavoritesRequest>.describe(request, body: request.body)
        try ResponseCheck.wellFormed(response, requestID: request.id, allowed: Self.allowedErrors, what)
        try expect(response.notice.isEmpty, "\(what): a notice: \(response.notice)")
        guard let body = request.body else {
            try expect(response.protocolError?.code == (request.unknownFields.data.isEmpty ? .invalidRequest : .unimplemented),
                       "\(what): answered \(String(describing: response.result))")
            return
        }
        let fileBefore = model.fileExists
        let expected = model.apply(body)
        switch (expected, response.result) {
        case (.error(let error)?, let result):
            try expect(response.protocolError?.code == error.code, "\(what): expected \(error.code), answered \(String(describing: result))")
        case (let expected?, let result):
            try expect(expected == result, "\(what): expected \(expected), answered \(String(describing: result))")
        case (nil, .list(let list)):
            try expect(Set(list.entries.map(\.taxonID)) == model.ids && list.entries.count == model.ids.count,
                       "\(what): the list holds other ids than \(model.ids.sorted())")
            for (newer, older) in zip(list.entries, list.entries.dropFirst()) {
                try expect(newer.createdAt > older.createdAt || (newer.createdAt == older.createdAt && newer.taxonID < older.taxonID),
                           "\(what): \(newer) listed before \(older)")
            }
        case (nil, .storage(let storage)):
            try expect((storage.bytes > 0) == fileBefore, "\(what): \(storage.bytes) bytes with\(fileBefore ? "" : "out") a file")
        case (nil, let result):
            throw FuzzFailure("\(what): answered \(String(describing: result))")
        }
        if case .forgetMe = body {
            let path = service.registry.path(for: Self.uid)
            for file in [path, path + "-wal", path + "-shm"] {
                try expect(!FileManager.default.fileExists(atPath: file), "\(what): \(file) is still there")
            }
        }
    }

    public static func generatedSeeds() throws -> [(name: String, bytes: [UInt8])] {
        typealias Request = Stol_V1_FavoritesRequest
        var seeds = try FuzzSeeds.requestVectors(socket: "favorites.sock")
        seeds.append(("seed-every-operation", FuzzSeeds.connection(Request.self, [
            .with { $0.add = .with { $0.taxonID = 9689 } },
            .with { $0.add = .with { $0.taxonID = 9694 } },
            .with { $0.isFavorite = .with { $0.taxonID = 9689 } },
            .with { $0.count = .init() },
            .with { $0.list = .init() },
            .with { $0.toggle = .with { $0.taxonID = 9689 } },
            .with { $0.remove = .with { $0.taxonID = 9694 } },
            .with { $0.storage = .init() },
            .with { $0.clear = .init() },
            .with { $0.forgetMe = .init() },
            .with { $0.storage = .init() }
        ])))
        seeds.append(("seed-refused", FuzzSeeds.connection(Request.self, [
            .with { $0.add = .with { $0.taxonID = 0 } },
            .with { $0.toggle = .with { $0.taxonID = -5 } },
            .with { $0.isFavorite = .with { $0.taxonID = (1 << 53) + 1 } },
            .with { $0.add = .with { $0.taxonID = 1 << 53 } },
            Request()
        ])))
        seeds.append(("seed-unknown-operation", FuzzSeeds.unknownOperation(Request.self)))
        return seeds
    }
}
