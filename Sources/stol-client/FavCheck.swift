import ArgumentParser
import STOLClientKit
import STOLProtocol

/// `fav check`: each favourite a release change touched, with the taxon it is now.
struct FavCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "List your favourites that the last release change deleted, merged, renamed, moved or re-ranked.",
        discussion: """
            Compares the release that answers now (the default, or --release) with the one your \
            favourites were last listed in (`fav list` notes it), or with --since RELEASE. One line per \
            change: kind, id, the name before, then what it is now (merged: the id and name it went \
            to; renamed: the new name; moved: the new parent; rank changed: the new rank). Nothing is \
            removed from your list: a deleted or merged id stays a favourite until you remove it.
            Example: stol-client fav check --since 2023.11.4
            """)
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("The release to compare with (default: the one of your previous `fav list`).",
                               valueName: "release"))
    var since: String?

    func run() throws {
        try global.run { () throws(ClientError) in
            let list = try favorites(global, .list(Stol_V1_ListFavorites()), as: Stol_V1_FavoriteList.self)
            let status = try global.taxonomy().ask(.with { $0.status = .init() }, as: Stol_V1_StatusResponse.self)
            let current = status.active.release
            let watch = FavoriteReleaseWatch()
            guard let baseline = since ?? watch.baseline(for: current) else {
                // Listed in this release and in no other before it: nothing changed since (issue 34).
                guard watch.seen == current else {
                    throw .usage("no release is recorded for your favourites yet (`fav list` records the one it answers "
                                 + "from); name one with --since (stol-client db list)")
                }
                if !global.json {
                    print("your favourites were last listed in \(current), the release that answers now: nothing changed "
                          + "since (compare with an earlier release: --since RELEASE)")
                }
                return
            }
            let changes = try FavoriteReleaseWatch.changes(of: list.entries.map(\.taxonID), from: baseline, to: current, global)
            if global.json {
                changes.forEach { print(TextFormatter.json($0)) }
                return
            }
            guard !changes.isEmpty else {
                print("none of your \(list.entries.count) favourites changed from \(baseline) to \(current)")
                return
            }
            print("from \(baseline) to \(current): " + FavoriteReleaseWatch.summary(changes))
            for change in changes {
                let now: String
                switch change.kind {
                case .merged: now = "now \(change.newID) \(change.newName)"
                case .deleted: now = "no taxon in \(current) (kept in your favourites)"
                case .renamed: now = "now named \(change.newValue)"
                case .moved: now = "now under \(change.newValue) (was \(change.oldValue))"
                case .rankChanged: now = "now \(change.newValue) (was \(change.oldValue))"
                default: now = change.newValue
                }
                let before = change.kind == .renamed ? change.oldValue : change.name
                print([Diff.kindName(change.kind), String(change.id), before, now].joined(separator: "\t"))
            }
        }
    }
}
