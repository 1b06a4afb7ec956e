import STOLModel
import STOLProtocol

/// How two nodes of the in-memory tree are related, as every `compare` answer shows
/// it: one pair or a batch, on the main ranks or on the source's whole tree
/// (docs/design/queries-and-algorithms.md §4). The relation, the common ancestor,
/// both paths and both distances come from the one comparison of the tree
/// (``TaxonomyTree/compare(_:_:)``); the queries add only what SQL holds (common
/// names in a language, traits).
///
/// - The common ancestor on the whole tree is the source's lowest common ancestor;
///   on the main ranks the deepest taxon of both main lineages (the view's
///   ancestors, and the node itself when of a main rank), or the source's own when
///   they share none (above every domain, such as "cellular organisms").
/// - `distance_all`: edges of the source's whole tree between the two.
/// - `distance_main`: taxa of the two main lineages below the main-rank ancestor.
///   A node outside the eight ranks (a subspecies, a strain) is not counted: a
///   subspecies and its species are 0 apart, and on a database of the main ranks
///   only it is the edges of that tree.
struct PairComparison {
    let tree: TaxonomyTree
    let view: TaxonomyTree.View
    let a: Int
    let b: Int
    /// Nil when the two are under different roots (only on a database of the main ranks only).
    let comparison: TaxonomyTree.Comparison?

    init(_ a: Int, _ b: Int, on tree: TaxonomyTree, view: TaxonomyTree.View) {
        self.tree = tree
        self.view = view
        self.a = a
        self.b = b
        comparison = tree.compare(a, b)
    }

    /// The common ancestor as the view shows it; nil when unrelated.
    var shownAncestor: Int? { comparison.map { view == .main ? $0.mainLCA : $0.lca } }

    var relation: Stol_V1_Relation {
        guard let lca = comparison?.lca else { return .unrelated }
        if a == b { return .same }
        return lca == a ? .aAncestorOfB : (lca == b ? .bAncestorOfA : .related)
    }

    /// The view's own distance (`distance`): `distance_main` on the main ranks, else `distance_all`.
    var distance: Int? { comparison.map { view == .main ? $0.distanceMain : $0.distanceAll } }

    /// From `node` up to the shown ancestor, both included, through the view's
    /// parents (on the main ranks: the taxon, then its main-rank ancestors). An
    /// ancestor above every domain is reached from the view's root.
    func path(from node: Int) -> [Int] {
        guard let top = shownAncestor else { return [node] }
        var nodes = [node]
        var current = node
        while current != top, let parent = tree.parent(of: current, in: view) {
            nodes.append(parent)
            current = parent
        }
        if current != top { nodes.append(top) }
        return nodes
    }

    /// The rank a node is named with: its main rank on the main ranks (the source's
    /// rank for a node outside them), the source's rank on the whole tree.
    func shownRank(of node: Int) -> String {
        view == .main ? tree.mainRank(of: node)?.rawValue ?? tree.rank(of: node) : tree.rank(of: node)
    }

    /// `Both are in genus Panthera`, or why there is no common ancestor.
    var sharedClade: String {
        guard let top = shownAncestor else {
            let rootA = tree.ancestors(of: a, in: view).first ?? a, rootB = tree.ancestors(of: b, in: view).first ?? b
            return "They share no ancestor in this database: \(describe(rootA)) and \(describe(rootB)) are separate roots"
        }
        return a == b ? "Both are the same taxon: \(describe(top))" : "Both are in \(describe(top))"
    }

    private func describe(_ node: Int) -> String { "\(shownRank(of: node)) \(tree.name(of: node))" }

    /// The pair as `compare_batch` answers it (`a`, `b` and `error` are the caller's).
    func fill(_ result: inout Stol_V1_CompareBatchResult, wholeTree: Bool) {
        result.aID = tree.id(at: a)
        result.bID = tree.id(at: b)
        guard let comparison, let shown = shownAncestor else {
            result.unrelated = true
            return
        }
        result.lcaID = tree.id(at: shown)
        result.lcaName = tree.name(of: shown)
        result.lcaRank = shownRank(of: shown)
        result.distanceMain = UInt32(comparison.distanceMain)
        if wholeTree { result.distanceAll = UInt32(comparison.distanceAll) }
    }

    /// The pair as `compare` answers it, each node made a `Taxon` by `taxon`.
    func response(wholeTree: Bool, taxon: (Int) -> Stol_V1_Taxon) -> Stol_V1_CompareResponse {
        var result = Stol_V1_CompareResponse()
        result.taxonA = taxon(a)
        result.taxonB = taxon(b)
        result.relation = relation
        result.sharedClade = sharedClade
        result.pathA = path(from: a).map(taxon)
        result.pathB = path(from: b).map(taxon)
        guard let comparison, let shown = shownAncestor, let distance else { return result }
        result.lca = taxon(shown)
        result.lcaDepth = UInt32(tree.depth(of: shown, in: view))
        result.distance = UInt32(distance)
        result.distanceMain = UInt32(comparison.distanceMain)
        if wholeTree { result.distanceAll = UInt32(comparison.distanceAll) }
        return result
    }
}
