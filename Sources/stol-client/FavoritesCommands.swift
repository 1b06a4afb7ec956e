import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLRuntime

// MARK: - Favourites

struct Favorites: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fav",
        abstract: "Your private favourites (kept per Unix user by stol-favoritesd).",
        subcommands: [FavAdd.self, FavRemove.self, FavToggle.self, FavIs.self, FavList.self, FavCount.self,
                      FavClear.self, FavStorage.self, FavForget.self])
}

/// Sends one favourites request and returns the final answer, printing any notice.
func favorites(_ global: GlobalOptions, _ body: Stol_V1_FavoritesRequest.OneOf_Body) throws(ClientError) -> Stol_V1_FavoritesResponse {
    var request = Stol_V1_FavoritesRequest()
    request.body = body
    let response = try global.favorites().call(request)
    if !response.notice.isEmpty { FileHandle.standardError.write(Data("notice: \(response.notice)\n".utf8)) }
    return response
}

func printState(_ global: GlobalOptions, _ response: Stol_V1_FavoritesResponse, verb: String) throws(ClientError) {
    guard case .state(let state) = response.result else { throw .local("unexpected answer") }
    if global.json {
        print(TextFormatter.json(object: ["taxon_id": state.taxonID, "is_favorite": state.isFavorite, "changed": state.changed]))
    } else {
        let now = state.isFavorite ? "is a favourite" : "is not a favourite"
        print("\(state.taxonID) \(now)\(state.changed ? "" : " (\(verb): nothing to change)")")
    }
}

/// add, remove, toggle and is: one taxon id in, the resulting state out.
protocol FavoriteStateCommand: ParsableCommand {
    var global: GlobalOptions { get }
    var id: Int64 { get }
    static var verb: String { get }
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body
}

extension FavoriteStateCommand {
    func run() throws {
        try global.run { () throws(ClientError) in
            try printState(global, favorites(global, Self.body(id)), verb: Self.verb)
        }
    }
}

struct FavAdd: FavoriteStateCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a taxon to your favourites.")
    static let verb = "add"
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Taxon id.") var id: Int64
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .add(.with { $0.taxonID = id }) }
}

struct FavRemove: FavoriteStateCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a taxon from your favourites.")
    static let verb = "remove"
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Taxon id.") var id: Int64
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .remove(.with { $0.taxonID = id }) }
}

struct FavToggle: FavoriteStateCommand {
    static let configuration = CommandConfiguration(commandName: "toggle", abstract: "Add the taxon if absent, remove it if present.")
    static let verb = "toggle"
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Taxon id.") var id: Int64
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .toggle(.with { $0.taxonID = id }) }
}

struct FavIs: FavoriteStateCommand {
    static let configuration = CommandConfiguration(commandName: "is", abstract: "Say whether a taxon is a favourite (exit 0 either way).")
    static let verb = "check"
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Taxon id.") var id: Int64
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .isFavorite(.with { $0.taxonID = id }) }
}

struct FavList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List your favourites, newest first.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    func run() throws {
        try global.run { () throws(ClientError) in
            let response = try favorites(global, .list(Stol_V1_ListFavorites()))
            guard case .list(let list) = response.result else { throw .local("unexpected answer") }
            if global.json { print(TextFormatter.json(list)); return }
            if list.entries.isEmpty { print("no favourites yet: add one with `stol-client fav add ID`"); return }
            let taxonomy = global.taxonomy()
            for entry in list.entries {
                var request = Stol_V1_TaxonomyRequest()
                var get = Stol_V1_GetTaxonRequest()
                get.taxonID = entry.taxonID
                get.language = language.language
                request.getTaxon = get
                let name: String
                do throws(ClientError) {
                    let answer = try taxonomy.call(request)
                    if case .taxon(let taxon) = answer.result { name = TextFormatter.line(taxon) } else { name = "\(entry.taxonID)" }
                } catch {
                    if case .server(let error) = error, error.code == .notFound {
                        name = "\(entry.taxonID)\tNot found in active database"
                    } else {
                        throw error
                    }
                }
                print("\(name)\t(added \(entry.createdAt))")
            }
        }
    }
}

struct FavCount: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "count", abstract: "How many favourites you have.")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            let response = try favorites(global, .count(Stol_V1_CountFavorites()))
            guard case .count(let count) = response.result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(object: ["count": count.count]) : "\(count.count) species saved")
        }
    }
}

struct FavStorage: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storage", abstract: "Bytes your favourites file uses.")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            let response = try favorites(global, .storage(Stol_V1_StorageBytes()))
            guard case .storage(let storage) = response.result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(object: ["bytes": storage.bytes]) : "\(storage.bytes) bytes")
        }
    }
}

/// Asks before destroying data; refuses without --yes when nobody can answer.
func confirm(_ question: String, yes: Bool) throws(ClientError) {
    if yes { return }
    guard isatty(STDIN_FILENO) == 1 else { throw .usage("\(question) Not interactive: pass --yes to confirm.") }
    print("\(question) Type 'yes' to continue: ", terminator: "")
    guard readLine()?.lowercased() == "yes" else { throw .usage("cancelled; nothing was changed") }
}

struct FavClear: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove all your favourites (asks first).")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false
    func run() throws {
        try global.run { () throws(ClientError) in
            let countResponse = try favorites(global, .count(Stol_V1_CountFavorites()))
            guard case .count(let count) = countResponse.result else { throw .local("unexpected answer") }
            try confirm("This will remove all \(count.count) saved species. This cannot be undone.", yes: yes)
            let response = try favorites(global, .clear(Stol_V1_ClearFavorites()))
            guard case .cleared(let cleared) = response.result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(object: ["removed": cleared.removed]) : "removed \(cleared.removed) favourites")
        }
    }
}

struct FavForget: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "forget-me",
                                                    abstract: "Delete your favourites file entirely (asks first).")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false
    func run() throws {
        try global.run { () throws(ClientError) in
            try confirm("This deletes your favourites file and everything in it.", yes: yes)
            let response = try favorites(global, .forgetMe(Stol_V1_ForgetMe()))
            guard case .forgotten = response.result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(object: ["forgotten": true]) : "your favourites file is deleted")
        }
    }
}
