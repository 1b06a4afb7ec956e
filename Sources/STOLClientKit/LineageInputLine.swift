import STOLModel
import STOLProtocol

/// An input line of `stol-client lineage` and, for the lines answered without the
/// server, its output line: the output has one line per input line, in order,
/// whatever the input holds: a query (sent, answered by the server), a blank line
/// (an empty line out), a `#` comment (copied as it is), Kraken's `0` (unclassified,
/// never sent), or a query too large for any request (its error line, never sent).
/// The order across pipelined requests is ``BatchQueue``'s.
public enum LineageInputLine: Equatable, Sendable {
    case query(String)
    case local(Local)

    /// A line answered without the server.
    public enum Local: Equatable, Sendable {
        case blank
        /// The comment line as it was read.
        case comment(String)
        /// Kraken's `0`: the query as read (trimmed).
        case unclassified(String)
        /// A query no request can carry, answered with its error (``refusedResult(_:_:)``).
        case refused(Stol_V1_LineageResult)
    }

    /// What an input line is: blanks around a query are trimmed; a line that is
    /// blank or starts with `#` (after blanks) is no query; `0` (Kraken 2's `unclassified
    /// (taxid 0)` with --use-names) is unclassified.
    public init(_ line: String) {
        let query = line.trimmingBlanks
        if query.isEmpty {
            self = .local(.blank)
        } else if query.utf8.first == UInt8(ascii: "#") {
            self = .local(.comment(line))
        } else if query == "0" || (query.hasSuffix("(taxid 0)") && TaxonIDText.id(query) == 0) {
            self = .local(.unclassified(query))
        } else {
            self = .query(query)
        }
    }

    /// The result of a query too large to send: the error the server gives a query it refuses.
    public static func refusedResult(_ query: String, _ refusal: BatchRefusal) -> Stol_V1_LineageResult {
        .with {
            $0.query = query
            $0.error = .with { $0.code = .invalidRequest; $0.message = refusal.description }
        }
    }

    /// The TSV line of a line answered without the server.
    public static func tsv(_ local: Local, _ writer: LineageTSV) -> String {
        switch local {
        case .blank: ""
        case .comment(let line): line
        case .unclassified(let query): writer.unclassifiedLine(query: query)
        case .refused(let result): writer.line(result)
        }
    }

    /// The JSON line of a line answered without the server: `{"query":"","skipped":"blank"}`,
    /// `{"query":"# …","skipped":"comment"}`, for `0` a LineageResult of the unclassified
    /// taxon: `{"query":"0","taxon":{"id":0,"scientific_name":"unclassified","source_rank":"no rank"}}`,
    /// and a refused query's LineageResult with its error.
    public static func appendJSON(_ local: Local, to out: inout [UInt8]) {
        switch local {
        case .blank:
            out.append(contentsOf: #"{"query":"","skipped":"blank"}"#.utf8)
        case .comment(let line):
            out.append(contentsOf: #"{"query":"#.utf8)
            ProtobufJSONWriter.appendString(line, to: &out)
            out.append(contentsOf: #","skipped":"comment"}"#.utf8)
        case .unclassified(let query):
            out.append(contentsOf: #"{"query":"#.utf8)
            ProtobufJSONWriter.appendString(query, to: &out)
            out.append(contentsOf: #","taxon":{"id":0,"scientific_name":"unclassified","source_rank":"no rank"}}"#.utf8)
        case .refused(let result):
            ProtobufJSONWriter.append(result, to: &out)
        }
    }
}
