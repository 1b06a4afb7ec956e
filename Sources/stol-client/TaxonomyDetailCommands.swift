import ArgumentParser
import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol

// MARK: - Detail, compare, relatives, diagnostics

struct Detail: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show everything about a taxon: names by language, synonyms, traits, references, lineage.",
        discussion: """
            Parent and children are shown in both trees, each labelled, as `taxon` shows them. The lineage \
            is the eight-rank view's; --ranks all shows the source's every ancestor instead (NCBI's \
            subgenus, tribe, clade …) and the source's rank.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Argument(help: "Taxon id (e.g. 9689 for Panthera leo; a name: use search).", transform: TaxonIDArgument.parse) var id: Int64

    func run() throws {
        try global.run { () throws(ClientError) in
            var detail = Stol_V1_TaxonDetailRequest()
            detail.taxonID = id
            detail.language = language.language
            detail.ranks = ranks.ranks.wire
            var request = Stol_V1_TaxonomyRequest()
            request.detail = detail
            let answer = try global.taxonomy().ask(request, as: Stol_V1_TaxonDetail.self)
            global.show(answer, TextFormatter.detail)
        }
    }
}

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare two taxa: common ancestor, paths, distance, shared clade, trait similarity; or many pairs with --batch.",
        discussion: """
            With --batch, pairs are read from stdin, one per line: two ids or exact names separated by a tab \
            (or, for ids, by spaces). The TSV starts with a `#` line naming the release that answers \
            the whole batch (--no-header leaves it out). Output, one line per pair:
              TSV:   a, b, common ancestor id, its rank, its name, distance on the main ranks, distance on
                     NCBI's tree (edges; empty when the database keeps only the main ranks)
                     or: a, b, the error code (NOT_FOUND, INVALID_REQUEST) and the message;
                     or: a, b, UNRELATED (a database of the main ranks only: different roots)
              --jsonl: the CompareBatchResult message as one JSON object per line
            Each pair is answered as `compare A B` answers it. With --ranks all the common ancestor is \
            NCBI's own (e.g. 131567 cellular organisms); with the default --ranks main it is the deepest \
            taxon of both main-rank lineages (NCBI's own when they share none, above every domain). The \
            distance on the main ranks counts the taxa of a main rank below it: a subspecies and its \
            species are 0 apart. --column N reads the pair from the Nth and the next tab-separated columns \
            and puts the whole input line in place of a and b (taxonkit's -i); a line without them is \
            copied as it is. Exit code 0 when every pair was answered, 3 when some taxon was not found.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Flag(help: "Read pairs from stdin (see below) and answer them all, many per request.") var batch = false
    @Flag(help: "With --batch: one JSON object per line instead of TSV.") var jsonl = false
    @OptionGroup var header: BatchHeaderOption
    @OptionGroup var column: ColumnOption
    @Argument(help: "First taxon id.") var a: Int64?
    @Argument(help: "Second taxon id.") var b: Int64?

    func validate() throws {
        if batch {
            guard a == nil, b == nil else { throw ValidationError("--batch reads the pairs from stdin; give no ids") }
        } else {
            guard a != nil, b != nil else { throw ValidationError("give two taxon ids, or --batch") }
            if column.column != nil { throw ValidationError("--column goes with --batch") }
        }
    }

    func run() throws {
        if batch { return try runBatch() }
        try global.run { () throws(ClientError) in
            var compare = Stol_V1_CompareRequest()
            compare.taxonA = a!
            compare.taxonB = b!
            compare.language = language.language
            compare.ranks = ranks.ranks.wire
            var request = Stol_V1_TaxonomyRequest()
            request.compare = compare
            let answer = try global.taxonomy().ask(request, as: Stol_V1_CompareResponse.self)
            global.show(answer, TextFormatter.compare)
        }
    }

    private func runBatch() throws {
        var status = BatchStatus()
        try global.run { () throws(ClientError) in
            let json = jsonl || global.json
            let output = BatchOutput()
            let client = try global.batchTaxonomy()
            let columns = try column.columns(for: output, width: 2, echoed: 2, json: json)
            header.write(to: output, json: json)
            func show(_ result: Stol_V1_CompareBatchResult) {
                if result.hasError { status.lineFailed() }
                if json {
                    output.line { ProtobufJSONWriter.append(result, to: &$0) }
                } else {
                    output.line(Self.tsv(result))
                }
            }
            let reader = LineReader()
            try client.runBatches(
                maximumQueries: 1000,
                input: { () throws(ClientError) -> BatchEntry<Stol_V1_TaxonPair, Stol_V1_CompareBatchResult>? in
                    while let line = try reader.nextLine() {
                        guard let line = columns.map({ $0.query(of: line) }) ?? line, !line.trimmingBlanks.isEmpty else { continue }
                        guard let pair = Self.pair(line) else {
                            throw .usage("cannot read a pair from the line '\(line)': give two ids or names separated by a tab")
                        }
                        return .query(pair, line: reader.lineNumber)
                    }
                    return nil
                },
                bytes: { pair in
                    ProtobufSize.lengthDelimited(field: 1, length: ProtobufSize.string(field: 1, pair.a)
                                                 + ProtobufSize.string(field: 2, pair.b))
                },
                request: { pairs in .with { $0.compareBatch = .with { $0.pairs = pairs; $0.ranks = ranks.ranks.wire } } },
                output: output,
                refuse: { (pair, refusal) in
                    .with {
                        $0.a = pair.a
                        $0.b = pair.b
                        $0.error = .with { $0.code = .invalidRequest; $0.message = refusal.description }
                    }
                },
                local: show,
                answer: { (response, _, batch) throws(ClientError) in
                    guard case .compareBatch(let answer) = response.result else { throw .local("unexpected answer") }
                    try batch.expect(results: answer.results.count)
                    batch.walk(answer: { show(answer.results[$0]) }, local: show)
                })
            try output.finish()
        }
        if status.failed { throw ExitCode(status.code.rawValue) }
    }

    /// Two fields: tab-separated (names may hold spaces), else two whitespace-separated words.
    static func pair(_ line: String) -> Stol_V1_TaxonPair? {
        var fields = line.split(separator: "\t", omittingEmptySubsequences: true)
            .map { String($0).trimmingBlanks }.filter { !$0.isEmpty }
        if fields.count == 1 { fields = line.split(whereSeparator: \.isWhitespace).map(String.init) }
        guard fields.count == 2 else { return nil }
        return .with { $0.a = fields[0]; $0.b = fields[1] }
    }

    static func tsv(_ result: Stol_V1_CompareBatchResult) -> String {
        if result.hasError { return "\(result.a)\t\(result.b)\t\(result.error.code.name)\t\(result.error.message)" }
        if result.unrelated { return "\(result.a)\t\(result.b)\tUNRELATED" }
        return [result.a, result.b, String(result.lcaID), result.lcaRank, result.lcaName, String(result.distanceMain),
                result.hasDistanceAll ? String(result.distanceAll) : ""].joined(separator: "\t")
    }
}

