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
            standard error; --no-header leaves it out), then with --column-names a line naming the columns.
            Output, one line per input line, in order (`paste` lines it up with the input):
              TSV:   query, id, rank, scientific name, lineage (root first, `;`-separated,
                     the taxon last: names, or ids with --ids)
                     or: query, the error code (NOT_FOUND, INVALID_REQUEST), the message
                     a blank line: an empty line; a `#` comment line: copied as it is
                     Kraken's 0 (unclassified, not looked up): 0, 0, no rank,
                     unclassified, an empty lineage
              --jsonl (or --json): the LineageResult message as one JSON object per
                     line, the lineage as Taxon objects (root first, the taxon in `taxon`)
                     a blank line: {"query":"","skipped":"blank"}
                     a comment: {"query":"# …","skipped":"comment"}
                     0: {"query":"0","taxon":{"id":0,"scientific_name":"unclassified",…}}
            With --ranks all the lineage is NCBI's own (every node, e.g. root;cellular organisms;Eukaryota; \
            Opisthokonta;Metazoa;…) and the rank column is NCBI's rank (no rank, clade, …).
            --format writes the lineage column in a taxonkit-style template instead (--keep-lineage: the \
            lineage stays and the template is a last column, both in one pass). A placeholder is a rank's \
            letter or name: {k} or {domain} (NCBI's superkingdom before 2025, domain since, and the acellular \
            root Viruses), {K} kingdom, {p} phylum, {c} class, {o} order, {f} family, {g} genus, {s} species, \
            {S} subspecies, {t} strain, {r} realm. A rank the lineage lacks is empty, or with --fill-missing \
            the fill template's text: {higher} the name of the nearest rank above it in the lineage, \
            {higher_rank} that rank, {rank} the missing one (default "unclassified {higher} {rank}", e.g. \
            unclassified Felidae genus; a fill naming {higher} stays empty when nothing is above). \
            --prefix-ranks starts every non-empty field with its rank's prefix: d__ domain, k__ kingdom, \
            p__, c__, o__, f__, g__, s__, t__ subspecies, T__ strain, r__ realm. With --ids every placeholder \
            takes its taxon's id instead of its name (taxonkit reformat -t: `{g}` of 9606 is 9605), and a rank \
            the lineage lacks is empty.
            A name that fits several taxa is INVALID_REQUEST listing their ids, never a silent pick.
            Exit code 0 when every query was found, 3 when some were not (blank lines, comments and 0 count as found).
            --column N reads the query from the Nth tab-separated column and puts the whole input line in \
            place of the query column (taxonkit's -i): `stol-client lineage --column 3 < kraken.out` \
            keeps Kraken's columns and adds id, rank, name and lineage. A line without that column, a \
            blank line and a `#` line are copied as they are.
            Examples:
              stol-client lineage --column 3 --no-header < kraken.out
              stol-client lineage --format "{k};{p};{c};{o};{f};{g};{s}" \\
                --fill-missing --prefix-ranks < ids.txt
              stol-client lineage --ranks all --column-names \\
                --format "{k};{p};{c};{o};{f};{g};{s}" --keep-lineage < ids.txt
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Flag(help: "One JSON object per line instead of TSV.") var jsonl = false
    @Flag(help: "The lineage column as ids instead of names.") var ids = false
    @OptionGroup var header: BatchHeaderOption
    @OptionGroup var column: ColumnOption
    @Flag(help: ArgumentHelp("A first line naming the columns (query, id, rank, name, lineage or format), after the `#` line."))
    var columnNames = false
    @Option(help: ArgumentHelp("The lineage column in a taxonkit-style template instead, e.g. \"{k};{p};{c};{o};{f};{g};{s}\" "
                               + "({k} or {domain} superkingdom/domain, {K} kingdom, {p} {c} {o} {f} {g} {s}, {S} subspecies, "
                               + "{t} strain, {r} realm; a missing rank is empty).", valueName: "TEMPLATE"))
    var format: String?
    @Flag(help: ArgumentHelp("With --format: keep the lineage column and add the filled template as a last column."))
    var keepLineage = false
    @Flag(help: ArgumentHelp("With --format: a missing rank is written as the fill template says (default "
                             + "\"unclassified {higher} {rank}\", e.g. unclassified Felidae genus)."))
    var fillMissing = false
    @Option(help: ArgumentHelp("The text of a missing rank ({higher}: the nearest rank above it that the lineage has, "
                               + "{higher_rank}: that rank, {rank}: the missing one); implies --fill-missing.",
                               valueName: "TEMPLATE"))
    var fillTemplate: String?
    @Flag(help: ArgumentHelp("With --format: every non-empty field starts with its rank's prefix (d__ domain, k__ kingdom, "
                             + "p__, c__, o__, f__, g__, s__, t__ subspecies, T__ strain, r__ realm)."))
    var prefixRanks = false

    /// The template of --format with its options, as the server takes it (nil without
    /// --format). The server checks and fills it (`lineage_batch`'s `template`): every
    /// client writes a lineage the same way.
    var template: Stol_V1_LineageTemplate? {
        guard let format else { return nil }
        return .with {
            $0.format = format
            // An empty --fill-template is an empty field: no fill (the server's empty
            // fill is its default, "unclassified {higher} {rank}").
            $0.fillMissing = fillTemplate.map { !$0.isEmpty } ?? fillMissing
            $0.fill = fillTemplate ?? ""
            $0.prefixRanks = prefixRanks
            $0.ids = ids
        }
    }

    func validate() throws {
        if format != nil {
            guard !jsonl, !global.json else {
                throw ValidationError("--format writes TSV; it goes without --jsonl and --json")
            }
            if ids && (fillMissing || fillTemplate != nil) {
                throw ValidationError("--fill-missing and --fill-template write names; with --ids a missing rank is empty")
            }
        } else if keepLineage || fillMissing || fillTemplate != nil || prefixRanks {
            throw ValidationError("--keep-lineage, --fill-missing, --fill-template and --prefix-ranks go with --format")
        }
        if columnNames && (jsonl || global.json) { throw ValidationError("--column-names is for TSV; JSON lines name their fields") }
    }

    /// The template checked by the server before any input is read (a request without
    /// queries), and its `unclassified` text for Kraken's 0. A template it refuses is a
    /// usage error (exit 64), naming the field and placeholder as the server does.
    func checked(_ template: Stol_V1_LineageTemplate, _ client: TaxonomyClient) throws(ClientError) -> String {
        do throws(ClientError) {
            let answer = try client.ask(.with {
                $0.lineageBatch = .with {
                    $0.ranks = ranks.ranks.wire
                    $0.template = template
                }
            }, as: Stol_V1_LineageBatchResponse.self)
            return answer.unclassified
        } catch .server(let error) where error.code == .invalidRequest && error.details["field"] != nil {
            throw .usage("--format: \(error.message)")
        }
    }

    @Option(help: "Queries per request (1–1000).") var batchSize: Int = 1000

    func run() throws {
        var status = BatchStatus()
        try global.run { () throws(ClientError) in
            guard (1...1000).contains(batchSize) else { throw .usage("--batch-size must be 1…1000") }
            let client = try global.batchTaxonomy()
            let json = jsonl || global.json
            // JSON prints the taxa form's LineageResult. On NCBI's whole tree the compact form
            // carries all of it (WholeTreeLineageJSON): half of the server's work and a third
            // of the bytes to read. The eight ranks' taxa form has more (common names,
            // authors, IUCN status), so it is asked for there.
            let wholeTree = ranks.ranks == .all
            let template = self.template
            let unclassified = try template.map { (template) throws(ClientError) in try checked(template, client) }
            // A template without the lineage column needs no names from the server: the ids
            // form carries the taxon and the filled text.
            // Ids alone, no template: the packed form (every lineage in one array, each taxon once).
            let form: Stol_V1_LineageForm = json ? (wholeTree ? .compact : .taxa)
                : ids && template == nil ? .packed
                : ids || (template != nil && !keepLineage) ? .ids : .compact
            let output = BatchOutput()
            let columns = try column.columns(for: output, json: json)
            header.write(to: output, json: json)
            let tsv = LineageTSV(ids: ids, unclassified: unclassified, keepLineage: keepLineage)
            if columnNames { output.line(tsv.columnNames) }
            var wholeTreeJSON = WholeTreeLineageJSON(mainRank: LineageTSV.mainRank)
            var index = LineageBatchIndex()
            let reader = LineReader()
            func noteMerged(_ old: Int64, into new: Int64) {
                let note = "note: taxon \(old) was merged into \(new) by NCBI; its line answers for \(new)\n"
                FileHandle.standardError.write(Data(note.utf8))
            }
            /// A result swift-protobuf decoded.
            func show(_ result: Stol_V1_LineageResult) {
                if result.hasError { status.lineFailed() }
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
            /// A line answered without the server: one output line per input line.
            func local(_ line: LineageInputLine.Local) {
                if case .refused(let result) = line { return show(result) }
                if json {
                    output.line { LineageInputLine.appendJSON(line, to: &$0) }
                } else {
                    output.line(LineageInputLine.tsv(line, tsv))
                }
            }
            typealias Batch = BatchQueue<String, LineageInputLine.Local>.Batch
            func decoded(_ results: [Stol_V1_LineageResult], _ batch: Batch) throws(ClientError) {
                try batch.expect(results: results.count)
                batch.walk(answer: { show(results[$0]) }, local: local)
            }
            try client.runBatches(
                maximumQueries: batchSize,
                input: { () throws(ClientError) -> BatchEntry<String, LineageInputLine.Local>? in
                    while let line = try reader.nextLine() {
                        guard let text = columns.map({ $0.query(of: line) }) ?? line else { continue }
                        switch LineageInputLine(text) {
                        case .query(let query): return .query(query, line: reader.lineNumber)
                        case .local(let local): return .local(local)
                        }
                    }
                    return nil
                },
                bytes: { ProtobufSize.string(field: Self.queriesField, $0) },
                request: { queries in
                    .with {
                        $0.lineageBatch = .with {
                            $0.queries = queries
                            $0.language = language.language
                            $0.ranks = ranks.ranks.wire
                            $0.form = form
                            if let template { $0.template = template }
                        }
                    }
                },
                // The compact and ids forms are read in place (LineageBatchIndex): no String per
                // name, half of the client's time. What that reader leaves (an error, an answer
                // it cannot read) is decoded by swift-protobuf as before.
                rawResult: form == .taxa || form == .packed ? nil : Self.lineageBatchField,
                output: output,
                refuse: { .refused(LineageInputLine.refusedResult($0, $1)) },
                local: local,
                answer: { (response, raw, batch) throws(ClientError) in
                    guard let raw else {
                        guard case .lineageBatch(let answer) = response.result else { throw .local("unexpected answer") }
                        guard form == .packed, answer.results.isEmpty else { return try decoded(answer.results, batch) }
                        let packed: PackedLineages
                        do {
                            packed = try PackedLineages(answer, queries: batch.queries.count)
                        } catch {
                            throw .local("the taxonomy service's lineage batch answer cannot be read: \(error)")
                        }
                        return batch.walk(answer: { position in
                            let query = batch.queries[position]
                            guard let taxon = packed.taxon(position) else { return show(packed.failure(position, query: query)) }
                            let merged = packed.mergedFrom(position)
                            if merged != 0 { noteMerged(merged, into: taxon.id) }
                            output.line { tsv.append(query: query, taxon: taxon, ids: packed.ids(position), to: &$0) }
                        }, local: local)
                    }
                    let read = raw.bytes.withUnsafeBufferPointer { bytes in (try? index.read(bytes, raw.value)) != nil }
                    if !read {
                        let answer: Stol_V1_LineageBatchResponse
                        do {
                            answer = try Stol_V1_LineageBatchResponse(serializedBytes: Array(raw.bytes[raw.value]))
                        } catch {
                            throw .local("the taxonomy service's lineage batch answer cannot be read: \(error)")
                        }
                        return try decoded(answer.results, batch)
                    }
                    try batch.expect(results: index.results.count)
                    do {
                        try raw.bytes.withUnsafeBufferPointer { bytes in
                            try batch.walk(answer: { position in
                                let result = index.results[position]
                                guard result.plain, let taxon = result.taxon else {
                                    show(try LineageBatchIndex.decode(result, in: bytes))
                                    return
                                }
                                if result.mergedFrom != 0 { noteMerged(result.mergedFrom, into: taxon.id) }
                                if json {
                                    try output.line { try wholeTreeJSON.append(result, of: index, in: bytes, to: &$0) }
                                } else {
                                    try output.line { try tsv.append(result, of: index, in: bytes, to: &$0) }
                                }
                            }, local: local)
                        }
                    } catch {
                        throw .local("the taxonomy service's lineage batch answer cannot be read: \(error)")
                    }
                })
            try output.finish()
        }
        if status.failed { throw ExitCode(status.code.rawValue) }
    }

    /// `LineageBatchRequest.queries` (protocol/taxonomy.proto).
    static let queriesField = 1
    /// `TaxonomyResponse.lineage_batch` (protocol/taxonomy.proto).
    static let lineageBatchField = 24
}
