import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol
import STOLRuntime

/// `stol-client`: the thin command-line client. Wiring and presentation only:
/// every answer comes from a daemon over its Unix socket.
@main
struct StolClient: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stol-client",
        abstract: "Query the STOL tree of life: browse, search, favourites, reference databases.",
        discussion: """
            Talks to the STOL daemons over Unix sockets in $STOL_RUNTIME_DIR (default /run/stol).
            Every command prints human-readable text, or JSON with --json.

            Exit codes: 0 ok, 1 failure, 3 not found, 4 permission denied,
            5 service not running or busy, 6 invalid request, 7 file failed verification,
            8 not implemented yet, 64 usage (bad arguments, or a confirmation refused).

            Examples:
              stol-client search lion
              stol-client search --prefix pant --rank genus
              stol-client taxon 9689 --lang es
              stol-client children 9688
              stol-client fav toggle 9689 && stol-client fav list
            """,
        subcommands: [Status.self, TaxonCommand.self, Children.self, Roots.self, Ancestors.self, Search.self,
                      Favorites.self, Database.self]
    )
}

struct GlobalOptions: ParsableArguments {
    @Flag(help: "Print JSON (the protobuf JSON mapping of the answer) instead of text.")
    var json = false

    @Option(help: "Directory of the daemons' sockets (default: $STOL_RUNTIME_DIR or /run/stol).")
    var runtimeDir: String?

    var paths: RuntimePaths {
        var paths = RuntimePaths.fromEnvironment()
        if let runtimeDir { paths.runtimeDirectory = runtimeDir }
        return paths
    }

    func taxonomy() -> TaxonomyClient { TaxonomyClient(service: "taxonomy", path: paths.taxonomySocket) }
    func favorites() -> FavoritesClient { FavoritesClient(service: "favorites", path: paths.favoritesSocket) }
    func importer() -> ImportClient { ImportClient(service: "import", path: paths.importSocket) }

    /// Runs `body`, turning a ``ClientError`` into a message and its exit code.
    func run(_ body: () throws(ClientError) -> Void) throws {
        do {
            try body()
        } catch {
            if json {
                var object: [String: Any] = ["message": error.description]
                if case .server(let protocolError) = error { object["code"] = protocolError.code.name }
                print(TextFormatter.json(object: ["error": object]))
            } else {
                FileHandle.standardError.write(Data("stol-client: \(error)\n".utf8))
            }
            throw ExitCode(error.exitCode.rawValue)
        }
    }
}

struct LanguageOption: ParsableArguments {
    @Option(name: .customLong("lang"), help: "Language of common names, as a BCP-47 tag (en, es, zh, …).")
    var language: String = "en"
}

// MARK: - Taxonomy

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show which taxonomy database is active, and its size.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_TaxonomyRequest()
            request.status = Stol_V1_StatusRequest()
            let response = try global.taxonomy().call(request)
            guard case .status(let status) = response.result else { throw .local("unexpected answer") }
            if global.json { print(TextFormatter.json(status)); return }
            print("""
                active database:  \(TextFormatter.databaseKind(status.active.kind)) (\(status.activePath))
                schema version:   \(status.active.schemaVersion)
                taxa:             \(status.taxaCount)
                size:             \(status.sizeBytes) bytes
                reference DB:     \(status.referencePresent ? "installed" : "not installed")\(status.referenceRequested ? ", activation requested" : "")
                server version:   \(status.serverVersion)
                """)
            if !status.fallbackReason.isEmpty { print("note: serving the bundled database because \(status.fallbackReason)") }
        }
    }
}

struct TaxonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "taxon", abstract: "Show one taxon by id.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "Taxon id (e.g. 9689 for Panthera leo).") var id: Int64

    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_TaxonomyRequest()
            var get = Stol_V1_GetTaxonRequest()
            get.taxonID = id
            get.language = language.language
            request.getTaxon = get
            let response = try global.taxonomy().call(request)
            guard case .taxon(let taxon) = response.result else { throw .local("unexpected answer") }
            print(global.json ? TextFormatter.json(taxon) : TextFormatter.detail(taxon))
        }
    }
}

struct Children: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the children of a taxon, by scientific name.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "Parent taxon id.") var id: Int64
    @Option(help: "Skip this many children.") var offset: UInt32 = 0
    @Option(help: "Children per page (at most 500).") var limit: UInt32 = 50

    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_TaxonomyRequest()
            var children = Stol_V1_ChildrenRequest()
            children.taxonID = id
            children.offset = offset
            children.limit = limit
            children.language = language.language
            request.children = children
            let response = try global.taxonomy().call(request)
            guard case .children(let page) = response.result else { throw .local("unexpected answer") }
            if global.json { print(TextFormatter.json(page)); return }
            page.taxa.forEach { print(TextFormatter.line($0, showChildren: true)) }
            let shown = Int(page.offset) + page.taxa.count
            print("(\(page.taxa.isEmpty ? 0 : page.offset + 1)–\(shown) of \(page.total))")
        }
    }
}

