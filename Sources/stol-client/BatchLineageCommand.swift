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
            Each input line is a taxon id or an exact scientific or common name. The TSV starts with a \
            `#` line naming the release that answers the whole batch (with JSON lines that line goes to \
            standard error; --no-header leaves it out).
            Output, one line per input:
              TSV:   query, id, rank, scientific name, lineage (root first, `;`-separated, the taxon last):
                     names, or ids with --ids
                     or: query, then the error code (NOT_FOUND, INVALID_REQUEST) and the message
              --jsonl (or --json): the LineageResult message as one JSON object per line, the lineage
                     as Taxon objects (root first, the taxon itself in `taxon`)
            With --ranks all the lineage is NCBI's own (every node, e.g. root;cellular organisms;Eukaryota; \
            Opisthokonta;Metazoa;…) and the rank column is NCBI's rank (no rank, clade, …).
            A name that fits several taxa is INVALID_REQUEST listing their ids, never a silent pick.
            Exit code 0 when every query was found, 3 when some were not.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Flag(help: "One JSON object per line instead of TSV.") var jsonl = false
    @Flag(help: "The lineage column as ids instead of names.") var ids = false
    @OptionGroup var header: BatchHeaderOption
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
            let client = try global.batchTaxonomy()
            let json = jsonl || global.json
            // JSON prints the taxa form's LineageResult. On NCBI's whole tree the compact form
            // carries all of it (WholeTreeLineageJSON): half of the server's work and a third
            // of the bytes to read. The eight ranks' taxa form has more (common names,
            // authors, IUCN status), so it is asked for there.
            let wholeTree = ranks.ranks == .all
            let form: Stol_V1_LineageForm = json ? (wholeTree ? .compact : .taxa) : ids ? .ids : .compact
            let template = try format.map { text throws(ClientError) in
                do { return try LineageFormat(text) } catch { throw .usage("--format: \(error)") }
            }
            let output = BufferedOutput()
            header.write(to: output, json: json)
            let tsv = LineageTSV(ids: ids, template: template)
            var wholeTreeJSON = WholeTreeLineageJSON(mainRank: LineageTSV.mainRank)
            var index = LineageBatchIndex()
            let next = { () throws(ClientError) -> Stol_V1_TaxonomyRequest? in
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
            }
            func noteMerged(_ old: Int64, into new: Int64) {
                let note = "note: taxon \(old) was merged into \(new) by NCBI; its line answers for \(new)\n"
                FileHandle.standardError.write(Data(note.utf8))
            }
            /// A result swift-protobuf decoded.
            func show(_ result: Stol_V1_LineageResult) {
                if result.hasError { missing = true }
                if result.mergedFrom != 0 { noteMerged(result.mergedFrom, into: result.taxon.id) }
                if json {
                    if wholeTree {
                        output.line { wholeTreeJSON.append(result, to: &$0) }
                    } else {
                        output.line { ProtobufJSONWriter.append(result, to: &$0) }
                    }
                } else {
                    output.line(tsv.line(result))
                }
            }
            func decodedBatch(_ response: Stol_V1_TaxonomyResponse) throws(ClientError) {
                guard case .lineageBatch(let answer) = response.result else { throw .local("unexpected answer") }
                answer.results.forEach(show)
            }
            if form == .taxa {
                try client.pipeline(next: next, onAnswer: decodedBatch)
            } else {
                // The compact and ids forms are read in place (LineageBatchIndex): no String per
                // name, half of the client's time. What that reader leaves (an error, an answer
                // it cannot read) is decoded by swift-protobuf as before.
                try client.pipeline(next: next, rawResult: Self.lineageBatchField) { (response, raw) throws(ClientError) in
                    guard let raw else { return try decodedBatch(response) }
                    do {
                        try raw.bytes.withUnsafeBufferPointer { bytes in
                            do {
                                try index.read(bytes, raw.value)
                            } catch {
                                let batch = try Stol_V1_LineageBatchResponse(serializedBytes: Array(bytes[raw.value]))
                                batch.results.forEach(show)
                                return
                            }
                            for result in index.results {
                                guard result.plain, let taxon = result.taxon else {
                                    show(try LineageBatchIndex.decode(result, in: bytes))
                                    continue
                                }
                                if result.mergedFrom != 0 { noteMerged(result.mergedFrom, into: taxon.id) }
                                if json {
                                    try output.line { try wholeTreeJSON.append(result, of: index, in: bytes, to: &$0) }
                                } else {
                                    try output.line { try tsv.append(result, of: index, in: bytes, to: &$0) }
                                }
                            }
                        }
                    } catch {
                        throw .local("the taxonomy service's lineage batch answer cannot be read: \(error)")
                    }
                }
            }
            output.flush()
        }
        if missing { throw ExitCode(ClientError.ExitCode.notFound.rawValue) }
    }

    /// `TaxonomyResponse.lineage_batch` (protocol/taxonomy.proto).
    static let lineageBatchField = 24
}
