import Glibc

/// The one in-memory tree: every node of the source (NCBI's 2.6 M) with its rank
/// as the source spells it, and the eight-rank view as two more arrays over the
/// same nodes (each node's main rank, and its nearest ancestor of a main rank).
///
/// Lineages, common ancestors, paths, subtrees, children pages and closest
/// relatives are each written once, for either ``View``: ``View/all`` walks the
/// source's own parents, ``View/main`` the view's. Both the server and the
/// pipeline use it (the pipeline's precomputed relatives are an index over it,
/// ``RelativesIndex``), so the two cannot drift apart.
///
/// Flat arrays keep it small: names are one UTF-8 buffer with end offsets (about
/// 60 MB for NCBI, where 2.6 M `String`s each cost a heap object), ranks a code
/// into the few distinct rank names. Nodes are addressed by their position in
/// ascending id order; children lists are in name order (bytes of the scientific
/// name, then id), so a page of children is a slice, and ``nameRank`` breaks ties
/// between relatives without comparing strings.
public struct TaxonomyTree: Sendable {
    /// Which parents a walk follows.
    public enum View: Sendable, Hashable {
        /// The eight ranks of the browsing view: a node's parent is its nearest
        /// ancestor of a main rank (for a node outside the view too, so that its
        /// main-rank lineage is its nearest main ancestor's, that one included).
        case main
        /// The source's own tree.
        case all
    }

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
            case .cycle(let id): "a cycle: taxon \(id) is its own ancestor"
            case .nameOrderIncomplete: "the name order does not list every node exactly once"
            }
        }
    }

    /// Appends nodes in ascending id order (as `SELECT … ORDER BY id` gives them),
    /// then ``build()``.
    ///
    /// The view is either derived (a node is in it when its rank is one of the
    /// eight, ``TaxonRank/init(sourceRank:)``; its view parent is its nearest such
    /// ancestor) or given per node, as a database stores it (`main_rank`,
    /// `main_parent_id`): then a node appended without a main rank is outside the
    /// view, and its view parent is still derived.
    public struct Builder: Sendable {
        var ids: [TaxonID] = []
        var parentIDs: [TaxonID] = []
        var rankCodes: [UInt8] = []
        var rankNames: [String] = []
        var rankCode: [String: UInt8] = [:]
        var rankBytes: [[UInt8]] = []
        var lastCode: UInt8 = 0
        var nameBytes: [UInt8] = []
        var nameEnds: [UInt32] = []
        /// Given per node (``append(id:parentID:rank:name:mainRank:mainParentID:)``); nil: derived.
        var mainLevels: [Int8]?
        var mainParentIDs: [TaxonID] = []
        var nameOrder: [Int32]?
        /// Made by ``setNameOrder(next:)``; ``build()`` reuses it (appending ends with the name order).
        var positions: IDPositions?

        public init(capacity: Int = 0) {
            ids.reserveCapacity(capacity)
            parentIDs.reserveCapacity(capacity)
            rankCodes.reserveCapacity(capacity)
            nameEnds.reserveCapacity(capacity)
            nameBytes.reserveCapacity(capacity * 24)
        }

        /// A node whose place in the view follows from its rank.
        /// - Parameter parentID: 0, nil or the node's own id for a root (NCBI's
        ///   `nodes.dmp` writes its root as its own parent).
        public mutating func append(id: TaxonID, parentID: TaxonID?, rank: String,
                                    name: some Collection<UInt8>) throws(BuildError) {
            try appendNode(id: id, parentID: parentID, rank: rank, name: name)
        }

        /// A node whose place in the view is given: its main rank (nil: outside the
        /// view) and its view parent (nil or 0: a root of the view).
        public mutating func append(id: TaxonID, parentID: TaxonID?, rank: String, name: some Collection<UInt8>,
                                    mainRank: TaxonRank?, mainParentID: TaxonID?) throws(BuildError) {
            if mainLevels == nil {
                mainLevels = []
                mainLevels!.reserveCapacity(ids.capacity)
                mainParentIDs.reserveCapacity(ids.capacity)
            }
            try appendNode(id: id, parentID: parentID, rank: rank, name: name)
            mainLevels!.append(mainRank.map { Int8($0.level) } ?? -1)
            mainParentIDs.append(mainParentID ?? 0)
        }

        /// The same from the bytes a database cursor hands out (no `String` is made
        /// per node: 2.6 M of them cost a second of a start).
        public mutating func append(id: TaxonID, parentID: TaxonID?, rank: UnsafeBufferPointer<UInt8>,
                                    name: UnsafeBufferPointer<UInt8>, mainRank: TaxonRank?, mainParentID: TaxonID?) throws(BuildError) {
            if mainLevels == nil {
                mainLevels = []
                mainLevels!.reserveCapacity(ids.capacity)
                mainParentIDs.reserveCapacity(ids.capacity)
            }
            try appendNode(id: id, parentID: parentID, rankCode: code(ofRank: rank), name: name)
            mainLevels!.append(mainRank.map { Int8($0.level) } ?? -1)
            mainParentIDs.append(mainParentID ?? 0)
        }

        /// The code of a rank given as bytes: the last one used first (siblings share
        /// ranks), then the few seen so far.
        private mutating func code(ofRank bytes: UnsafeBufferPointer<UInt8>) throws(BuildError) -> UInt8 {
            if Int(lastCode) < rankBytes.count, rankBytes[Int(lastCode)].elementsEqual(bytes) { return lastCode }
            if let known = rankBytes.firstIndex(where: { $0.elementsEqual(bytes) }) {
                lastCode = UInt8(known)
                return lastCode
            }
            lastCode = try code(ofRank: String(decoding: bytes, as: UTF8.self))
            return lastCode
        }

        private mutating func code(ofRank rank: String) throws(BuildError) -> UInt8 {
            if let known = rankCode[rank] { return known }
            guard rankNames.count < 255 else { throw .tooManyRanks }
            let code = UInt8(rankNames.count)
            rankNames.append(rank)
            rankBytes.append(Array(rank.utf8))
            rankCode[rank] = code
            return code
        }

        private mutating func appendNode(id: TaxonID, parentID: TaxonID?, rank: String,
                                         name: some Collection<UInt8>) throws(BuildError) {
            try appendNode(id: id, parentID: parentID, rankCode: code(ofRank: rank), name: name)
        }

        private mutating func appendNode(id: TaxonID, parentID: TaxonID?, rankCode code: UInt8,
                                         name: some Collection<UInt8>) throws(BuildError) {
            if let last = ids.last, last >= id { throw .idsNotAscending(id) }
            positions = nil
            ids.append(id)
            parentIDs.append(parentID ?? 0)
            rankCodes.append(code)
            nameBytes.append(contentsOf: name)
            nameEnds.append(UInt32(nameBytes.count))
        }

        /// Sets the name order (bytes of the name, then id) from ids listed in it,
        /// when the caller has it already (a database index walks it faster than
        /// 2.6 M names are sorted); without it ``build()`` sorts.
        public mutating func setNameOrder(_ idsInNameOrder: [TaxonID]) throws(BuildError) {
            var iterator = idsInNameOrder.makeIterator()
            try setNameOrder { iterator.next() }
        }

        /// The same from ids handed one at a time (a database cursor: no array of them).
        public mutating func setNameOrder(next: () -> TaxonID?) throws(BuildError) {
            var order = [Int32]()
            order.reserveCapacity(ids.count)
            var seen = [Bool](repeating: false, count: ids.count)
            let positions = IDPositions(ids)
            self.positions = positions  // the build looks every parent up in it again
            while let id = next() {
                guard order.count < ids.count, let position = positions.position(of: id), !seen[position] else {
                    throw .nameOrderIncomplete
                }
                seen[position] = true
                order.append(Int32(position))
            }
            guard order.count == ids.count else { throw .nameOrderIncomplete }
            nameOrder = order
        }

        /// Consumes the builder: its arrays are released as the tree takes their
        /// place (the ids and names move into the tree), so that building NCBI's
        /// tree never holds two copies of it.
        public consuming func build() throws(BuildError) -> TaxonomyTree {
            try TaxonomyTree(self)
        }
    }

    /// What keeps every array's memory: the ``ImageMapping`` of the image the tree was
    /// read from, or the ``ArrayKeeper`` of the arrays it was built into. Its arrays
    /// (``TreeArray``) are a pointer and a count each, valid while this lives.
    let storage: any AnyObject & Sendable
    /// Ids in ascending order.
    let ids: TreeArray<TaxonID>
    /// Where each id is in ``ids`` (``index(of:)``).
    let idLookup: SortedIDLookup
    /// Position of each node's parent, -1 for a root.
    let parents: TreeArray<Int32>
    /// Edges from the node's root.
    let depths: TreeArray<UInt16>
    let rankCodes: TreeArray<UInt8>
    /// Distinct rank names, in order of first appearance.
    public let rankNames: [String]
    /// The code of the rank `species`, if the tree has one.
    let speciesCode: Int16
    /// ``TaxonRank/level`` of each node's main rank, -1 outside the view.
    let mainLevels: TreeArray<Int8>
    /// Each node's nearest ancestor in the view (its view parent), -1 for none.
    let mainParents: TreeArray<Int32>
    /// Nodes of the view strictly above the node on its view path.
    let mainDepths: TreeArray<UInt8>
    let nameBytes: TreeArray<UInt8>
    let nameEnds: TreeArray<UInt32>
    /// Nodes sorted by the bytes of their name (ties in id order).
    let nameOrder: TreeArray<Int32>
    /// Each node's position in ``nameOrder``: relatives at one distance are ranked by it.
    let nameRank: TreeArray<Int32>
    /// Open-addressing hash of each distinct name → the position in ``nameOrder``
    /// where its equal range starts, plus one (0: empty). One or two cache misses per
    /// lookup where the binary search of 2.6 M names takes twenty (measured: 5 µs →
    /// under 2 µs per name in a batch of random names).
    let nameSlots: TreeArray<UInt32>
    /// Children of node `i` in name order: `children[childStart[i] ..< childStart[i + 1]]`.
    let childStart: TreeArray<Int32>
    let children: TreeArray<Int32>
    /// The same for the view: the view nodes whose view parent is `i`.
    let mainChildStart: TreeArray<Int32>
    let mainChildren: TreeArray<Int32>
    /// Roots of each view, in name order.
    let allRoots: TreeArray<Int32>
    let mainRoots: TreeArray<Int32>
    /// The whole tree in preorder, children in id order (ete4's and taxonkit's order):
    /// the nodes, each node's position, where its subtree ends, and each position's rank
    /// code. A taxon's descendants are one range of it, so `descendants` pages through
    /// NCBI's root (2.6 M nodes) in a scan of bytes, not a walk (13 bytes a node).
    let preorder: TreeArray<Int32>
    let preorderPosition: TreeArray<Int32>
    let subtreeEnd: TreeArray<Int32>
    let preorderRanks: TreeArray<UInt8>

    private init(_ builder: consuming Builder) throws(BuildError) {
        let count = builder.ids.count
        let ids = builder.ids
        let positions = builder.positions ?? IDPositions(ids)
        builder.positions = nil
        var parents = [Int32](repeating: -1, count: count)
        for i in 0..<count {
            let parent = builder.parentIDs[i]
            guard parent != 0, parent != ids[i] else { continue }
            guard let position = positions.position(of: parent) else {
                throw .unknownParent(child: ids[i], parent: parent)
            }
            parents[i] = Int32(position)
        }
        builder.parentIDs = []
        let depths = try Self.depths(parents: parents, ids: ids)
        let mainLevelOfCode = builder.rankNames.map { TaxonRank(sourceRank: $0).map { Int8($0.level) } ?? -1 }
        let mainLevels = builder.mainLevels ?? builder.rankCodes.map { mainLevelOfCode[Int($0)] }

        // View parents: given ones for view nodes, else the nearest view ancestor
        // (nodes in order of depth, so a parent is settled before its children).
        var mainParents = [Int32](repeating: -1, count: count)
        var byDepth = [Int32](repeating: 0, count: count)
        do {
            var start = [Int](repeating: 0, count: Int(depths.max() ?? 0) + 2)
            for depth in depths { start[Int(depth) + 1] += 1 }
            for level in 1..<start.count { start[level] += start[level - 1] }
            for i in 0..<count {
                byDepth[start[Int(depths[i])]] = Int32(i)
                start[Int(depths[i])] += 1
            }
        }
        for node in byDepth {
            let i = Int(node), parent = Int(parents[i])
            if let given = builder.mainLevels, given[i] >= 0 {
                let id = builder.mainParentIDs[i]
                guard id != 0, id != ids[i] else { continue }
                guard let position = positions.position(of: id) else { throw .unknownParent(child: ids[i], parent: id) }
                mainParents[i] = Int32(position)
            } else if parent >= 0 {
                mainParents[i] = mainLevels[parent] >= 0 ? Int32(parent) : mainParents[parent]
            }
        }
        builder.mainParentIDs = []
        builder.mainLevels = nil
        // View depths: view nodes by walking their (given) view parents, then the others.
        var mainDepths = [UInt8](repeating: 0, count: count)
        var known = [Bool](repeating: false, count: count)
        var path: [Int32] = []
        for start in 0..<count where mainLevels[start] >= 0 && !known[start] {
            path.removeAll(keepingCapacity: true)
            var node = Int32(start)
            while node >= 0, !known[Int(node)] {
                path.append(node)
                guard path.count <= 255 else { throw .cycle(ids[start]) }
                node = mainParents[Int(node)]
            }
            var depth = node < 0 ? -1 : Int(mainDepths[Int(node)])
            for step in path.reversed() {
                depth += 1
                guard depth <= Int(UInt8.max) else { throw .cycle(ids[start]) }
                mainDepths[Int(step)] = UInt8(depth)
                known[Int(step)] = true
            }
        }
        for node in byDepth where mainLevels[Int(node)] < 0 {
            let parent = Int(mainParents[Int(node)])
            mainDepths[Int(node)] = parent < 0 ? 0 : mainDepths[parent] &+ 1
        }
        known = []
        byDepth = []

        let nameOrder = builder.nameOrder ?? Self.sortedByName(count: count, bytes: builder.nameBytes, ends: builder.nameEnds)
        var nameRank = [Int32](repeating: 0, count: count)
        for (rank, node) in nameOrder.enumerated() { nameRank[Int(node)] = Int32(rank) }
        // Children lists, filled in name order so that each comes out sorted.
        func lists(parents: [Int32], member: (Int) -> Bool) -> (start: [Int32], children: [Int32], roots: [Int32]) {
            var start = [Int32](repeating: 0, count: count + 1)
            for i in 0..<count where member(i) && parents[i] >= 0 { start[Int(parents[i]) + 1] += 1 }
            for i in 0..<count { start[i + 1] += start[i] }
            var fill = start
            var children = [Int32](repeating: 0, count: Int(start[count]))
            var roots: [Int32] = []
            for node in nameOrder where member(Int(node)) {
                let parent = Int(parents[Int(node)])
                if parent < 0 {
                    roots.append(node)
                } else {
                    children[Int(fill[parent])] = node
                    fill[parent] += 1
                }
            }
            return (start, children, roots)
        }
        let all = lists(parents: parents) { _ in true }
        let view = lists(parents: mainParents) { mainLevels[$0] >= 0 }
        let keeper = ArrayKeeper()
        storage = keeper
        self.ids = TreeArray(ids, keptBy: keeper)
        idLookup = SortedIDLookup(self.ids)
        self.parents = TreeArray(parents, keptBy: keeper)
        self.depths = TreeArray(depths, keptBy: keeper)
        rankCodes = TreeArray(builder.rankCodes, keptBy: keeper)
        rankNames = builder.rankNames
        speciesCode = builder.rankCode["species"].map(Int16.init) ?? -1
        self.mainLevels = TreeArray(mainLevels, keptBy: keeper)
        self.mainParents = TreeArray(mainParents, keptBy: keeper)
        self.mainDepths = TreeArray(mainDepths, keptBy: keeper)
        nameBytes = TreeArray(builder.nameBytes, keptBy: keeper)
        nameEnds = TreeArray(builder.nameEnds, keptBy: keeper)
        self.nameOrder = TreeArray(nameOrder, keptBy: keeper)
        self.nameRank = TreeArray(nameRank, keptBy: keeper)
        nameSlots = TreeArray(Self.nameSlots(order: nameOrder, bytes: builder.nameBytes, ends: builder.nameEnds), keptBy: keeper)
        childStart = TreeArray(all.start, keptBy: keeper)
        children = TreeArray(all.children, keptBy: keeper)
        allRoots = TreeArray(all.roots, keptBy: keeper)
        mainChildStart = TreeArray(view.start, keptBy: keeper)
        mainChildren = TreeArray(view.children, keptBy: keeper)
        mainRoots = TreeArray(view.roots, keptBy: keeper)
        let (preorder, preorderPosition, subtreeEnd) = Self.preorderByID(parents: parents)
        self.preorder = TreeArray(preorder, keptBy: keeper)
        self.preorderPosition = TreeArray(preorderPosition, keptBy: keeper)
        self.subtreeEnd = TreeArray(subtreeEnd, keptBy: keeper)
        let codes = builder.rankCodes
        preorderRanks = TreeArray(preorder.map { codes[Int($0)] }, keptBy: keeper)
    }

    /// The preorder of the forest with children (and roots) in id order, which is node
    /// order: children lists filled by a counting sort in node order come out sorted. Each
    /// node's position in it, and the position after its subtree's last node.
    private static func preorderByID(parents: [Int32]) -> (order: [Int32], position: [Int32], end: [Int32]) {
        let count = parents.count
        var start = [Int32](repeating: 0, count: count + 1)
        for parent in parents where parent >= 0 { start[Int(parent) + 1] += 1 }
        for i in 0..<count { start[i + 1] += start[i] }
        var fill = start
        var children = [Int32](repeating: 0, count: Int(start[count]))
        for i in 0..<count where parents[i] >= 0 {
            let parent = Int(parents[i])
            children[Int(fill[parent])] = Int32(i)
            fill[parent] += 1
        }
        fill = []
        var order = [Int32](), position = [Int32](repeating: 0, count: count), end = [Int32](repeating: 0, count: count)
        order.reserveCapacity(count)
        // (node, next child to visit): a node's end is known when its last child is done.
        var stack: [(node: Int32, next: Int32)] = []
        for root in 0..<count where parents[root] < 0 {
            position[root] = Int32(order.count)
            order.append(Int32(root))
            stack.append((Int32(root), start[root]))
            while let (node, next) = stack.last {
                if next < start[Int(node) + 1] {
                    stack[stack.count - 1].next += 1
                    let child = children[Int(next)]
                    position[Int(child)] = Int32(order.count)
                    order.append(child)
                    stack.append((child, start[Int(child)]))
                } else {
                    end[Int(node)] = Int32(order.count)
                    stack.removeLast()
                }
            }
        }
        return (order, position, end)
    }

    /// Edges from each node's root: walk up to a node whose depth is known, then
    /// fill the path on the way down.
    private static func depths(parents: [Int32], ids: [TaxonID]) throws(BuildError) -> [UInt16] {
        let count = parents.count
        var depths = [UInt16](repeating: 0, count: count)
        var known = [Bool](repeating: false, count: count)
        for i in 0..<count where parents[i] < 0 { known[i] = true }
        var path: [Int32] = []
        for start in 0..<count where !known[start] {
            path.removeAll(keepingCapacity: true)
            var node = Int32(start)
            while !known[Int(node)] {
                path.append(node)
                guard path.count <= count else { throw .cycle(ids[start]) }
                node = parents[Int(node)]
            }
            var depth = depths[Int(node)]
            for step in path.reversed() {
                guard depth < UInt16.max else { throw .cycle(ids[start]) }
                depth += 1
                depths[Int(step)] = depth
                known[Int(step)] = true
            }
        }
        return depths
    }

    public var count: Int { ids.count }

    /// The position of `id`, nil when the tree has no such node.
    public func index(of id: TaxonID) -> Int? { idLookup.position(of: id, in: ids) }

    public func id(at node: Int) -> TaxonID { ids[node] }

    /// The rank as the source spells it (`no rank`, `clade`, `superkingdom`, …).
    public func rank(of node: Int) -> String { rankNames[Int(rankCodes[node])] }

    /// The node's rank as its position in ``rankNames``: a table indexed by it answers
    /// per rank without hashing the rank's name for every node.
    public func rankCode(of node: Int) -> Int { Int(rankCodes[node]) }

    /// The node's main rank: nil when it is outside the eight-rank view.
    public func mainRank(of node: Int) -> TaxonRank? {
        let level = mainLevels[node]
        return level < 0 ? nil : TaxonRank.allCases[Int(level)]
    }

    public func isInView(_ node: Int) -> Bool { mainLevels[node] >= 0 }

    /// How many nodes have main rank `rank`: one pass over a byte per node (a few
    /// milliseconds on NCBI's tree, where SQL walks 2.1 M index entries).
    public func count(ofMainRank rank: TaxonRank) -> Int {
        let level = Int8(rank.level)
        return mainLevels.withUnsafeBufferPointer { levels in levels.reduce(0) { $0 + ($1 == level ? 1 : 0) } }
    }

    /// Whether the node is a species of `view`: of main rank species in the view,
    /// of the source's rank `species` on the whole tree.
    @inline(__always)
    public func isSpecies(_ node: Int, in view: View) -> Bool {
        view == .main ? mainLevels[node] == Int8(TaxonRank.species.level) : Int16(rankCodes[node]) == speciesCode
    }

    public func name(of node: Int) -> String {
        let start = node == 0 ? 0 : Int(nameEnds[node - 1])
        return String(decoding: nameBytes[start..<Int(nameEnds[node])], as: UTF8.self)
    }
}
