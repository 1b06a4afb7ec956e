import Glibc

/// The source's whole tree (schema 2 `tree_nodes`: NCBI's 2.6 M nodes with their
/// own ranks, under the root 1) in flat arrays, for lineages and common ancestors
/// on NCBI's own tree (`--ranks all`) without a query per node.
///
/// Names are kept as one UTF-8 buffer with end offsets (about 60 MB for NCBI)
/// rather than 2.6 M `String`s (each a heap object when over 15 bytes); ranks as
/// a code into the few distinct rank names. Nodes are addressed by their
/// position in ascending id order.
public struct FullTaxonTree: Sendable {
    public enum BuildError: Error, Equatable, CustomStringConvertible {
        case idsNotAscending(TaxonID)
        case unknownParent(child: TaxonID, parent: TaxonID)
        case tooManyRanks
        case cycle(TaxonID)
        /// A name order given to the builder that does not list every node once.
        case nameOrderIncomplete

        public var description: String {
            switch self {
            case .idsNotAscending(let id): "ids not strictly ascending at \(id)"
            case .unknownParent(let child, let parent): "taxon \(child) has the unknown parent \(parent)"
            case .tooManyRanks: "more than 255 distinct ranks"
            case .cycle(let id): "taxon \(id) is its own ancestor"
            case .nameOrderIncomplete: "the name order does not list every node exactly once"
            }
        }
    }

    /// Appends nodes in ascending id order (as `SELECT … FROM tree_nodes ORDER BY id`
    /// gives them), then ``build()``.
    public struct Builder {
        var ids: [TaxonID] = []
        var parentIDs: [TaxonID] = []
        var rankCodes: [UInt8] = []
        var rankNames: [String] = []
        var rankCode: [String: UInt8] = [:]
        var nameBytes: [UInt8] = []
        var nameEnds: [UInt32] = []

        public init(capacity: Int = 0) {
            ids.reserveCapacity(capacity)
            parentIDs.reserveCapacity(capacity)
            rankCodes.reserveCapacity(capacity)
            nameEnds.reserveCapacity(capacity)
            nameBytes.reserveCapacity(capacity * 24)
        }

        /// - Parameter parentID: 0 or nil for a root.
        public mutating func append(id: TaxonID, parentID: TaxonID?, rank: String,
                                    name: some Collection<UInt8>) throws(BuildError) {
            if let last = ids.last, last >= id { throw .idsNotAscending(id) }
            let code: UInt8
            if let known = rankCode[rank] {
                code = known
            } else {
                guard rankNames.count < 255 else { throw .tooManyRanks }
                code = UInt8(rankNames.count)
                rankNames.append(rank)
                rankCode[rank] = code
            }
            ids.append(id)
            parentIDs.append(parentID ?? 0)
            rankCodes.append(code)
            nameBytes.append(contentsOf: name)
            nameEnds.append(UInt32(nameBytes.count))
        }

        /// The nodes in name order (bytes of the name, then id), as ids, when the
        /// caller has it already (a database index walks it faster than 2.6 M names
        /// are sorted); without it ``build()`` sorts.
        var nameOrder: [Int32]?

        /// Sets the name order from ids listed in it; every appended id exactly once.
        public mutating func setNameOrder(_ idsInNameOrder: [TaxonID]) throws(BuildError) {
            var iterator = idsInNameOrder.makeIterator()
            try setNameOrder { iterator.next() }
        }

        /// The same from ids handed one at a time (a database cursor: no array of them).
        public mutating func setNameOrder(next: () -> TaxonID?) throws(BuildError) {
            var order = [Int32]()
            order.reserveCapacity(ids.count)
            var seen = [Bool](repeating: false, count: ids.count)
            while let id = next() {
                guard order.count < ids.count, let position = ids.position(ofSorted: id), !seen[position] else {
                    throw .nameOrderIncomplete
                }
                seen[position] = true
                order.append(Int32(position))
            }
            guard order.count == ids.count else { throw .nameOrderIncomplete }
            nameOrder = order
        }

        public func build() throws(BuildError) -> FullTaxonTree {
            try FullTaxonTree(self)
        }
    }

