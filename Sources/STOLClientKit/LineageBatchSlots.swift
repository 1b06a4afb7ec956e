import STOLModel

/// The input lines of `stol-client lineage` and where each one's output line goes,
/// so that the output has one line per input line, in order, whatever the input
/// holds: a query (sent, answered by the server), a blank line (an empty line out),
/// a `#` comment (copied as it is) or Kraken's `0`, unclassified (answered here,
/// never sent).
///
/// Requests are pipelined (several in flight, their answers in request order). Each
/// request keeps the list of its input lines; when its answer arrives they are
/// printed in order, the answers taking the `.answer` slots one after another. A line
/// that needs no answer and comes before the first query of the request being built
/// follows what was already sent: it joins the last request in flight, or, when none
/// is in flight (every earlier line printed), is given back to be printed at once.
public struct LineageBatchSlots {
    public enum Slot: Equatable, Sendable {
        /// The next result of the request's answer.
        case answer
        case blank
        /// The comment line as it was read.
        case comment(String)
        /// Kraken's `0`: the query as read (trimmed).
        case unclassified(String)
    }

    /// One input line: a query to send, or the slot of a line answered without the server.
    public enum Line: Equatable, Sendable {
        case query(String)
        case local(Slot)

        /// What an input line is: blanks around a query are trimmed; a line that is
        /// blank or starts with `#` (after blanks) is no query; `0` is unclassified.
        public init(_ line: String) {
            let query = line.trimmingBlanks
            if query.isEmpty {
                self = .local(.blank)
            } else if query.utf8.first == UInt8(ascii: "#") {
                self = .local(.comment(line))
            } else if query == "0" {
                self = .local(.unclassified(query))
            } else {
                self = .query(query)
            }
        }
    }

    /// A request's input lines: `queries` answers, and the lines answered without the
    /// server among and after them (`slots` nil when there are none, the common case:
    /// then nothing is kept per line).
    public struct Request: Sendable {
        public let queries: Int
        @usableFromInline var others: [Slot]?

        /// Every input line of the request, in order.
        public var slots: [Slot] { others ?? Array(repeating: .answer, count: queries) }

        /// In input order: `answer(i)` for the i-th query's answer, `local` for each other line.
        @inlinable
        public func walk<E: Error>(answer: (Int) throws(E) -> Void, local: (Slot) throws(E) -> Void) throws(E) {
            guard let others else {
                for position in 0..<queries { try answer(position) }
                return
            }
            var position = 0
            for slot in others {
                if case .answer = slot {
                    try answer(position)
                    position += 1
                } else {
                    try local(slot)
                }
            }
        }

        mutating func append(_ slot: Slot) {
            if others == nil { others = Array(repeating: .answer, count: queries) }
            others!.append(slot)
        }
    }

    /// The requests sent and not yet answered, oldest first.
    private var inFlight: [Request] = []
    /// The request being built: its queries, and its lines when some are not queries.
    public private(set) var queries: [String] = []
    private var others: [Slot]?

    public init() {}

    /// Requests sent whose answer has not been taken (``answered()``).
    public var requestsInFlight: Int { inFlight.count }

    /// Adds an input line to the request being built; returns the slot to print at once
    /// (a line needing no answer, with nothing in flight and no query before it).
    public mutating func add(_ line: String) -> Slot? {
        switch Line(line) {
        case .query(let query):
            queries.append(query)
            others?.append(.answer)
        case .local(let slot):
            if !queries.isEmpty {
                if others == nil { others = Array(repeating: .answer, count: queries.count) }
                others!.append(slot)
            } else if !inFlight.isEmpty {
                inFlight[inFlight.count - 1].append(slot)
            } else {
                return slot
            }
        }
        return nil
    }

    /// The queries of the request built so far, which is sent (its lines go in flight);
    /// nil when it has none.
    public mutating func send() -> [String]? {
        guard !queries.isEmpty else { return nil }
        let sent = queries
        inFlight.append(Request(queries: sent.count, others: others))
        queries = []
        others = nil
        return sent
    }

    /// The oldest request in flight, whose answer came: as many answers as it sent
    /// `queries`, and the lines between and after them.
    public mutating func answered() -> Request {
        inFlight.isEmpty ? Request(queries: 0, others: nil) : inFlight.removeFirst()
    }

    // MARK: Lines

    /// The TSV line of a slot answered without the server (empty for `.answer`).
    public static func tsv(_ slot: Slot, _ writer: LineageTSV) -> String {
        switch slot {
        case .answer, .blank: ""
        case .comment(let line): line
        case .unclassified(let query): writer.unclassifiedLine(query: query)
        }
    }

    /// The JSON line of a slot answered without the server: `{"query":"","skipped":"blank"}`,
    /// `{"query":"# …","skipped":"comment"}`, and for `0` a LineageResult of the unclassified
    /// taxon: `{"query":"0","taxon":{"id":0,"scientific_name":"unclassified","source_rank":"no rank"}}`.
    public static func appendJSON(_ slot: Slot, to out: inout [UInt8]) {
        switch slot {
        case .answer, .blank:
            out.append(contentsOf: #"{"query":"","skipped":"blank"}"#.utf8)
        case .comment(let line):
            out.append(contentsOf: #"{"query":"#.utf8)
            ProtobufJSONWriter.appendString(line, to: &out)
            out.append(contentsOf: #","skipped":"comment"}"#.utf8)
        case .unclassified(let query):
            out.append(contentsOf: #"{"query":"#.utf8)
            ProtobufJSONWriter.appendString(query, to: &out)
            out.append(contentsOf: #","taxon":{"id":0,"scientific_name":"unclassified","source_rank":"no rank"}}"#.utf8)
        }
    }
}
