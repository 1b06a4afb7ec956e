/// Lowest common ancestor on a forest stored as parent indexes (-1: root) and
/// depths, by walking up from the deeper node: O(depth) ≤ 7 steps in an
/// eight-rank tree, so no Euler-tour range-minimum structure is needed in memory.
/// Nil when the two nodes are in different root trees.
///
/// Shared by ``TaxonTree`` (the pipeline's build-time tree) and
/// ``CompactTaxonTree`` (the server's memory-lean tree) so both answer alike.
func parentPointerLCA<Depth: BinaryInteger>(_ a: Int, _ b: Int, parentIndex: [Int32], depth: [Depth]) -> Int? {
    var x = a, y = b
    while depth[x] > depth[y] { x = Int(parentIndex[x]) }
    while depth[y] > depth[x] { y = Int(parentIndex[y]) }
    while x != y {
        let px = Int(parentIndex[x]), py = Int(parentIndex[y])
        if px < 0 || py < 0 { return nil }
        x = px
        y = py
    }
    return x
}
