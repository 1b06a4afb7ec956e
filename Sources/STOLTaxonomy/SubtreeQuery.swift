import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// Most taxa one subtree answer may carry (about 40 bytes each, well inside a 4 MiB frame).
    public static let maximumSubtreeTaxa = 50_000
    public static let defaultSubtreeTaxa = 10_000

    /// The subtree of `id` in preorder with depths, names and ranks, for drawing
    /// (`stol-client tree --format newick`). On the main ranks children come in
    /// name order (the browsing tree); on the whole tree in id order. More than
    /// `maximumTaxa` taxa is refused with the subtree's size, never cut silently.
    public func subtree(of id: TaxonID, ranks: Stol_V1_RankView, maximumTaxa: Int) throws(TaxonomyError) -> Stol_V1_SubtreeResponse {
        guard let indexes = database.memoryIndexes else { throw .memoryIndexesLoading }
        var response = Stol_V1_SubtreeResponse()
        // A node outside the view has no subtree in it: its own subtree is shown.
        let outsideView = ranks == .main && layout.everyNode && indexes.tree.map { $0.index(of: id) == nil } == true
        if ranks == .all || outsideView {
            let tree = try fullTree()
            guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
            guard let (nodes, depths) = tree.subtree(of: node, limit: maximumTaxa) else {
                throw .invalidArgument("the subtree of \(id) has more than \(maximumTaxa) taxa; "
                                       + "raise --max-taxa (at most \(Self.maximumSubtreeTaxa)) or start lower")
            }
            response.ids = nodes.map(tree.id(at:))
            response.depths = depths.map(UInt32.init)
            response.names = nodes.map(tree.name(of:))
            response.ranks = nodes.map(tree.rank(of:))
            return response
        }
        guard let tree = indexes.tree else { throw .memoryIndexesLoading }
        guard let node = tree.index(of: id) else { throw .taxonNotFound(id) }
        let end = Int(tree.subtreeEnd[node])
        guard end - node <= maximumTaxa else {
            throw .invalidArgument("the subtree of \(id) has \(end - node) taxa, more than \(maximumTaxa); "
                                   + "raise --max-taxa (at most \(Self.maximumSubtreeTaxa)) or start lower")
        }
        let base = Int(tree.depth[node])
        response.ids = (node..<end).map(tree.id(at:))
        response.depths = (node..<end).map { UInt32(Int(tree.depth[$0]) - base) }
        if let full = indexes.fullTree {
            // Every taxon of the main ranks is a node of the whole tree: names from memory.
            let positions = response.ids.map { full.index(of: $0) }
            response.names = positions.map { $0.map(full.name(of:)) ?? "" }
        } else {
            let names = try database.read { db -> [TaxonID: String] in
                var names: [TaxonID: String] = [:]
                for chunk in stride(from: 0, to: response.ids.count, by: 512) {
                    let part = Self.padded(Array(response.ids[chunk..<min(chunk + 512, response.ids.count)]))
                    let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                        SELECT id, scientific_name FROM taxa WHERE id IN (\(Self.placeholders(part)))
                        """), arguments: StatementArguments(part))
                    while let row = try rows.next() { names[row[0]] = row[1] }
                }
                return names
            }
            response.names = response.ids.map { names[$0] ?? "" }
        }
        response.ranks = (node..<end).map { TaxonRank.allCases[Int(tree.rankLevel[$0])].rawValue }
        return response
    }
}
