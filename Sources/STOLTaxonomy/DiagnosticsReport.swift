import Foundation
import STOLProtocol

/// The plain-text diagnostics export: what a bug report needs about the server
/// (versions, databases, in-memory indexes, the caller's own request and error
/// counts since start), and nothing about its users: no query text, no ids asked
/// for, no uids, no other user's counts.
struct DiagnosticsReport {
    let selection: ActiveDatabaseProvider.Selection
    let statistics: ServiceStatistics
    /// The caller: the counts shown are theirs.
    let uid: UInt32
    let serverVersion: String

    var text: String {
        let database = selection.database
        var lines = [
            "STOL taxonomy diagnostics",
            "generated:          \(ISO8601DateFormatter().string(from: Date()))",
            "server version:     stol-taxonomyd \(serverVersion), protocol stol.v1",
            "uptime:             \(Int(Date().timeIntervalSince(statistics.started))) s",
            "",
            "active database:    \(database.kind == .reference ? "reference" : "bundled") (\(database.path))",
            "  schema version:   \(database.schemaVersion)",
            "  fingerprint:      \(database.fingerprint)",
            "  size:             \(database.sizeBytes) bytes",
            "  taxa:             \(database.taxaCount) (species \(database.speciesCount))",
            "  names:            \(database.namesCount)",
            "  top-N relatives:  \(database.precomputedRelatives) per species",
        ]
        if let indexes = database.memoryIndexes {
            lines.append("  in-memory tree:   " + (indexes.tree.map { "\($0.count) taxa" } ?? "unavailable (\(indexes.treeProblem ?? "?"))"))
            lines.append("  search indexes:   \(indexes.vocabulary.count) fuzzy words, \(indexes.nameWords.count) name words")
            lines.append("  whole tree:       " + (indexes.wholeTree.map { "\($0.count) nodes" }
                                                   ?? (indexes.tree == nil ? "unavailable" : "none (main ranks only)")))
            if let source = database.treeSource { lines.append("  tree read from:   " + Self.describe(source, of: database.path)) }
        } else {
            lines.append("  in-memory tree:   still loading")
        }
        lines.append("reference database: \(selection.referencePresent ? "installed" : "not installed"), "
                     + "activation \(selection.referenceRequested ? "requested" : "not requested")")
        if let reason = selection.fallbackReason { lines.append("fallback:           \(reason)") }
        lines.append("")
        lines.append("your requests since start:")
        let requests = statistics.requests(of: uid)
        if requests.isEmpty { lines.append("  none") }
        for (operation, count) in requests.sorted(by: { $0.key < $1.key }) { lines.append("  \(operation): \(count)") }
        lines.append("your error answers since start:")
        let errors = statistics.errors(of: uid)
        if errors.isEmpty { lines.append("  none") }
        for (code, count) in errors.sorted(by: { $0.key < $1.key }) { lines.append("  \(code): \(count)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Where the tree came from at this start: what an operator checks when a start is slow.
    static func describe(_ source: MemoryIndexes.TreeSource, of databasePath: String) -> String {
        switch source {
        case .image: "its image in the server's cache"
        case .shippedImage: "its image beside the database (\(ShippedTreeImage.path(forDatabase: databasePath)))"
        case .rows(imageMiss: nil), .rows(imageMiss: .absent?): "the database's rows (no image yet)"
        case .rows(imageMiss: .refused(let reason)?): "the database's rows (an image was refused: \(reason))"
        case .none: "nowhere (no tree)"
        }
    }
}
