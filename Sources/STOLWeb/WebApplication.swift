import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import STOLClientKit
import STOLProtocol

/// The app's routes: the pages (one shell that the script fills, at every shareable
/// address), its own assets, and the API (docs/web.md, "The HTTP API"): one protocol
/// request per call, passed to the daemons by ``DaemonGateway``.
public struct WebApplication: Sendable {
    public let gateway: DaemonGateway
    public let extraHosts: Set<String>
    public let version: String

    public init(gateway: DaemonGateway, extraHosts: Set<String> = [], version: String) {
        self.gateway = gateway
        self.extraHosts = extraHosts
        self.version = version
    }

    /// The first path segments of the app's pages (`/taxon/9615`, `/compare/9689/9694`, …).
    public static let pages: Set<String> = ["", "tree", "search", "taxon", "compare", "relatives", "favourites", "about",
                                            "history", "cladogram", "changes"]

    /// The largest API request body read (a cladogram of many taxa is the largest).
    public static let maximumRequestBytes = 1 << 20

    public var router: Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: SecurityHeaders())
        router.add(middleware: RequestGuard(extraHosts: extraHosts))
        let gateway = gateway
        let version = version

        router.get("/assets/:name") { _, context -> Response in
            let name = try context.parameters.require("name")
            guard let asset = WebAssets.file(named: name) else { throw HTTPError(.notFound, message: "no such file") }
            return Response(status: .ok, headers: [.contentType: asset.contentType, .cacheControl: "no-cache", .eTag: asset.etag],
                            body: .init(byteBuffer: ByteBuffer(bytes: asset.bytes)))
        }
        router.post("/api/taxonomy") { request, context -> Response in
            WebResponses.json(await gateway.taxonomy(try await Self.body(of: request, context: context)))
        }
        router.post("/api/favorites") { request, context -> Response in
            WebResponses.json(await gateway.favorites(try await Self.body(of: request, context: context)))
        }
        router.get("/api/favourites/listing") { request, _ -> Response in
            let (order, language) = try Self.listingOptions(request)
            return WebResponses.json(await gateway.favouritesListing(order: order, language: language, export: false))
        }
        router.get("/api/favourites/export") { request, _ -> Response in
            let (order, language) = try Self.listingOptions(request)
            let answer = await gateway.favouritesListing(order: order, language: language, export: true)
            guard answer.isText else { return WebResponses.json(answer) }
            return Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8",
                                                   .contentDisposition: "attachment; filename=\"favourites.txt\""],
                            body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        router.get("/api/newick") { request, _ -> Response in
            let taxa = (request.uri.queryParameters.get("taxa") ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !taxa.isEmpty else { throw HTTPError(.badRequest, message: "name the taxa: ?taxa=9606,9598,Panthera leo") }
            let ranks: Stol_V1_RankView = request.uri.queryParameters.get("ranks") == "all" ? .all : .main
            let answer = await gateway.newick(taxa: taxa, ranks: ranks, release: request.uri.queryParameters.get("release") ?? "")
            guard answer.isText else { return WebResponses.json(answer) }
            return Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8",
                                                   .contentDisposition: "attachment; filename=\"tree.nwk\""],
                            body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        router.get("/api/import-status") { _, _ -> Response in
            WebResponses.json(await gateway.importStatus())
        }
        router.get("/api/app") { _, _ -> Response in
            let about: [String: String] = ["version": version, "runtimeDirectory": gateway.paths.runtimeDirectory]
            let data = (try? JSONSerialization.data(withJSONObject: about, options: [.sortedKeys])) ?? Data("{}".utf8)
            return WebResponses.json(.init(status: .ok, body: String(decoding: data, as: UTF8.self)))
        }
        router.get("/") { request, _ in Self.shell(for: request) }
        router.get("**") { request, _ in Self.shell(for: request) }
        return router
    }

    public var responder: some HTTPResponder<BasicRequestContext> { router.buildResponder() }

    /// The page shell, at every address of a page (the script draws the page); a `404` with
    /// the same shell elsewhere, which then says so in words.
    static func shell(for request: Request) -> Response {
        let first = request.uri.path.split(separator: "/").first.map(String.init) ?? ""
        return Response(status: pages.contains(first) ? .ok : .notFound, headers: [.contentType: "text/html; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: WebAssets.shell.bytes)))
    }

    /// `sort` (recent, scientific, common) and `lang` of a favourites listing.
    static func listingOptions(_ request: Request) throws -> (FavoriteSort, String) {
        let sort = request.uri.queryParameters.get("sort") ?? FavoriteSort.recent.rawValue
        guard let order = FavoriteSort(rawValue: sort) else {
            throw HTTPError(.badRequest, message: "sort must be one of \(FavoriteSort.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return (order, request.uri.queryParameters.get("lang") ?? "en")
    }

    static func body(of request: Request, context: BasicRequestContext) async throws -> String {
        let buffer = try await request.body.collect(upTo: maximumRequestBytes)
        return String(buffer: buffer)
    }
}
