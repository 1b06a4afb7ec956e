import GRDB
import STOLModel
import STOLProtocol

extension ComparisonQueries {
    /// Members of one `lca_batch` request in all: a set of 20 reads of 500 contigs fits.
    public static let maximumLcaMembers = 10_000

    /// The common ancestor of each set (``TaxonomyTree/lowestCommonAncestor(of:in:)``),
    /// or its majority vote (``TaxonomyTree/majorityVote(_:fraction:in:)``), from the
    /// in-memory tree. A member that names no taxon is listed in `not_found` and the
    /// others are answered: one unknown id never fails a set, let alone the request.
    public func lcaBatch(_ request: Stol_V1_LcaBatchRequest) throws(TaxonomyError) -> Stol_V1_LcaBatchResponse {
        let fraction = request.majority
        guard fraction == 0 || (fraction > 0 && fraction < 1) else {
            throw .invalidArgument("majority must be more than 0 and less than 1 (0: the plain common ancestor), got \(fraction)")
        }
        let members = request.sets.reduce(0) { $0 + $1.members.count }
        guard members <= Self.maximumLcaMembers else {
            throw .invalidArgument("at most \(Self.maximumLcaMembers) members per request, got \(members)")
        }
        guard let indexes = database.memoryIndexes, let tree = indexes.tree else { throw .memoryIndexesLoading }
        guard request.ranks == .main || indexes.holdsWholeTree else { throw .fullTreeAbsent }
        let view: TaxonomyTree.View = request.ranks == .main ? .main : .all
        return try database.read { db in
            var response = Stol_V1_LcaBatchResponse()
            response.results = try request.sets.map { set in
                try TaxonomyError.checkCancellation()
                return try answer(set, fraction: fraction, view: view, db, tree, indexes)
            }
            return response
        }
    }

    private func answer(_ set: Stol_V1_TaxonSet, fraction: Double, view: TaxonomyTree.View, _ db: Database,
                        _ tree: TaxonomyTree, _ indexes: MemoryIndexes) throws -> Stol_V1_LcaSetResult {
        var result = Stol_V1_LcaSetResult()
        result.key = set.key
        func refuse(_ message: String) -> Stol_V1_LcaSetResult {
            result.error = TaxonomyError.invalidArgument(message).protocolError.proto
            return result
        }
        guard set.weights.isEmpty || set.weights.count == set.members.count else {
            return refuse("\(set.weights.count) weights for \(set.members.count) members")
        }
        guard set.weights.allSatisfy({ $0 > 0 && $0.isFinite }) else { return refuse("weights must be positive numbers") }
        var found: [(node: Int, weight: Double)] = []
        for (index, member) in set.members.enumerated() {
            do {
                let named = try names.node(db, member, tree, indexes)
                // The plain common ancestor takes every member as `compare` takes a pair's;
                // a vote counts each member on its lineage in the view.
                guard let node = fraction == 0 ? named : tree.node(named, in: view) else {
                    result.notFound.append(member)  // above every main rank: no main lineage to vote on
                    continue
                }
                found.append((node, set.weights.isEmpty ? 1 : set.weights[index]))
            } catch let error as TaxonomyError {
                switch error {
                // A member that names nothing (0, a negative id, an empty field, an unknown or
                // ambiguous name) is listed, and the set answered from the others: one bad
                // member never fails the set, nor the request (as induced_tree lists them).
                case .taxonNotFound, .taxonDeleted, .nameNotFound, .ambiguousName, .invalidArgument:
                    result.notFound.append(member)
                default: throw error
                }
            }
        }
        result.members = UInt32(found.count)
        guard !found.isEmpty else { return refuse("no member of the set names a taxon") }
        let answer: TaxonomyTree.Consensus?
        if fraction == 0 {
            answer = tree.commonAncestor(of: found.map(\.node), in: view).map { .init(node: $0, support: 1, agreement: 1) }
        } else {
            answer = tree.majorityVote(found, fraction: fraction, in: view)
        }
        guard let answer else {
            return refuse(fraction == 0 ? "the members have no common ancestor (different roots)"
                                        : "no taxon holds more than \(fraction) of the members' weight")
        }
        result.taxonID = tree.id(at: answer.node)
        result.name = tree.name(of: answer.node)
        result.rank = view == .main ? tree.mainRank(of: answer.node)?.rawValue ?? tree.rank(of: answer.node) : tree.rank(of: answer.node)
        result.support = answer.support
        result.agreement = answer.agreement
        return result
    }
}
