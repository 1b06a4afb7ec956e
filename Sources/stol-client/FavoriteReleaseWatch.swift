import Foundation
import STOLClientKit
import STOLFileSystem
import STOLProtocol

/// Tells a user what a release change did to their favourites.
///
/// The favourites service keeps ids and times only, so what release a user last
/// saw their list in is kept by the client, in the user's own state directory
/// (`$XDG_STATE_HOME/stol/favorites-release`, default `~/.local/state/stol/`): two
/// lines, the release of the last `fav list` and the one before it. When the
/// release that answers differs from the last one seen, `fav list` asks the
/// taxonomy service what changed for exactly these ids (``Stol_V1_DiffRequest``
/// with `taxon_ids`) and says how many were deleted, merged, renamed or moved;
/// `fav check` lists them. Nothing is ever dropped from the list.
struct FavoriteReleaseWatch {
    /// The release of the last listing, and the one before it.
    var seen: String?
    var previous: String?
    let path: String?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let base = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].flatMap { $0.isEmpty ? nil : $0 + "/.local/state" }
        path = base.map { $0 + "/stol/favorites-release" }
        let lines = path.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }?
            .split(separator: "\n").map(String.init) ?? []
        seen = lines.first
        previous = lines.count > 1 ? lines[1] : nil
    }

    /// Records that the list was seen in `release` (best effort: a home without a
    /// writable state directory only means the next notice repeats).
    mutating func record(_ release: String) {
        guard release != seen else { return }
        previous = seen
        seen = release
        guard let path else { return }
        try? FileManager.default.createDirectory(atPath: AtomicFile.directory(of: path), withIntermediateDirectories: true)
        let lines = [release] + (previous.map { [$0] } ?? [])
        // The package's one atomic writer: a reader never sees half a file, and a crash
        // leaves the old one or the new one (private to the user, as the rest of the directory).
        try? AtomicFile.replace(path: path, with: Array((lines.joined(separator: "\n") + "\n").utf8), mode: 0o600)
    }

    /// The release to compare `current` with: the last one seen if it differs, else the one before.
    func baseline(for current: String) -> String? {
        if let seen, seen != current { return seen }
        return previous
    }

    /// The changes of `ids` from `from` to `to`, in pages of 1000 ids.
    static func changes(of ids: [Int64], from: String, to: String, _ global: GlobalOptions) throws(ClientError) -> [Stol_V1_TaxonChange] {
        let client = global.unpinnedTaxonomy()
        var changes: [Stol_V1_TaxonChange] = []
        for start in stride(from: 0, to: ids.count, by: 1000) {
            let page = try client.ask(.with { $0.diff = .with {
                $0.fromRelease = from; $0.toRelease = to; $0.taxonIds = Array(ids[start..<min(ids.count, start + 1000)])
            } }, as: Stol_V1_DiffResponse.self)
            changes += page.changes
        }
        return changes
    }

    /// "2 deleted, 1 merged, 3 renamed" (kinds in a fixed order; ids with several changes count once per kind).
    static func summary(_ changes: [Stol_V1_TaxonChange]) -> String {
        let counts = Dictionary(grouping: changes, by: { Diff.kindName($0.kind) }).mapValues { Set($0.map(\.id)).count }
        return Diff.kindOrder.compactMap { kind in counts[kind].map { "\($0) \(kind.replacingOccurrences(of: "_", with: " "))" } }
            .joined(separator: ", ")
    }
}
