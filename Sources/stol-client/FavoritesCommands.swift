import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol

// MARK: - Favourites

struct Favorites: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fav",
        abstract: "Your private favourites (kept per Unix user by stol-favoritesd).",
        discussion: """
            Each Unix user has their own favourites. The service knows who you are from the \
            kernel (the uid of your connection), never from anything you type, so nobody else \
            can read, change or clear yours, and you cannot reach theirs. Only taxon ids and the \
            time each was saved are stored; names come from the active taxonomy database when \
            you list or export.

            Name a taxon by id (9689) or by name, scientific or common, in any language the \
            database knows ("Panthera leo", lion, león). When a name fits several taxa you are \
            asked to choose on a terminal; in a script the command fails with exit 6 and lists \
            the candidates with their ids. Ids are never checked against the database: a \
            favourite from another database is kept and listed as "Not found in active database".

            A change is acknowledged only after it is committed to disk, so an answer means \
            it is saved, even if the service is killed a moment later.

            When the release that answers changes (an administrator made another release the \
            default), your next `fav list` says how many of your favourites were deleted, merged, \
            renamed or moved; `fav check` lists them with the taxon each is now. None is dropped.

            Examples:
              stol-client fav add lion                  # by common name
              stol-client fav add Quercus robur         # by scientific name, no quotes needed
              stol-client fav toggle 9689               # by id
              stol-client fav list --sort common --lang es
              stol-client fav export > my-species.txt   # names only, no ids or dates
              stol-client fav export --format json > backup.json && stol-client fav import backup.json
              stol-client fav clear --yes

            Exit codes: 0 ok, 3 no taxon has that name, 4 not allowed (backup and restore are \
            root's), 5 a service is not running, 6 ambiguous name, invalid id or a damaged backup \
            file, 64 usage or confirmation refused, 65 a damaged or foreign export given to import.
            """,
        subcommands: [FavAdd.self, FavRemove.self, FavToggle.self, FavIs.self, FavList.self, FavExport.self,
                      FavImport.self, FavCount.self, FavClear.self, FavStorage.self, FavForget.self, FavCheck.self,
                      FavBackup.self, FavRestore.self])
}

/// Sends one favourites request and returns the answer it expects (a notice of
/// the service is shown on standard error by the client).
func favorites<Answer: ExpectedAnswer>(_ global: GlobalOptions, _ body: Stol_V1_FavoritesRequest.OneOf_Body,
                                       as _: Answer.Type) throws(ClientError) -> Answer
    where Answer.Response == Stol_V1_FavoritesResponse {
    try global.favorites().ask(.with { $0.body = body }, as: Answer.self)
}

/// How `fav add/remove/toggle/is` pick a taxon: its id or its name.
struct FavoriteTarget: ParsableArguments {
    @Argument(help: ArgumentHelp("Taxon id, or a scientific or common name (several words form one name).",
                                 valueName: "id-or-name"))
    var words: [String]

    @Option(name: .customLong("lang"), help: "Language of common names, for matching and display (en, es, zh, …).")
    var language: String = "en"

    @Option(help: ArgumentHelp("Only consider taxa of this rank when resolving a name (species, genus, …).",
                               valueName: "rank"))
    var rank: String?

    func validate() throws {
        if let rank, FavoriteText.rank(named: rank) == nil {
            throw ValidationError("unknown rank '\(rank)'; use domain, kingdom, phylum, class, order, family, genus or species")
        }
    }
}

/// add, remove, toggle and is: one taxon (by id or name) in, the resulting state out.
protocol FavoriteStateCommand: ParsableCommand {
    var global: GlobalOptions { get }
    var target: FavoriteTarget { get }
    /// What the text output says, given the state after the operation and whether it changed.
    static func sentence(isFavorite: Bool, changed: Bool) -> String
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body
}

extension FavoriteStateCommand {
    func run() throws {
        try global.run { () throws(ClientError) in
            let resolver = FavoriteTaxonResolver(global: global, language: target.language,
                                                 rank: target.rank.flatMap(FavoriteText.rank(named:)))
            let resolved = try resolver.resolve(target.words)
            let state = try favorites(global, Self.body(resolved.taxonID), as: Stol_V1_FavoriteState.self)
            if global.json {
                print(TextFormatter.json(FavoriteStateJSON(state)))
                return
            }
            // Named by id: look the name up for the message, but a missing taxonomy
            // service must not stop a favourite from being saved.
            var taxon = resolved.taxon
            var namesKnown = taxon != nil
            if taxon == nil, let found = try? global.taxonomy().taxa(ids: [state.taxonID], language: target.language) {
                taxon = found[state.taxonID]
                namesKnown = true
            }
            let what = FavoriteText.describe(id: state.taxonID, taxon: taxon, namesKnown: namesKnown)
            print("\(Self.sentence(isFavorite: state.isFavorite, changed: state.changed)): \(what)")
        }
    }
}

