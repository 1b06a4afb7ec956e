import ArgumentParser
import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol

/// `stol-client filter`: taxonkit's `filter`: the lines of stdin whose taxon's rank
/// is in a range, for profile tables and id lists. The server judges each taxon
/// (`rank_filter`, PROTOCOL.md §4.2: 1000 queries per request, several in flight),
/// so that every client keeps what the one rule keeps; this command only picks the
/// column and writes the lines the server kept.
struct Filter: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep the lines of stdin whose taxon's rank is in a range (taxonkit filter), for id lists and TSV columns.",
        discussion: """
            Each line of stdin holds a taxon id or an exact name, alone or in the --column of a TSV \
            (1-based, default 1). The lines that pass are written as they were, in order; a line \
            starting with # (a header, a comment) is copied, a blank line left out.
            Ranks are NCBI's own (the whole tree), in the order --list-order prints, top down; the \
            spellings on one line are one rank (superkingdom and domain, realm; acellular root and \
            cellular root, NCBI's ranks of Viruses and cellular organisms since 2025), so a script \
            works on releases before and after NCBI's 2025 renaming.
              --lower-than R: ranks below R (R itself excluded); --higher-than R: above R
              --rank R (repeatable, or comma-separated): exactly these; with --lower-than or \
            --higher-than, these as well (lower than or equal to)
              neither: every taxon with an ordered rank, and the others
            A taxon without an ordered rank (no rank, clade, a rank the order does not list) is kept \
            unless --discard-noranks; with --save-predictable-noranks (which needs --lower-than and \
            implies --discard-noranks) it is kept when its nearest ranked ancestor is at or below the \
            --lower-than rank (a no-rank serotype under a species passes --lower-than genus).
            A merged id is judged by the taxon it was merged into (the line is written as it was). \
            Kraken's 0 (unclassified) has no rank and is left out. Ids and names that name no single \
            taxon are left out and listed on stderr; exit 3 then, else 0.
            Examples:
              stol-client filter --lower-than genus --rank genus < taxids.txt   (and every taxon without an ordered rank)
              stol-client filter --rank species --discard-noranks --column 2 < profile.tsv   (species only)
              stol-client filter --lower-than species --discard-noranks --save-predictable-noranks < ids.txt
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("Keep taxa of ranks below this one (e.g. genus).", valueName: "RANK")) var lowerThan: String?
    @Option(help: ArgumentHelp("Keep taxa of ranks above this one (e.g. family).", valueName: "RANK")) var higherThan: String?
    @Option(name: .customLong("rank"), help: ArgumentHelp(
        "Keep taxa of this rank (repeatable, or comma-separated); with --lower-than or --higher-than, as well.",
        valueName: "RANK"))
    var equalTo: [String] = []
    @Flag(help: "Leave out taxa without an ordered rank (no rank, clade).") var discardNoranks = false
    @Flag(help: ArgumentHelp("With --lower-than: keep a taxon without an ordered rank when its nearest ranked ancestor "
                             + "is at or below the --lower-than rank (implies --discard-noranks)."))
    var savePredictableNoranks = false
    @Option(help: ArgumentHelp("The column (1-based) of a TSV that holds the id or name.", valueName: "N")) var column: Int = 1
    @Flag(help: "Print the order of ranks (top down, one level per line, its spellings comma-separated) and exit.")
    var listOrder = false

    /// The filter the options describe, without queries: what every request carries.
    /// The server checks it (an unknown rank, both bounds, …) and splits `--rank`'s
    /// comma-separated lists.
    var options: Stol_V1_RankFilterRequest {
        .with {
            $0.lowerThan = lowerThan ?? ""
            $0.higherThan = higherThan ?? ""
            $0.equalTo = equalTo
            $0.discardNoranks = discardNoranks
            $0.savePredictableNoranks = savePredictableNoranks
        }
    }

    func validate() throws {
        guard column >= 1 else { throw ValidationError("--column counts from 1") }
    }

    /// Queries per request: the server's limit for a rank filter.
    static let batchSize = 1000

    func run() throws {
        var notFound: [String] = []
        try global.run { () throws(ClientError) in
            if listOrder {
                let order = try global.taxonomy().ask(.with { $0.rankOrder = .init() }, as: Stol_V1_RankOrderResponse.self)
                order.levels.forEach { print($0.spellings.joined(separator: ",")) }
                print(order.unordered.map { "!" + $0 }.joined(separator: ","))
                return
            }
            let client = try global.batchTaxonomy()
            let options = self.options
            // The options checked once, before any input is read (a request without
            // queries): options the rules refuse are a usage error, as they were when the
            // client judged them, and an empty input still hears of them.
            do throws(ClientError) {
                _ = try client.ask(.with { $0.rankFilter = options }, as: Stol_V1_RankFilterResponse.self)
            } catch .server(let error) where error.code == .invalidRequest {
                throw .usage("filter: \(error.message)")
            }
            let output = BatchOutput()
            /// A query: the id or name of the line's column, and the line written when it passes.
            typealias Query = (field: String, line: String)
            /// A line answered here: a comment copied, or a query too large to send (left out).
            enum Local { case copy(String), refused(BatchRefusal) }
            func local(_ line: Local) {
                switch line {
                case .copy(let text): output.line(text)
                case .refused(let refusal): notFound.append(refusal.description)
                }
            }
            let reader = LineReader()
            try client.runBatches(
                maximumQueries: Self.batchSize,
                input: { () throws(ClientError) -> BatchEntry<Query, Local>? in
                    while let line = try reader.nextLine() {
                        if line.hasPrefix("#") { return .local(.copy(line)) }
                        guard !line.trimmingBlanks.isEmpty else { continue }
                        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
                        let field = column <= fields.count ? String(fields[column - 1]).trimmingBlanks : ""
                        // Kraken's 0 is unclassified: no rank, never kept; an empty field names nothing.
                        if field == "0" { continue }
                        if field.isEmpty {
                            notFound.append("line without column \(column): \(line.prefix(60))")
                            continue
                        }
                        return .query((field, line), line: reader.lineNumber)
                    }
                    return nil
                },
                bytes: { ProtobufSize.string(field: 1, $0.field) },
                request: { queries in
                    .with {
                        $0.rankFilter = options
                        $0.rankFilter.queries = queries.map(\.field)
                    }
                },
                output: output,
                refuse: { .refused($1) },
                local: local,
                answer: { (response, _, batch) throws(ClientError) in
                    guard case .rankFilter(let answer) = response.result else { throw .local("unexpected answer") }
                    try batch.expect(results: answer.results.count)
                    batch.walk(answer: { position in
                        let result = answer.results[position]
                        guard !result.hasError, result.taxonID != 0 else {
                            notFound.append(result.query)
                            return
                        }
                        if result.kept { output.line(batch.queries[position].line) }
                    }, local: local)
                })
            try output.finish()
        }
        if !notFound.isEmpty {
            let shown = notFound.prefix(20).joined(separator: ", ") + (notFound.count > 20 ? ", …" : "")
            FileHandle.standardError.write(Data("not found, left out (\(notFound.count)): \(shown)\n".utf8))
            throw ExitCode(ClientError.ExitCode.notFound.rawValue)
        }
    }
}