    /// Ids in ascending order.
    private let ids: [TaxonID]
    /// Position of each node's parent, -1 for a root.
    private let parents: [Int32]
    /// Edges from the node's root.
    private let depths: [UInt16]
    private let rankCodes: [UInt8]
    /// Distinct rank names, in order of first appearance.
    public let rankNames: [String]
    /// ``TaxonRank/level`` of a rank code's main rank, -1 when not one of the eight.
    private let mainLevelOfCode: [Int8]
    private let nameBytes: [UInt8]
    private let nameEnds: [UInt32]
    /// Positions of the roots (one for NCBI: the root 1).
    public let roots: [Int]
    /// Nodes sorted by the bytes of their name (ties in id order), for exact lookups
    /// by name without a query: 10 MB, where a `[String: …]` of 2.6 M names is 200.
    private let nameOrder: [Int32]
    /// Open-addressing hash of each distinct name → the position in ``nameOrder``
    /// where its equal range starts, plus one (0: empty). One or two cache misses per
    /// lookup where the binary search of 2.6 M names takes twenty (measured: 5 µs →
    /// under 2 µs per name in a batch of random names).
    private let nameSlots: [UInt32]
    /// Children of node `i`: `children[childStart[i] ..< childStart[i + 1]]`, in id order.
    private let childStart: [Int32]
    private let children: [Int32]

    private init(_ builder: Builder) throws(BuildError) {
        let count = builder.ids.count
        var parents = [Int32](repeating: -1, count: count)
        var roots: [Int] = []
        for i in 0..<count {
            let parent = builder.parentIDs[i]
            if parent == 0 || parent == builder.ids[i] {
                roots.append(i)
                continue
            }
            guard let position = builder.ids.position(ofSorted: parent) else {
                throw .unknownParent(child: builder.ids[i], parent: parent)
            }
            parents[i] = Int32(position)
        }
        // Depths: walk up to a node whose depth is known, then fill the path on the way down.
        var depths = [UInt16](repeating: 0, count: count)
        var known = [Bool](repeating: false, count: count)
        for root in roots { known[root] = true }
        var path: [Int32] = []
        for start in 0..<count where !known[start] {
            path.removeAll(keepingCapacity: true)
            var node = Int32(start)
            while !known[Int(node)] {
                path.append(node)
                guard path.count <= count else { throw .cycle(builder.ids[start]) }
                node = parents[Int(node)]
            }
            var depth = depths[Int(node)]
            for step in path.reversed() {
                guard depth < UInt16.max else { throw .cycle(builder.ids[start]) }
                depth += 1
                depths[Int(step)] = depth
                known[Int(step)] = true
            }
        }
        var childStart = [Int32](repeating: 0, count: count + 1)
        for i in 0..<count where parents[i] >= 0 { childStart[Int(parents[i]) + 1] += 1 }
        for i in 0..<count { childStart[i + 1] += childStart[i] }
        var fill = childStart
        var children = [Int32](repeating: 0, count: Int(childStart[count]))
        for i in 0..<count where parents[i] >= 0 {
            let parent = Int(parents[i])
            children[Int(fill[parent])] = Int32(i)
            fill[parent] += 1
        }
        self.childStart = childStart
        self.children = children
        nameOrder = builder.nameOrder ?? Self.sortedByName(count: count, bytes: builder.nameBytes, ends: builder.nameEnds)
        nameSlots = Self.nameSlots(order: nameOrder, bytes: builder.nameBytes, ends: builder.nameEnds)
        ids = builder.ids
        self.parents = parents
        self.depths = depths
        rankCodes = builder.rankCodes
        rankNames = builder.rankNames
        mainLevelOfCode = builder.rankNames.map { name in
            // `TaxonRank(sourceRank:)` maps NCBI's superkingdom to domain; the eight-rank
            // view keeps exactly the nodes whose rank maps.
            TaxonRank(sourceRank: name).map { Int8($0.level) } ?? -1
        }
        nameBytes = builder.nameBytes
        nameEnds = builder.nameEnds
        self.roots = roots
    }

    /// -1, 0 or 1 as name `a` sorts before, with or after `b` (bytewise, a prefix first).
    private static func compare(_ base: UnsafePointer<UInt8>, _ ends: UnsafePointer<UInt32>, _ a: Int,
                                _ other: UnsafePointer<UInt8>, _ otherCount: Int) -> Int {
        let start = a == 0 ? 0 : Int(ends[a - 1])
        let count = Int(ends[a]) - start
        let common = min(count, otherCount)
        let order = common == 0 ? 0 : memcmp(base + start, other, common)
        if order != 0 { return order < 0 ? -1 : 1 }
        return count == otherCount ? 0 : (count < otherCount ? -1 : 1)
    }

