import STOLProtocol

/// The taxon each node of a user's tree gets, asked of the server (`annotate_tree`,
/// PROTOCOL.md §4.2): its own taxon, else the common ancestor of its annotated leaves.
/// The client only cuts the tree into requests; the rule is the server's.
///
/// A tree larger than one request (64 KiB, ``maximumNodes`` nodes) goes in parts,
/// deepest first, as the Python package's `annotate` sends it: the children of a node
/// whose subtree does not fit are sent in groups, each group under a root of its own
/// (depth 0, no taxon); in the request of the part above, each group then stands as
/// one leaf carrying the group's `leaves_ancestor`. The common ancestor of leaves is
/// associative, so every node gets what the whole tree would give it.
public enum AnnotateTreeParts {
    /// Nodes of one `annotate_tree` request (the server's limit, PROTOCOL.md §9).
    public static let maximumNodes = 65_536

    /// The server's answer for one part: per node its taxon, and the ancestor of the part's annotated leaves.
    public typealias Send = (_ depths: [UInt32], _ taxonIDs: [Int64]) throws(ClientError) -> Stol_V1_AnnotateTreeResponse

    /// What the server gave the tree: each node's taxon (or 0; −1 never reaches a node
    /// the server answers), and the inner nodes whose own taxon is not an ancestor of
    /// their annotated leaves (`not_ancestors`), in preorder.
    public struct Answer: Equatable {
        public var taxa: [Int64]
        public var notAncestors: [Int]

        public init(taxa: [Int64], notAncestors: [Int]) {
            self.taxa = taxa
            self.notAncestors = notAncestors
        }
    }

    /// The taxon of each node, and the labels that cannot name their clade (``Answer``).
    ///
    /// - Parameters:
    ///   - depths: the tree in preorder, the root first at 0, each node's depth.
    ///   - own: per node, the taxon its label names, or 0.
    ///   - budget: bytes the packed depths and ids of one request may take.
    ///   - send: one `annotate_tree` request.
    public static func annotate(depths: [Int], own: [Int64], budget: Int, maximumNodes: Int = maximumNodes,
                                send: Send) throws(ClientError) -> Answer {
        precondition(depths.count == own.count, "one taxon per node")
        let count = depths.count
        guard count > 0 else { return Answer(taxa: [], notAncestors: []) }
        var children = [[Int]](repeating: [], count: count)
        var path: [Int] = []
        for index in 0..<count {
            while let top = path.last, depths[top] >= depths[index] { path.removeLast() }
            if let top = path.last { children[top].append(index) }
            path.append(index)
        }
        // Bottom-up, each subtree's bytes and nodes as it would be sent, its grouped
        // children standing as one leaf per group (a depth, an id of at most 10 bytes).
        var size = [Int](repeating: 0, count: count), weight = [Int](repeating: 0, count: count)
        var groups: [Int: [[Int]]] = [:]
        for index in stride(from: count - 1, through: 0, by: -1) {
            let kids = children[index]
            let mine = ProtobufSize.varint(UInt64(depths[index])) + ProtobufSize.varint(UInt64(bitPattern: own[index]))
            var total = mine + kids.reduce(0) { $0 + size[$1] }
            var nodes = 1 + kids.reduce(0) { $0 + weight[$1] }
            if total > budget || nodes > maximumNodes {
                var packed: [[Int]] = [[]]
                var groupBytes = 2, groupNodes = 1  // the group's own root: depth 0, no taxon
                for kid in kids {
                    if !packed[packed.count - 1].isEmpty
                        && (groupBytes + size[kid] > budget || groupNodes + weight[kid] > maximumNodes) {
                        packed.append([])
                        (groupBytes, groupNodes) = (2, 1)
                    }
                    packed[packed.count - 1].append(kid)
                    groupBytes += size[kid]
                    groupNodes += weight[kid]
                }
                groups[index] = packed
                total = mine + packed.count * (ProtobufSize.varint(UInt64(depths[index] + 1)) + 10)
                nodes = 1 + packed.count
            }
            (size[index], weight[index]) = (total, nodes)
        }

        var answers = [Int64](repeating: 0, count: count)
        var notAncestors: [Int] = []
        var ancestors: [Int: [Int64]] = [:]  // a grouped node's groups' leaves_ancestor
        /// One part being built: the nodes it answers for (nil: a group's stand-in), depths, ids.
        struct Part {
            var held: [Int?] = []
            var depths: [UInt32] = []
            var ids: [Int64] = []
        }
        /// `top`'s subtree in preorder, depths from `base`, grouped children as their leaves.
        func walk(_ top: Int, base: Int, into part: inout Part) {
            var stack = [top]
            while let index = stack.popLast() {
                part.held.append(index)
                part.depths.append(UInt32(depths[index] - base))
                part.ids.append(own[index])
                if groups[index] != nil {
                    for ancestor in ancestors[index] ?? [] {
                        part.held.append(nil)
                        part.depths.append(UInt32(depths[index] + 1 - base))
                        part.ids.append(ancestor)
                    }
                } else {
                    stack.append(contentsOf: children[index].reversed())
                }
            }
        }
        func answer(_ part: Part) throws(ClientError) -> Int64 {
            let response = try send(part.depths, part.ids)
            guard response.taxonIds.count == part.held.count else {
                throw .local("the taxonomy service annotated \(response.taxonIds.count) nodes of \(part.held.count)")
            }
            for (index, taxon) in zip(part.held, response.taxonIds) {
                if let index { answers[index] = taxon }
            }
            for position in response.notAncestors {
                guard Int(position) < part.held.count else {
                    throw .local("the taxonomy service named node \(position) of a part of \(part.held.count)")
                }
                if let index = part.held[Int(position)] { notAncestors.append(index) }
            }
            return response.leavesAncestor
        }
        // Children before parents (reverse preorder): nested groups are answered first.
        for index in stride(from: count - 1, through: 0, by: -1) {
            guard let packed = groups[index] else { continue }
            var found: [Int64] = []
            for group in packed {
                var part = Part(held: [nil], depths: [0], ids: [0])
                for kid in group { walk(kid, base: depths[index], into: &part) }
                found.append(try answer(part))
            }
            ancestors[index] = found
        }
        var whole = Part()
        walk(0, base: 0, into: &whole)
        _ = try answer(whole)
        return Answer(taxa: answers, notAncestors: notAncestors.sorted())
    }
}
