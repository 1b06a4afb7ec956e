import STOLProtocol

extension ServiceClient where Request == Stol_V1_TaxonomyRequest, Response == Stol_V1_TaxonomyResponse {
    /// Queries per `lineage_batch` request (the server's limit, PROTOCOL.md §9).
    public static var lineagesPerRequest: Int { 1000 }

    /// The lineage batch result of each query, in the order of `queries`, through
    /// ``runBatches`` (requests cut by count and size, several in flight): for commands
    /// that look a list up before they ask for something else (`annotate`'s labels and
    /// ancestors, `tree --taxa`'s names). A query too large to send names nothing: nil.
    public func lineages(of queries: [String], ranks: Stol_V1_RankView, form: Stol_V1_LineageForm,
                         language: String = "") throws(ClientError) -> [Stol_V1_LineageResult?] {
        var results = [Stol_V1_LineageResult?](repeating: nil, count: queries.count)
        var pending = Array(queries.enumerated())[...]
        try runBatches(
            maximumQueries: Self.lineagesPerRequest,
            input: { () -> BatchEntry<(position: Int, query: String), BatchRefusal>? in
                pending.popFirst().map { .query(($0.offset, $0.element), line: 0) }
            },
            bytes: { ProtobufSize.string(field: 1, $0.query) },
            request: { batch in
                .with {
                    $0.lineageBatch = .with {
                        $0.queries = batch.map(\.query)
                        $0.ranks = ranks
                        $0.form = form
                        $0.language = language
                    }
                }
            },
            refuse: { $1 },
            local: { _ in },
            answer: { (response, _, batch) throws(ClientError) in
                guard case .lineageBatch(let answer) = response.result else {
                    throw .local("the taxonomy service answered lineage_batch with something else")
                }
                try batch.expect(results: answer.results.count)
                for (query, result) in zip(batch.queries, answer.results) { results[query.position] = result }
            })
        return results
    }
}
