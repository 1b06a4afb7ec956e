import STOLProtocol

/// A `lineage_batch` answer of the packed form (`LINEAGE_FORM_PACKED`), read for its
/// queries' lines: per query its lineage's ids (the taxon last), the taxon's id, rank
/// and name from `nodes`, and its note (an error, a merged id). Checked once, before any
/// line is written: the lengths add up to the ids, every lineage's taxon is listed, and
/// every query without a lineage has an error.
public struct PackedLineages {
    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    private let answer: Stol_V1_LineageBatchResponse
    /// Where each query's lineage starts in `packedIds` (one more than there are queries).
    private let starts: [Int]
    private let taxa: [Int64: Stol_V1_LineageNode]
    private let notes: [Int: Stol_V1_PackedLineageNote]

    public init(_ answer: Stol_V1_LineageBatchResponse, queries: Int) throws(Malformed) {
        guard answer.packedLengths.count == queries else {
            throw Malformed(description: "\(answer.packedLengths.count) packed lineages answer \(queries) queries")
        }
        var starts = [0]
        starts.reserveCapacity(queries + 1)
        for length in answer.packedLengths { starts.append(starts[starts.count - 1] + Int(length)) }
        guard starts[queries] == answer.packedIds.count else {
            throw Malformed(description: "the packed lengths add up to \(starts[queries]) of \(answer.packedIds.count) ids")
        }
        taxa = Dictionary(answer.nodes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        notes = Dictionary(answer.packedNotes.map { (Int($0.index), $0) }, uniquingKeysWith: { first, _ in first })
        for position in 0..<queries {
            if starts[position] == starts[position + 1] {
                guard notes[position]?.hasError == true else {
                    throw Malformed(description: "query \(position + 1) of the answer has neither a lineage nor an error")
                }
            } else if taxa[answer.packedIds[starts[position + 1] - 1]] == nil {
                throw Malformed(description: "the taxon of query \(position + 1) of the answer is not among its nodes")
            }
        }
        self.answer = answer
        self.starts = starts
    }

    /// The lineage of query `position`, root first, the taxon last (empty when it failed).
    public func ids(_ position: Int) -> ArraySlice<Int64> { answer.packedIds[starts[position]..<starts[position + 1]] }

    /// The taxon query `position` names; nil when it failed (``failure(_:query:)``).
    public func taxon(_ position: Int) -> Stol_V1_LineageNode? { ids(position).last.flatMap { taxa[$0] } }

    /// The id query `position` asked for when the source merged it into its taxon; 0 otherwise.
    public func mergedFrom(_ position: Int) -> Int64 { notes[position]?.mergedFrom ?? 0 }

    /// Query `position`'s failure as the ids form's result says it.
    public func failure(_ position: Int, query: String) -> Stol_V1_LineageResult {
        var result = Stol_V1_LineageResult()
        result.query = query
        result.error = notes[position]?.error ?? Stol_V1_Error()
        return result
    }
}
