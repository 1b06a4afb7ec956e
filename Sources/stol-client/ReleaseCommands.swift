import ArgumentParser
import Foundation
import Glibc
import STOLClientKit
import STOLProtocol

/// `stol-client diff R1 R2`: what changed between two installed releases.
struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List every id added, deleted, merged, renamed, moved or changed in rank between two installed releases.",
        discussion: """
            Compares the source's own nodes (every NCBI node, with its rank as NCBI spells it) of \
            FROM and TO (names as `db list` shows them; `bundled` for the bundled database). Output, \
            one line per change, in id order (an id renamed and moved has two lines):
              TSV:   kind, id, rank, scientific name (in TO; in FROM when it is gone), old, new
                     kind: added (new: its parent), deleted, merged (new: the id it went to),
                     renamed (old and new names), moved (old and new parent ids),
                     rank_changed (old and new ranks)
                     The first line is a `#` comment naming both releases (--no-header leaves it out).
              --jsonl (or --json): the TaxonChange message, one JSON object per line
            Then a summary by kind and rank on stderr (--summary: only the summary, on stdout; as one \
            JSON object with --json). `merged` needs a release built from NCBI's own taxdump (merged.dmp); \
            the PyPI snapshots lack it, so there a merged id shows as deleted.
            Example: stol-client diff 2023.11.4 2024.9.7 --summary
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The older release.") var from: String
    @Argument(help: "The newer release.") var to: String
    @Flag(help: "One JSON object per line instead of TSV.") var jsonl = false
    @Flag(help: "Print only the summary by kind and rank.") var summary = false
    @OptionGroup var header: BatchHeaderOption

    /// Counts by kind, then by rank.
    struct Summary: Encodable {
        var from = "", to = ""
        var total = 0
        var byKind: [String: Int] = [:]
        var byKindAndRank: [String: [String: Int]] = [:]

        enum CodingKeys: String, CodingKey {
            case from, to, total, byKind = "by_kind", byKindAndRank = "by_kind_and_rank"
        }

        mutating func count(_ change: Stol_V1_TaxonChange) {
            let kind = Diff.kindName(change.kind)
            total += 1
            byKind[kind, default: 0] += 1
            byKindAndRank[kind, default: [:]][change.rank.isEmpty ? "-" : change.rank, default: 0] += 1
        }

        var text: String {
            var lines = ["\(from) → \(to): \(total) changes"]
            for kind in Diff.kindOrder where byKind[kind] != nil {
                let ranks = (byKindAndRank[kind] ?? [:]).sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
                let top = ranks.prefix(6).map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                lines.append("  \(kind.padding(toLength: 13, withPad: " ", startingAt: 0)) \(byKind[kind]!)"
                             + (top.isEmpty ? "" : "  (\(top)\(ranks.count > 6 ? ", …" : ""))"))
            }
            return lines.joined(separator: "\n")
        }
    }

    static let kindOrder = ["added", "deleted", "merged", "renamed", "moved", "rank_changed"]

    static func kindName(_ kind: Stol_V1_ChangeKind) -> String {
        switch kind {
        case .added: "added"
        case .deleted: "deleted"
        case .merged: "merged"
        case .renamed: "renamed"
        case .moved: "moved"
        case .rankChanged: "rank_changed"
        default: "unknown"
        }
    }

    static func tsv(_ change: Stol_V1_TaxonChange) -> String {
        let new = change.kind == .merged ? String(change.newID) : change.newValue
        return [kindName(change.kind), String(change.id), change.rank, change.name, change.oldValue, new].joined(separator: "\t")
    }

    func run() throws {
        try global.run { () throws(ClientError) in
            let client = global.unpinnedTaxonomy()
            let json = jsonl || global.json
            let output = BatchOutput()
            var totals = Summary(from: from, to: to)
            if !summary && !json && !header.noHeader { output.line("# diff \(from) → \(to)") }
            let progress = isatty(STDERR_FILENO) == 1
            var afterID: Int64 = 0
            var pages = 0
            while true {
                let page = try client.ask(.with { $0.diff = .with {
                    $0.fromRelease = from; $0.toRelease = to; $0.afterID = afterID
                } }, as: Stol_V1_DiffResponse.self)
                for change in page.changes {
                    totals.count(change)
                    if summary { continue }
                    if json {
                        output.line(TextFormatter.json(change))
                    } else {
                        output.line(Self.tsv(change))
                    }
                }
                pages += 1
                if progress {
                    FileHandle.standardError.write(Data("\rdiff: ids up to \(page.done ? "the end" : String(page.nextAfterID)), \(totals.total) changes ".utf8))
                }
                if page.done { break }
                afterID = page.nextAfterID
            }
            if progress { FileHandle.standardError.write(Data("\n".utf8)) }
            if summary {
                output.line(global.json ? TextFormatter.json(totals) : totals.text)
            } else {
                FileHandle.standardError.write(Data((totals.text + "\n").utf8))
            }
            try output.finish()
        }
    }
}

/// `stol-client history ID`: one id through every installed release.
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show one taxon id in the bundled database and every installed release, oldest release first.",
        discussion: """
            For each release: its name, rank and parent there, or that it is absent (merged into \
            another id, or deleted, where the release records it). --json prints the HistoryResponse.
            Example: stol-client history 9689
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Taxon id.") var id: Int64

    func run() throws {
        try global.run { () throws(ClientError) in
            let client = global.unpinnedTaxonomy()
            let history = try client.ask(.with { $0.history = .with { $0.taxonID = id } }, as: Stol_V1_HistoryResponse.self)
            if global.json { print(TextFormatter.json(history)); return }
            let width = max(7, history.releases.map(\.release.count).max() ?? 0)
            for state in history.releases {
                let release = state.release.padding(toLength: width, withPad: " ", startingAt: 0)
                if state.present {
                    print("\(release)  \(state.name) (\(state.rank.isEmpty ? "-" : state.rank)), parent \(state.parentID)")
                } else if state.mergedInto != 0 {
                    print("\(release)  merged into \(state.mergedInto)")
                } else {
                    print("\(release)  " + (state.deleted ? "deleted" : "absent"))
                }
            }
        }
    }
}
