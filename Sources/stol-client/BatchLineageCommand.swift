import ArgumentParser
import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol

/// `stol-client lineage`: lineages for many ids or names read from standard
/// input, one result line per input line, in order — for pipelines of
/// thousands of queries (1000 per request, several requests in flight).
struct Lineage: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lineages of ids or exact names read from stdin (one per line): TSV, or JSON lines with --jsonl.",
        discussion: """
            Each input line is a taxon id or an exact scientific or common name. Output, one line per input:
              TSV:   query, id, rank, scientific name, lineage (root first, `;`-separated, the taxon last):
                     names, or ids with --ids
                     or: query, then the error code (NOT_FOUND, INVALID_REQUEST) and the message
              --jsonl: the LineageResult message as one JSON object per line
            With --ranks all the lineage is NCBI's own (every node, e.g. root;cellular organisms;Eukaryota;
            Opisthokonta;Metazoa;…) and the rank column is NCBI's rank (no rank, clade, …).
            A name that fits several taxa is INVALID_REQUEST listing their ids, never a silent pick.
            Exit code 0 when every query was found, 3 when some were not.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Flag(help: "One JSON object per line instead of TSV.") var jsonl = false
    @Flag(help: "The lineage column as ids instead of names.") var ids = false
    @Option(help: ArgumentHelp("The lineage column in a taxonkit-style template instead, e.g. \"{k};{p};{c};{o};{f};{g};{s}\" "
                               + "({k} superkingdom/domain, {K} kingdom, {p} {c} {o} {f} {g} {s}, {S} subspecies, {t} strain, "
                               + "{r} realm; a missing rank is empty).", valueName: "TEMPLATE"))
    var format: String?

    func validate() throws {
        if let format {
            do { _ = try LineageFormat(format) } catch { throw ValidationError("--format: \(error)") }
            guard !ids, !jsonl else { throw ValidationError("--format writes names; it goes without --ids and --jsonl") }
        }
    }
    @Option(help: "Queries per request (1–1000).") var batchSize: Int = 1000

    func run() throws {
        var missing = false
        try global.run { () throws(ClientError) in
            guard (1...1000).contains(batchSize) else { throw .usage("--batch-size must be 1…1000") }
            let client = global.taxonomy()
            let json = jsonl || global.json
            let form: Stol_V1_LineageForm = json ? .taxa : ids ? .ids : .compact
            let template = try format.map { text throws(ClientError) in
                do { return try LineageFormat(text) } catch { throw .usage("--format: \(error)") }
            }
            let output = BufferedOutput()
            try client.pipeline(next: { () throws(ClientError) -> Stol_V1_TaxonomyRequest? in
                var pending: [String] = []
                while pending.count < batchSize, let line = readLine() {
                    let query = line.trimmingBlanks
                    if !query.isEmpty { pending.append(query) }
                }
                guard !pending.isEmpty else { return nil }
                var request = Stol_V1_TaxonomyRequest()
                request.lineageBatch = .with {
                    $0.queries = pending
                    $0.language = language.language
                    $0.ranks = ranks.ranks.wire
                    $0.form = form
                }
                return request
            }, onAnswer: { (response) throws(ClientError) in
                guard case .lineageBatch(let answer) = response.result else { throw .local("unexpected answer") }
                for result in answer.results {
                    if result.hasError { missing = true }
                    if result.mergedFrom != 0 {
                        let note = "note: taxon \(result.mergedFrom) was merged into \(result.taxon.id) by NCBI; its line answers for \(result.taxon.id)\n"
                        FileHandle.standardError.write(Data(note.utf8))
                    }
                    output.line(json ? TextFormatter.json(result) : Self.tsv(result, ids: ids, template: template))
                }
            })
            output.flush()
        }
        if missing { throw ExitCode(ClientError.ExitCode.notFound.rawValue) }
    }

    static func tsv(_ result: Stol_V1_LineageResult, ids: Bool, template: LineageFormat? = nil) -> String {
        if result.hasError { return "\(result.query)\t\(result.error.code.name)\t\(result.error.message)" }
        let taxon = result.taxon
        let rank = taxon.sourceRank.isEmpty ? TextFormatter.rankName(taxon.rank) : taxon.sourceRank
        if let template {
            let lineage = Array(zip(result.lineageRanks, result.lineageNames)) + [(rank, taxon.scientificName)]
            return [result.query, String(taxon.id), rank, taxon.scientificName,
                    template.format(lineage.map { (rank: $0.0, name: $0.1) })].joined(separator: "\t")
        }
        let lineage = ids ? (result.lineageIds + [taxon.id]).map(String.init)
            : result.lineageNames.isEmpty && !result.lineage.isEmpty ? (result.lineage + [taxon]).map(\.scientificName)
            : result.lineageNames + [taxon.scientificName]
        return [result.query, String(taxon.id), rank, taxon.scientificName, lineage.joined(separator: ";")]
            .joined(separator: "\t")
    }
}