/// `stol-client name2id`: every taxon each name (one per line on stdin) belongs to.
struct NameToIDs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "name2id",
        abstract: "Ids of the taxa each name read from stdin belongs to, all of them when there are several.",
        discussion: """
            Each input line is a name: a scientific name matched exactly (then with its first letter \
            capitalised) among all taxa of the database (NCBI's whole tree when it has it), else a common \
            name or synonym. The TSV starts with a `#` line naming the release that answers the whole \
            batch (--no-header leaves it out). Output, one line per name:
              TSV:   name, ids (ascending, comma-separated), unique or ambiguous, ranks (comma-separated)
                     or: name, NOT_FOUND, the message
              --jsonl: the NameLookupResult message as one JSON object per line: also how it matched \
            (kind: exact, capitalised, common), a confidence (0–100), several_kingdoms when the taxa lie \
            under more than one kingdom (Bacteria: a domain and a stick insect genus), and with --within \
            the taxa elsewhere (outside_ids)
            --within TAXON (an id or exact name) keeps only the taxa under it: `echo Bacteria | \
            stol-client name2id --within Insecta` gives the stick insect genus. A name with no taxon \
            under it is NOT_FOUND, saying how many there are elsewhere.
            --column N reads the name from the Nth tab-separated column and puts the whole input line in \
            place of the name column (taxonkit's -i); a line without that column is copied as it is.
            Exit code 0 when every name was found, 3 when some were not.
            """)
    @OptionGroup var global: GlobalOptions
    @Flag(help: "One JSON object per line instead of TSV.") var jsonl = false
    @Option(help: ArgumentHelp("Only taxa under this one (an id or exact name), to tell homonyms apart.", valueName: "TAXON"))
    var within: String?
    @OptionGroup var header: BatchHeaderOption
    @OptionGroup var column: ColumnOption

    func run() throws {
        var status = BatchStatus()
        try global.run { () throws(ClientError) in
            let json = jsonl || global.json
            let output = BatchOutput()
            let client = try global.batchTaxonomy()
            let columns = try column.columns(for: output, json: json)
            header.write(to: output, json: json)
            func show(_ result: Stol_V1_NameLookupResult) {
                if result.hasError {
                    status.lineFailed()
                    output.line(json ? TextFormatter.json(result) : "\(result.name)\t\(result.error.code.name)\t\(result.error.message)")
                } else {
                    output.line(json ? TextFormatter.json(result) : [
                        result.name, result.ids.map(String.init).joined(separator: ","),
                        result.ids.count > 1 ? "ambiguous" : "unique", result.ranks.joined(separator: ","),
                    ].joined(separator: "\t"))
                }
            }
            let reader = LineReader()
            try client.runBatches(
                maximumQueries: 1000,
                input: { () throws(ClientError) -> BatchEntry<String, Stol_V1_NameLookupResult>? in
                    while let line = try reader.nextLine() {
                        guard let name = columns.map({ $0.query(of: line) }) ?? line.trimmingBlanks else { continue }
                        if !name.isEmpty { return .query(name, line: reader.lineNumber) }
                    }
                    return nil
                },
                bytes: { ProtobufSize.string(field: 1, $0) },
                request: { names in .with { $0.nameLookup = .with { $0.names = names; $0.within = within ?? "" } } },
                output: output,
                refuse: { (name, refusal) in
                    .with {
                        $0.name = name
                        $0.error = .with { $0.code = .invalidRequest; $0.message = refusal.description }
                    }
                },
                local: show,
                answer: { (response, _, batch) throws(ClientError) in
                    guard case .nameLookup(let answer) = response.result else { throw .local("unexpected answer") }
                    try batch.expect(results: answer.results.count)
                    batch.walk(answer: { show(answer.results[$0]) }, local: show)
                })
            try output.finish()
        }
        if status.failed { throw ExitCode(status.code.rawValue) }
    }
}

