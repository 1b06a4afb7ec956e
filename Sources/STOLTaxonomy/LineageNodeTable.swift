import STOLModel
import STOLProtocol

/// The nodes of a ``Stol_V1_LineageForm/nodes`` answer: each lineage node once, in the
/// order it first occurs. NCBI's lineages share most of their nodes (every one starts
/// "root; cellular organisms; …"): a client makes each name once per response, not once
/// per lineage (3 M strings for 100,000 lineages in the compact form).
struct LineageNodeTable {
    private var seen = Set<TaxonID>()
    private(set) var nodes: [Stol_V1_LineageNode] = []

    /// Adds the nodes of one lineage (`ids`) that are not there yet; `describe` gives the
    /// rank and name of the node at an index of `ids`, asked for a new node only.
    mutating func add(lineage ids: [TaxonID], _ describe: (Int) -> (rank: String, name: String)) {
        for (index, id) in ids.enumerated() where seen.insert(id).inserted {
            let (rank, name) = describe(index)
            nodes.append(.with {
                $0.id = id
                $0.rank = rank
                $0.name = name
            })
        }
    }
}
