import STOLProtocol

/// The result a request expects, pulled out of its response's `result` case.
///
/// Every command of the client asks for one thing and gets one kind of answer;
/// ``ServiceClient/ask(_:as:)`` sends the request and returns that answer typed,
/// so no command repeats "call, match the case, else fail".
public protocol ExpectedAnswer {
    associatedtype Response: ResponseEnvelope
    /// The answer when `response` carries it, else nil.
    static func extract(from response: Response) -> Self?
}

extension ServiceClient {
    /// Sends `request` and returns the answer it expects; any other answer is an
    /// error naming what came instead (a typed error answer is thrown by ``call``).
    public func ask<Answer: ExpectedAnswer>(_ request: Request, as _: Answer.Type = Answer.self) throws(ClientError) -> Answer
        where Answer.Response == Response {
        let response = try call(request)
        guard let answer = Answer.extract(from: response) else {
            throw .local("the \(service) service answered with something other than \(Answer.self)")
        }
        return answer
    }
}

// MARK: - Taxonomy answers

extension Stol_V1_StatusResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .status(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_Taxon: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .taxon(let value) = response.result { value } else { nil }
    }
}

/// `children`, `roots` and `descendants` answer a page of taxa.
extension Stol_V1_TaxonPage: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        switch response.result {
        case .children(let page), .roots(let page), .descendants(let page): page
        default: nil
        }
    }
}

extension Stol_V1_TaxonList: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .ancestors(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_SearchResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .search(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_TaxonDetail: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .detail(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_CompareResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .compare(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_LineageBatchResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .lineageBatch(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_RankOrderResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .rankOrder(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_RankFilterResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .rankFilter(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_AnnotateTreeResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .annotateTree(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_ResolveNameResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .resolveName(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_RelativesResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .relatives(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_DiagnosticsResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .diagnostics(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_SubtreeResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .subtree(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_InducedTreeResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .inducedTree(let value) = response.result { value } else { nil }
    }
}

// MARK: - Favourites answers

extension Stol_V1_FavoriteState: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .state(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_FavoriteList: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .list(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_Count: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .count(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_Cleared: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .cleared(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_Storage: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .storage(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_Forgotten: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .forgotten(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_Merged: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .merged(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_BackupDone: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .backup(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_RestoreStaging: ExpectedAnswer {
    public static func extract(from response: Stol_V1_FavoritesResponse) -> Self? {
        if case .staging(let value) = response.result { value } else { nil }
    }
}

// MARK: - Import answers

extension Stol_V1_ImportStatus: ExpectedAnswer {
    public static func extract(from response: Stol_V1_ImportResponse) -> Self? {
        if case .status(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_ImportDone: ExpectedAnswer {
    public static func extract(from response: Stol_V1_ImportResponse) -> Self? {
        if case .done(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_DiffResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .diff(let value) = response.result { value } else { nil }
    }
}

extension Stol_V1_HistoryResponse: ExpectedAnswer {
    public static func extract(from response: Stol_V1_TaxonomyResponse) -> Self? {
        if case .history(let value) = response.result { value } else { nil }
    }
}