struct Roots: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the top of the tree (the domains).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption

    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_TaxonomyRequest()
            var roots = Stol_V1_RootsRequest()
            roots.language = language.language
            request.roots = roots
            let response = try global.taxonomy().call(request)
            guard case .roots(let page) = response.result else { throw .local("unexpected answer") }
            if global.json { print(TextFormatter.json(page)); return }
            page.taxa.forEach { print(TextFormatter.line($0, showChildren: true)) }
        }
    }
}

struct Ancestors: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the lineage of a taxon, root first.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "Taxon id.") var id: Int64

    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_TaxonomyRequest()
            var ancestors = Stol_V1_AncestorsRequest()
            ancestors.taxonID = id
            ancestors.language = language.language
            request.ancestors = ancestors
            let response = try global.taxonomy().call(request)
            guard case .ancestors(let list) = response.result else { throw .local("unexpected answer") }
            if global.json { print(TextFormatter.json(list)); return }
            for (depth, taxon) in list.taxa.enumerated() {
                print(String(repeating: "  ", count: depth) + TextFormatter.line(taxon))
            }
        }
    }
}

struct Search: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search scientific names, common names (any language) and synonyms.",
        discussion: "All words must match. Diacritics and case are ignored; any text is safe to type.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Argument(help: "Words to search for.") var words: [String]
    @Flag(help: "Treat the last word as a prefix (autocomplete).") var prefix = false
    @Option(help: "Only this rank: domain, kingdom, phylum, class, order, family, genus, species.") var rank: String?
    @Option(help: "At most this many results (1–200).") var limit: UInt32 = 20

    func run() throws {
        try global.run { () throws(ClientError) in
            var search = Stol_V1_SearchRequest()
            search.query = words.joined(separator: " ")
            search.prefix = prefix
            search.limit = limit
            search.language = language.language
            if let rank {
                guard let wire = TextFormatter.rank(named: rank) else { throw .usage("unknown rank '\(rank)'") }
                search.rank = wire
            }
            var request = Stol_V1_TaxonomyRequest()
            request.search = search
            let response = try global.taxonomy().call(request)
            guard case .search(let result) = response.result else { throw .local("unexpected answer") }
            if global.json { print(TextFormatter.json(result)); return }
            if result.hits.isEmpty { print("no matches"); return }
            for hit in result.hits {
                var line = TextFormatter.line(hit.taxon)
                if hit.matchType != .scientific { line += "   (matched \(TextFormatter.matchType(hit.matchType)) name “\(hit.matchedName)”)" }
                print(line)
            }
        }
    }
}

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

// MARK: - Reference databases

struct Database: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Manage the signed reference database (root or group stol-admin).",
        subcommands: [DatabaseStatus.self, DatabaseImport.self])
}

struct DatabaseStatus: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Is a reference database installed and active?")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_ImportRequest()
            request.status = Stol_V1_ImportStatusRequest()
            let response = try global.importer().call(request)
            guard case .status(let status) = response.result else { throw .local("unexpected answer") }
            if global.json {
                print(TextFormatter.json(object: [
                    "reference_present": status.referencePresent, "reference_active": status.referenceActive,
                    "reference_size_bytes": status.referenceSizeBytes, "import_running": status.importRunning]))
                return
            }
            print("""
                reference database: \(status.referencePresent ? "installed (\(status.referenceSizeBytes) bytes)" : "not installed")
                active:             \(status.referenceActive ? "yes" : "no (the bundled database serves)")
                import running:     \(status.importRunning ? "yes" : "no")
                """)
        }
    }
}

struct DatabaseImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a signed .stol reference database.",
        discussion: "The file is opened by you and handed to the service as an open descriptor; no daemon opens the path.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The .stol file.") var file: String

    func run() throws {
        try global.run { () throws(ClientError) in
            let fd = open(file, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .local("cannot open \(file): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            var request = Stol_V1_ImportRequest()
            request.importFile = Stol_V1_ImportFileRequest()
            let response = try global.importer().call(request, passing: fd, isFinal: { response in
                if case .progress = response.result { return false }
                return true
            }, onProgress: { response in
                guard case .progress(let progress) = response.result, !global.json else { return }
                FileHandle.standardError.write(Data("  \(TextFormatter.stage(progress.stage)) \(Int(progress.fraction * 100))%\n".utf8))
            })
            guard case .done(let done) = response.result else { throw .local("unexpected answer") }
            if global.json { print(TextFormatter.json(done)); return }
            print("imported; reference database installed (\(done.status.referenceSizeBytes) bytes)")
        }
    }
}
