import ArgumentParser
import Foundation
import STOLClientKit
import STOLProtocol

/// `stol-client lineage`: lineages for many ids or names read from standard
/// input, one result line per input line, in order — for pipelines of
/// thousands of queries (sent in batches of 1000 per round trip).
struct Lineage: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lineages of ids or exact names read from stdin (one per line): TSV, or JSON lines with --jsonl.",
        discussion: """
            Each input line is a taxon id or an exact scientific or common name. Output, one line per input:
              TSV:   query, id, rank, scientific name, lineage (root first, `;`-separated, the taxon last)
                     or: query, then `NOT_FOUND`/`INVALID_REQUEST` and the message
              --jsonl: the LineageResult message as one JSON object per line
            Exit code 0 when every query was found, 3 when some were not.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @Flag(help: "One JSON object per line instead of TSV.") var jsonl = false
    @Option(help: "Queries per request (1–1000).") var batchSize: Int = 1000

    func run() throws {
        var missing = false
        try global.run { () throws(ClientError) in
            guard (1...1000).contains(batchSize) else { throw .usage("--batch-size must be 1…1000") }
            let client = global.taxonomy()
            var pending: [String] = []
            func flush() throws(ClientError) {
                guard !pending.isEmpty else { return }
                var batch = Stol_V1_LineageBatchRequest()
                batch.queries = pending
                batch.language = language.language
                var request = Stol_V1_TaxonomyRequest()
                request.lineageBatch = batch
                guard case .lineageBatch(let answer) = try client.call(request).result else { throw .local("unexpected answer") }
                var output = ""
                for result in answer.results {
                    if result.hasError { missing = true }
                    output += (jsonl || global.json ? TextFormatter.json(result) : Self.tsv(result)) + "\n"
                }
                FileHandle.standardOutput.write(Data(output.utf8))
                pending.removeAll(keepingCapacity: true)
            }
            while let line = readLine() {
                let query = line.trimmingCharacters(in: .whitespaces)
                if query.isEmpty { continue }
                pending.append(query)
                if pending.count >= batchSize { try flush() }
            }
            try flush()
        }
        if missing { throw ExitCode(ClientError.ExitCode.notFound.rawValue) }
    }

    static func tsv(_ result: Stol_V1_LineageResult) -> String {
        if result.hasError { return "\(result.query)\t\(result.error.code.name)\t\(result.error.message)" }
        let taxon = result.taxon
        return [result.query, String(taxon.id), TextFormatter.rankName(taxon.rank), taxon.scientificName,
                (result.lineage + [taxon]).map(\.scientificName).joined(separator: ";")].joined(separator: "\t")
    }
}