    private static func sortedByName(count: Int, bytes: [UInt8], ends: [UInt32]) -> [Int32] {
        var order = (0..<Int32(count)).map { $0 }
        bytes.withUnsafeBufferPointer { bytes in
            ends.withUnsafeBufferPointer { ends in
                guard let base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1), let endBase = ends.baseAddress else { return }
                order.sort { a, b in
                    let start = b == 0 ? 0 : Int(endBase[Int(b) - 1])
                    let order = compare(base, endBase, Int(a), base + start, Int(endBase[Int(b)]) - start)
                    return order != 0 ? order < 0 : a < b
                }
            }
        }
        return order
    }

    /// FNV-1a over the name's bytes.
    private static func hash(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for index in 0..<count { hash = (hash ^ UInt64(bytes[index])) &* 0x100_0000_01b3 }
        return hash
    }

    private static func nameSlots(order: [Int32], bytes: [UInt8], ends: [UInt32]) -> [UInt32] {
        var capacity = 16
        while capacity < order.count * 3 / 2 + 16 { capacity *= 2 }
        var slots = [UInt32](repeating: 0, count: capacity)
        bytes.withUnsafeBufferPointer { bytes in
            ends.withUnsafeBufferPointer { ends in
                guard let endBase = ends.baseAddress, let base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1) else { return }
                var previous = -1
                for (position, node) in order.enumerated() {
                    let start = node == 0 ? 0 : Int(endBase[Int(node) - 1])
                    let count = Int(endBase[Int(node)]) - start
                    // Only the first node of each run of equal names gets a slot.
                    if previous >= 0, compare(base, endBase, previous, base + start, count) == 0 {
                        previous = Int(node)
                        continue
                    }
                    previous = Int(node)
                    var slot = Int(hash(base + start, count) & UInt64(capacity - 1))
                    while slots[slot] != 0 { slot = (slot + 1) & (capacity - 1) }
                    slots[slot] = UInt32(position + 1)
                }
            }
        }
        return slots
    }

    /// Calls `body` with every node in name order (bytes of the name, then id).
    public func forEachInNameOrder(_ body: (Int) -> Void) {
        for node in nameOrder { body(Int(node)) }
    }

    /// Every node whose name is exactly `name` (bytewise), in id order.
    public func nodes(named name: String) -> [Int] {
        var name = name
        return name.withUTF8 { query -> [Int] in
            nameBytes.withUnsafeBufferPointer { bytes in
                nameEnds.withUnsafeBufferPointer { ends in
                    guard let endBase = ends.baseAddress, let base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1),
                          let queryBase = query.baseAddress ?? UnsafePointer(bitPattern: 1) else { return [] }
                    let mask = nameSlots.count - 1
                    var slot = Int(Self.hash(queryBase, query.count) & UInt64(mask))
                    var low = -1
                    while nameSlots[slot] != 0 {
                        let position = Int(nameSlots[slot]) - 1
                        if Self.compare(base, endBase, Int(nameOrder[position]), queryBase, query.count) == 0 {
                            low = position
                            break
                        }
                        slot = (slot + 1) & mask
                    }
                    guard low >= 0 else { return [] }
                    var found: [Int] = []
                    while low < nameOrder.count,
                          Self.compare(base, endBase, Int(nameOrder[low]), queryBase, query.count) == 0 {
                        found.append(Int(nameOrder[low]))
                        low += 1
                    }
                    return found
                }
            }
        }
    }

    public var count: Int { ids.count }

    /// The position of `id`, nil when the tree has no such node.
    public func index(of id: TaxonID) -> Int? { ids.position(ofSorted: id) }

    public func id(at node: Int) -> TaxonID { ids[node] }

    public func parent(of node: Int) -> Int? {
        let parent = parents[node]
        return parent < 0 ? nil : Int(parent)
    }

    public func depth(of node: Int) -> Int { Int(depths[node]) }

    /// The rank as the source spells it (`no rank`, `clade`, `superkingdom`, …).
    public func rank(of node: Int) -> String { rankNames[Int(rankCodes[node])] }

    /// The main rank the eight-rank view gives this node, nil when it has none.
    public func mainRank(of node: Int) -> TaxonRank? {
        let level = mainLevelOfCode[Int(rankCodes[node])]
        return level < 0 ? nil : TaxonRank.allCases[Int(level)]
    }

    public func name(of node: Int) -> String {
        let start = node == 0 ? 0 : Int(nameEnds[node - 1])
        return String(decoding: nameBytes[start..<Int(nameEnds[node])], as: UTF8.self)
    }

    public func childCount(of node: Int) -> Int { Int(childStart[node + 1] - childStart[node]) }

    /// The children of `node`, in id order.
    public func children(of node: Int) -> [Int] {
        children[Int(childStart[node])..<Int(childStart[node + 1])].map(Int.init)
    }

    /// The children of `node` in name order (bytes of the name, then id), one page of
    /// them, and how many there are.
    public func children(of node: Int, offset: Int, limit: Int) -> (page: [Int], total: Int) {
        let all = children(of: node)
        guard offset < all.count else { return ([], all.count) }
        let names = all.map { child in
            let start = child == 0 ? 0 : Int(nameEnds[child - 1])
            return nameBytes[start..<Int(nameEnds[child])]
        }
        let order = all.indices.sorted { a, b in
            names[a].elementsEqual(names[b]) ? all[a] < all[b] : names[a].lexicographicallyPrecedes(names[b])
        }
        return (order[offset..<min(all.count, offset + limit)].map { all[$0] }, all.count)
    }

    /// The subtree of `node` in preorder (children in id order), with each node's
    /// depth below `node`; nil when it has more than `limit` nodes (the walk stops there).
    public func subtree(of node: Int, limit: Int) -> (nodes: [Int], depths: [Int])? {
        var nodes: [Int] = [], depths: [Int] = []
        var stack: [(Int32, Int32)] = [(Int32(node), 0)]
        while let (current, depth) = stack.popLast() {
            guard nodes.count < limit else { return nil }
            nodes.append(Int(current))
            depths.append(Int(depth))
            var child = Int(childStart[Int(current) + 1]) - 1
            while child >= Int(childStart[Int(current)]) {
                stack.append((children[child], depth + 1))
                child -= 1
            }
        }
        return (nodes, depths)
    }

    /// The `n` nodes of rank `species` (as the source spells it) closest to `target`
    /// in edges, then by name, then id; each with its common ancestor with `target`.
    /// Walks up from `target`, each ancestor's other subtrees pruned at the distance
    /// of the n-th found; stops after `maximumCandidates` nodes (`truncated`).
    public func closestSpecies(of target: Int, n: Int, maximumCandidates: Int)
        -> (relatives: [(node: Int, ancestor: Int, distance: Int)], examined: Int, truncated: Bool) {
        var found: [(node: Int, ancestor: Int, distance: Int, name: String)] = []
        func worse(_ a: (node: Int, ancestor: Int, distance: Int, name: String),
                   _ b: (node: Int, ancestor: Int, distance: Int, name: String)) -> Bool {
            a.distance != b.distance ? a.distance > b.distance : (a.name != b.name ? a.name > b.name : id(at: a.node) > id(at: b.node))
        }
        func bound() -> Int { found.count < n ? Int.max : found.last!.distance }
        func offer(_ node: Int, ancestor: Int, distance: Int) {
            guard distance <= bound() else { return }
            let candidate = (node: node, ancestor: ancestor, distance: distance, name: name(of: node))
            let position = found.firstIndex { worse($0, candidate) } ?? found.count
            found.insert(candidate, at: position)
            if found.count > n { found.removeLast() }
        }
        var examined = 0
        /// Species in the subtrees of `ancestor`'s children other than `skip`, `up` edges above the target.
        func search(below ancestor: Int, skipping skip: Int?, up: Int) -> Bool {
            var stack: [(Int, Int)] = []
            for child in childStart[ancestor]..<childStart[ancestor + 1] where Int(children[Int(child)]) != skip {
                stack.append((Int(children[Int(child)]), up + 1))
            }
            while let (node, distance) = stack.popLast() {
                guard distance <= bound() else { continue }
                examined += 1
                if examined > maximumCandidates { return false }
                if rank(of: node) == "species" { offer(node, ancestor: ancestor, distance: distance) }
                for child in childStart[node]..<childStart[node + 1] { stack.append((Int(children[Int(child)]), distance + 1)) }
            }
            return true
        }
        // Below the target first (a species may hold species: NCBI's species under species), then up.
        guard search(below: target, skipping: nil, up: 0) else { return (found.map { ($0.node, $0.ancestor, $0.distance) }, examined, true) }
        var previous = target
        var up = 0
        while let ancestor = parent(of: previous) {
            up += 1
            if up > bound() { break }
            examined += 1
            if rank(of: ancestor) == "species" { offer(ancestor, ancestor: ancestor, distance: up) }
            guard search(below: ancestor, skipping: previous, up: up) else {
                return (found.map { ($0.node, $0.ancestor, $0.distance) }, examined, true)
            }
            previous = ancestor
        }
        return (found.map { ($0.node, $0.ancestor, $0.distance) }, examined, false)
    }

    /// The node's ancestors, root first, the node itself excluded.
    public func ancestors(of node: Int) -> [Int] {
        var result: [Int] = []
        result.reserveCapacity(depth(of: node))
        var current = parents[node]
        while current >= 0 {
            result.append(Int(current))
            current = parents[Int(current)]
        }
        result.reverse()
        return result
    }

    /// The lowest common ancestor (a node is its own ancestor), nil when the two
    /// are under different roots.
    public func lowestCommonAncestor(_ a: Int, _ b: Int) -> Int? {
        var a = Int32(a), b = Int32(b)
        while depths[Int(a)] > depths[Int(b)] { a = parents[Int(a)] }
        while depths[Int(b)] > depths[Int(a)] { b = parents[Int(b)] }
        while a != b {
            a = parents[Int(a)]
            b = parents[Int(b)]
            if a < 0 || b < 0 { return nil }
        }
        return Int(a)
    }
}