/// `fav add/remove/toggle/is --json`: the state after the operation, every key present.
struct FavoriteStateJSON: Encodable {
    let taxonID: Int64
    let isFavorite: Bool
    let changed: Bool

    enum CodingKeys: String, CodingKey {
        case taxonID = "taxon_id", isFavorite = "is_favorite", changed
    }

    init(_ state: Stol_V1_FavoriteState) {
        (taxonID, isFavorite, changed) = (state.taxonID, state.isFavorite, state.changed)
    }
}

struct FavAdd: FavoriteStateCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a taxon to your favourites (by id or name).",
        discussion: "Adding a favourite you already have changes nothing and is not an error.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: FavoriteTarget
    static func sentence(isFavorite: Bool, changed: Bool) -> String { changed ? "added" : "already a favourite" }
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .add(.with { $0.taxonID = id }) }
}

struct FavRemove: FavoriteStateCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a taxon from your favourites (by id or name).",
        discussion: "Removing a taxon that is not a favourite changes nothing and is not an error.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: FavoriteTarget
    static func sentence(isFavorite: Bool, changed: Bool) -> String { changed ? "removed" : "was not a favourite" }
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .remove(.with { $0.taxonID = id }) }
}

struct FavToggle: FavoriteStateCommand {
    static let configuration = CommandConfiguration(
        commandName: "toggle", abstract: "Add the taxon if absent, remove it if present (the heart button).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: FavoriteTarget
    static func sentence(isFavorite: Bool, changed: Bool) -> String { isFavorite ? "added" : "removed" }
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .toggle(.with { $0.taxonID = id }) }
}

struct FavIs: FavoriteStateCommand {
    static let configuration = CommandConfiguration(
        commandName: "is", abstract: "Say whether a taxon is one of your favourites (exit 0 either way).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var target: FavoriteTarget
    static func sentence(isFavorite: Bool, changed: Bool) -> String { isFavorite ? "a favourite" : "not a favourite" }
    static func body(_ id: Int64) -> Stol_V1_FavoritesRequest.OneOf_Body { .isFavorite(.with { $0.taxonID = id }) }
}

/// Options shared by `list` and `export`: the order and the language of common names.
struct FavoriteListOptions: ParsableArguments {
    @Option(help: ArgumentHelp("recent (newest first), scientific (A–Z) or common (A–Z by common name in --lang).",
                               valueName: "order"))
    var sort: FavoriteSort = .recent

    @Option(name: .customLong("lang"), help: "Language of common names (en, es, zh, …).")
    var language: String = "en"

    /// The user's favourites with names from the active database. Names are
    /// optional only where the caller says so (a plain list still works while the
    /// taxonomy service is down; sorting by name and exporting need the names).
    func listing(_ global: GlobalOptions, namesRequired: Bool) throws(ClientError) -> FavoriteListing {
        let list = try favorites(global, .list(Stol_V1_ListFavorites()), as: Stol_V1_FavoriteList.self)
        do throws(ClientError) {
            let taxa = try global.taxonomy().taxa(ids: list.entries.map(\.taxonID), language: language)
            return FavoriteListing(entries: list.entries, taxa: taxa)
        } catch {
            guard !namesRequired, case .serviceNotRunning = error else { throw error }
            FileHandle.standardError.write(Data("note: names are not shown: \(error)\n".utf8))
            return FavoriteListing(entries: list.entries, taxa: nil)
        }
    }
}

struct FavList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List your favourites with their names, newest first by default.",
        discussion: """
            Each line shows the id, the scientific and common name, the rank and when it was added. \
            A favourite the active database does not know shows "Not found in active database" and \
            is kept: it may exist in the other database. If the taxonomy service is not running, \
            the list still shows ids and times (sorting by a name then needs the service).
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: FavoriteListOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            let listing = try options.listing(global, namesRequired: options.sort != .recent)
            print(global.json ? TextFormatter.json(listing.listJSON(options.sort)) : listing.listText(options.sort))
            noteReleaseChange(ids: listing.rows.map(\.taxonID))
        }
    }

    /// After the list: what the change of release since the last listing did to these
    /// favourites, on standard error (a best effort: the list itself never fails for it).
    private func noteReleaseChange(ids: [Int64]) {
        guard let current = AnsweringRelease.identity?.release, !current.isEmpty else { return }
        var watch = FavoriteReleaseWatch()
        defer { watch.record(current) }
        guard let seen = watch.seen, seen != current, !ids.isEmpty else { return }
        let note: String
        do {
            let changes = try FavoriteReleaseWatch.changes(of: ids, from: seen, to: current, global)
            guard !changes.isEmpty else { return }
            note = "note: the release changed from \(seen) to \(current): of your favourites "
                + FavoriteReleaseWatch.summary(changes) + "; `stol-client fav check` lists them (none was removed)\n"
        } catch {
            note = "note: the release changed from \(seen) to \(current); what changed for your favourites cannot be "
                + "told (\(error))\n"
        }
        FileHandle.standardError.write(Data(note.utf8))
    }
}

/// What `fav export` writes: names to share, or the whole list to keep.
enum FavoriteExportFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

struct FavExport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Print your favourites: names to share, or --format json to keep and import.",
        discussion: """
            By default (--format text) the output has no taxon ids and no dates, only display \
            names, so it can be shared without revealing anything else:

              My Favourite Species — Species: Tree of Life

              1. Panthera leo (lion)
              2. Quercus robur (English oak)

            --format json writes everything `fav import` needs to bring your favourites back, here \
            or on another machine: each id with the time it was saved, and its names in the \
            active release for a reader ({"format": "stol-favorites", "version": 1, "release", \
            "count", "favorites": [{"taxon_id", "created_at", "scientific_name", "common_name", \
            "rank"}]}, newest first). It works while the taxonomy service is down (names empty).

              stol-client fav export > favourites.txt
              stol-client fav export --format json > favourites.json
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: FavoriteListOptions
    @Option(help: ArgumentHelp("text (names to share) or json (ids, times and names: what `fav import` reads).",
                               valueName: "format"))
    var format: FavoriteExportFormat = .text

    func run() throws {
        try global.run { () throws(ClientError) in
            if format == .json {
                let listing = try options.listing(global, namesRequired: false)
                let document = FavoritesExportDocument(listing: listing, release: AnsweringRelease.identity?.release ?? "")
                print(TextFormatter.json(document))
                return
            }
            let listing = try options.listing(global, namesRequired: true)
            print(global.json ? TextFormatter.json(listing.exportJSON(options.sort)) : listing.exportText(options.sort))
        }
    }
}

struct FavCount: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "count", abstract: "How many favourites you have.")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            let count = try favorites(global, .count(Stol_V1_CountFavorites()), as: Stol_V1_Count.self)
            print(global.json ? TextFormatter.json(["count": count.count]) : "\(count.count) species saved")
        }
    }
}

struct FavStorage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage", abstract: "Bytes your favourites file uses (0 when you have none).")
    @OptionGroup var global: GlobalOptions
    func run() throws {
        try global.run { () throws(ClientError) in
            let storage = try favorites(global, .storage(Stol_V1_StorageBytes()), as: Stol_V1_Storage.self)
            print(global.json ? TextFormatter.json(["bytes": storage.bytes]) : "\(storage.bytes) bytes")
        }
    }
}

/// Asks before destroying data; refuses without --yes when nobody can answer
/// (standard input is not a terminal), so a script never deletes by accident.
func confirm(_ question: String, yes: Bool) throws(ClientError) {
    if yes { return }
    guard isatty(STDIN_FILENO) == 1 else {
        throw .usage("\(question) Not asking: standard input is not a terminal. Pass --yes to confirm; nothing was changed.")
    }
    FileHandle.standardError.write(Data("\(question) Type 'yes' to continue: ".utf8))
    guard terminalLine()?.trimmingCharacters(in: .whitespaces).lowercased() == "yes" else {
        throw .usage("cancelled; nothing was changed")
    }
}

/// One line typed at the terminal (bounded, as every line the client reads); nil at the
/// end of the input or when it cannot be read, which cancels.
func terminalLine() -> String? {
    (try? LineReader(maximumLineBytes: 4096, source: "the terminal", readBytes: 4096).next()) ?? nil
}

struct FavClear: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear", abstract: "Remove all your favourites (asks first; --yes skips the question).",
        discussion: """
            The rows are deleted with SQLite's secure_delete and the journal is emptied, so nothing \
            of them stays on disk. Your (now empty) file stays; `forget-me` deletes it too. \
            Without a terminal the command refuses (exit 64) unless --yes is given.
            """)
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false
    func run() throws {
        try global.run { () throws(ClientError) in
            if !yes {
                let count = try favorites(global, .count(Stol_V1_CountFavorites()), as: Stol_V1_Count.self)
                try confirm("Clear all favourites? This will remove all \(count.count) saved species. This cannot be undone.",
                            yes: false)
            }
            let cleared = try favorites(global, .clear(Stol_V1_ClearFavorites()), as: Stol_V1_Cleared.self)
            print(global.json ? TextFormatter.json(["removed": cleared.removed]) : "removed \(cleared.removed) favourites")
        }
    }
}

struct FavForget: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget-me", abstract: "Delete your favourites file entirely (asks first).",
        discussion: "Removes the file with its journal files: nothing of yours is left on the machine.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false
    func run() throws {
        try global.run { () throws(ClientError) in
            try confirm("Delete your favourites file and everything in it? This cannot be undone.", yes: yes)
            _ = try favorites(global, .forgetMe(Stol_V1_ForgetMe()), as: Stol_V1_Forgotten.self)
            print(global.json ? TextFormatter.json(["forgotten": true]) : "your favourites file is deleted")
        }
    }
}

extension FavoriteSort: ExpressibleByArgument {}