struct Relatives: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the closest species to a species (by taxonomic distance, then name; --ranks all: NCBI's edges).",
        discussion: """
            A strain, subspecies or other node below a species is answered for its species \
            (`relatives 83333`: the closest species of Escherichia coli, named as the answer's taxon).
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var language: LanguageOption
    @OptionGroup var ranks: RanksOption
    @Argument(help: "Species id.") var id: Int64
    @Option(name: .shortAndLong, help: "How many (1–100; more is refused by the server, exit 6).") var n: UInt32 = 10
    @Flag(help: "Compute on demand even when the precomputed table could answer.") var computed = false
    @Option(help: "Guard of the computed mode: nodes examined at most (default: 1,000,000); the answer then says it may be incomplete.") var maxCandidates: UInt32?

    func run() throws {
        try global.run { () throws(ClientError) in
            // Out of range above is the server's INVALID_REQUEST (exit 6, as the README says); 0 would mean its default.
            guard n >= 1 else { throw .usage("-n must be at least 1") }
            var relatives = Stol_V1_RelativesRequest()
            relatives.taxonID = id
            relatives.n = n
            relatives.computed = computed
            relatives.maxCandidates = maxCandidates ?? 0
            relatives.ranks = ranks.ranks.wire
            relatives.language = language.language
            var request = Stol_V1_TaxonomyRequest()
            request.relatives = relatives
            let answer = try global.taxonomy().ask(request, as: Stol_V1_RelativesResponse.self)
            global.show(answer, TextFormatter.relatives)
        }
    }
}

struct Diagnostics: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the taxonomy server's diagnostics report (no queries, no user ids) for a bug report.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        try global.run { () throws(ClientError) in
            var request = Stol_V1_TaxonomyRequest()
            request.diagnostics = Stol_V1_DiagnosticsRequest()
            let answer = try global.taxonomy().ask(request, as: Stol_V1_DiagnosticsResponse.self)
            print(global.json ? TextFormatter.json(answer) : answer.report, terminator: global.json ? "\n" : "")
        }
    }
}
