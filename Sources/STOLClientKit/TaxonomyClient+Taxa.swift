import STOLProtocol

extension ServiceClient where Request == Stol_V1_TaxonomyRequest, Response == Stol_V1_TaxonomyResponse {
    /// Ids per `get_taxa` request (the server's limit, PROTOCOL.md §9).
    public static var taxaPerRequest: Int { 1000 }

    /// The taxa behind `ids`, keyed by the id asked for: a merged id maps to the
    /// taxon it was merged into (and is noted on standard error); an id the
    /// active database does not have is absent, never an error (a favourite
    /// outlives a database without its taxon). Batches of ``taxaPerRequest`` go
    /// through ``runBatches``, the one path of batch modes.
    public func taxa(ids: [Int64], language: String) throws(ClientError) -> [Int64: Stol_V1_Taxon] {
        // Ids a server refuses (≤ 0, from an old file) have no taxon anywhere.
        var seen = Set<Int64>()
        let wanted = ids.filter { $0 > 0 && seen.insert($0).inserted }
        guard !wanted.isEmpty else { return [:] }
        var pending = wanted[...]
        var found: [Int64: Stol_V1_Taxon] = [:]
        do {
            try runBatches(
                maximumQueries: Self.taxaPerRequest,
                input: { () -> BatchEntry<Int64, BatchRefusal>? in pending.popFirst().map { .query($0, line: 0) } },
                bytes: ProtobufSize.packed,
                request: { batch in Stol_V1_TaxonomyRequest.with { $0.getTaxa = .with { $0.taxonIds = batch; $0.language = language } } },
                refuse: { $1 },  // an id is at most 10 bytes: never
                local: { _ in },
                answer: { (response, _, _) throws(ClientError) in
                    guard case .taxa(let taxa) = response.result else {
                        throw .local("the taxonomy service answered get_taxa with something else")
                    }
                    for taxon in taxa.taxa { found[taxon.id] = taxon }
                    for merged in response.merged { found[merged.oldID] = found[merged.newID] }
                    Self.showNotices(response)
                })
        } catch .server(let error) where error.code == .unimplemented {
            // PROTOCOL.md §10: an operation added later is UNIMPLEMENTED on an older server.
            throw .local("the taxonomy service is older than this client (it has no get_taxa); restart it with the installed version")
        }
        return found
    }
}
