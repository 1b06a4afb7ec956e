import Glibc

/// The tree as a file: its arrays as they are in memory, so that a start reads
/// NCBI's tree (2.6 M nodes, about 250 MB) in a fraction of a second instead of
/// building it from the database's rows (1 s of SQL and 1 s of building, more
/// under load).
///
/// An image is a cache of one database file, not part of it: a signed database
/// stays as the pipeline wrote it (an image in it would change almost every page
/// between two releases, and a delta with it). The image records which file it
/// was made from (``key``: the caller's choice, in practice the database's path
/// and fingerprint), and ``read(from:expectedKey:)`` refuses any other.
///
/// Reading checks every array against the others before a tree is made of them
/// (lengths, positions in range, parents that form a forest, permutations that
/// are permutations, children lists that list children), so a damaged or foreign
/// file is refused (``ImageError``) and never makes a walk trap or loop: the
/// caller then builds the tree from the database as without an image.
///
/// Layout (little-endian, native on every platform STOL builds for): the magic
/// `STOLTREE`, the version, the key, the rank names, then each array as its
/// element count and its bytes, each part padded to 8 bytes.
extension TaxonomyTree {
    public enum ImageError: Error, Equatable, CustomStringConvertible {
        /// Not an image of this version (another program's file, an older STOL's).
        case notAnImage
        /// An image of another database file (or of this path before it changed).
        case otherDatabase
        /// Shorter than its header says, or a read failed.
        case truncated
        /// An array that does not agree with the others.
        case inconsistent(String)
        case io(Int32)

        public var description: String {
            switch self {
            case .notAnImage: "not a tree image of this version"
            case .otherDatabase: "a tree image of another database file"
            case .truncated: "a truncated tree image"
            case .inconsistent(let what): "an inconsistent tree image: \(what)"
            case .io(let code): "cannot read the tree image: \(String(cString: strerror(code)))"
            }
        }
    }

    static let imageMagic = Array("STOLTREE".utf8)
    /// Bumped whenever a field of the tree or its meaning changes.
    static let imageVersion: UInt32 = 1

    /// Writes the image, a part at a time, through `append`.
    public func writeImage(key: String, _ append: (UnsafeRawBufferPointer) throws -> Void) throws {
        var header = ImageHeaderWriter()
        header.bytes(Self.imageMagic)
        header.integer(Self.imageVersion)
        header.string(key)
        header.integer(UInt32(rankNames.count))
        for name in rankNames { header.string(name) }
        header.integer(Int64(speciesCode))
        header.integer(UInt64(ids.count))
        try header.bytes.withUnsafeBytes(append)
        func section<T: BitwiseCopyable>(_ array: TreeArray<T>) throws {
            var count = UInt64(array.count)
            try withUnsafeBytes(of: &count, append)
            try array.withUnsafeBytes(append)
            let padding = (8 - (array.count * MemoryLayout<T>.stride) % 8) % 8
            if padding > 0 { try [UInt8](repeating: 0, count: padding).withUnsafeBytes(append) }
        }
        try section(ids); try section(parents); try section(depths); try section(rankCodes)
        try section(mainLevels); try section(mainParents); try section(mainDepths)
        try section(nameBytes); try section(nameEnds); try section(nameOrder); try section(nameRank); try section(nameSlots)
        try section(childStart); try section(children); try section(mainChildStart); try section(mainChildren)
        try section(allRoots); try section(mainRoots)
        try section(preorder); try section(preorderPosition); try section(subtreeEnd); try section(preorderRanks)
    }

    /// The tree of the image open on `descriptor` (read from its start), when the
    /// image was written with `expectedKey` and every array agrees with the others.
    /// The file is mapped, not copied: the tree's arrays are its pages (``TreeArray``),
    /// which stay mapped while the tree lives, after the caller closes `descriptor`.
    public static func readImage(from descriptor: Int32, expectedKey: String) throws(ImageError) -> TaxonomyTree {
        var reader = ImageReader(mapping: try ImageMapping(descriptor: descriptor))
        guard try reader.bytes(imageMagic.count) == imageMagic, try reader.integer(UInt32.self) == imageVersion else {
            throw .notAnImage
        }
        guard try reader.string() == expectedKey else { throw .otherDatabase }
        let rankCount = try reader.integer(UInt32.self)
        guard rankCount <= 255 else { throw .inconsistent("rank names") }
        var rankNames: [String] = []
        for _ in 0..<rankCount { rankNames.append(try reader.string()) }
        let speciesCode = try reader.integer(Int64.self)
        let count = try reader.integer(UInt64.self)
        guard count < UInt64(Int32.max), speciesCode >= -1, speciesCode < Int64(rankNames.count) else {
            throw .inconsistent("header")
        }
        let tree = try TaxonomyTree(imageOf: &reader, count: Int(count), rankNames: rankNames, speciesCode: Int16(speciesCode))
        // The file ends where the last array's padding does: a cut in that padding is a cut too.
        guard reader.offset == reader.mapping.length else {
            throw reader.offset > reader.mapping.length ? .truncated : .inconsistent("bytes after the end")
        }
        return tree
    }

    /// The key an image was written with (``writeImage(key:_:)``), read from its header alone.
    public static func readImageKey(from descriptor: Int32) throws(ImageError) -> String {
        var reader = ImageReader(mapping: try ImageMapping(descriptor: descriptor))
        guard try reader.bytes(imageMagic.count) == imageMagic, try reader.integer(UInt32.self) == imageVersion else {
            throw .notAnImage
        }
        return try reader.string()
    }

    private init(imageOf reader: inout ImageReader, count n: Int, rankNames: [String], speciesCode: Int16) throws(ImageError) {
        storage = reader.mapping
        ids = try reader.section(TaxonID.self, count: n)
        parents = try reader.section(Int32.self, count: n)
        depths = try reader.section(UInt16.self, count: n)
        rankCodes = try reader.section(UInt8.self, count: n)
        mainLevels = try reader.section(Int8.self, count: n)
        mainParents = try reader.section(Int32.self, count: n)
        mainDepths = try reader.section(UInt8.self, count: n)
        nameBytes = try reader.section(UInt8.self)
        nameEnds = try reader.section(UInt32.self, count: n)
        nameOrder = try reader.section(Int32.self, count: n)
        nameRank = try reader.section(Int32.self, count: n)
        nameSlots = try reader.section(UInt32.self)
        childStart = try reader.section(Int32.self, count: n + 1)
        children = try reader.section(Int32.self)
        mainChildStart = try reader.section(Int32.self, count: n + 1)
        mainChildren = try reader.section(Int32.self)
        allRoots = try reader.section(Int32.self)
        mainRoots = try reader.section(Int32.self)
        preorder = try reader.section(Int32.self, count: n)
        preorderPosition = try reader.section(Int32.self, count: n)
        subtreeEnd = try reader.section(Int32.self, count: n)
        preorderRanks = try reader.section(UInt8.self, count: n)
        self.rankNames = rankNames
        self.speciesCode = speciesCode
        // The checks read every page of the mapping, half of them on a second thread (the
        // arrays a walk up follows, and the view's children lists): the machines have two
        // cores. (The arrays are a pointer and a count each, kept by `reader`'s mapping,
        // which outlives the join.)
        let (ids, parents, depths, rankCodes) = (self.ids, self.parents, self.depths, self.rankCodes)
        let (mainLevels, mainParents, mainDepths) = (self.mainLevels, self.mainParents, self.mainDepths)
        let (mainChildStart, mainChildren, mainRoots) = (self.mainChildStart, self.mainChildren, self.mainRoots)
        let early = BackgroundWork { () -> Result<Void, ImageError> in
            Result { () throws(ImageError) in
                try Self.checkEarlyArrays(ids: ids, parents: parents, depths: depths, rankCodes: rankCodes,
                                          rankCount: rankNames.count, mainLevels: mainLevels, mainParents: mainParents,
                                          mainDepths: mainDepths)
                try Self.checkLists(mainChildStart, mainChildren, mainRoots, mainParents, "view children")
            }
        }
        // Safe on ids not yet checked ascending (it clamps); a damaged image is refused below.
        idLookup = SortedIDLookup(ids)
        let checked = Result { () throws(ImageError) in try checkImage() }
        try early.join().get()
        try checked.get()
    }

    /// The checks of the arrays a walk up reads, run while ``checkImage()`` checks the
    /// others: ids ascending, parents in range, depths that prove every walk up
    /// ends at a root, rank codes and main ranks in range.
    private static func checkEarlyArrays(ids: TreeArray<TaxonID>, parents: TreeArray<Int32>, depths: TreeArray<UInt16>,
                                         rankCodes: TreeArray<UInt8>, rankCount: Int, mainLevels: TreeArray<Int8>,
                                         mainParents: TreeArray<Int32>, mainDepths: TreeArray<UInt8>) throws(ImageError) {
        let n = ids.count
        func require(_ condition: Bool, _ what: String) throws(ImageError) {
            if !condition { throw .inconsistent(what) }
        }
        func inRange(_ array: TreeArray<Int32>) -> Bool { array.allSatisfy { $0 >= -1 && Int($0) < n } }
        for i in ids.indices.dropFirst() { try require(ids[i - 1] < ids[i], "ids not ascending") }
        try require(inRange(parents) && inRange(mainParents), "parents")
        // Depth one more than the parent's proves that following parents ends at a root.
        for i in 0..<n {
            let parent = Int(parents[i])
            try require(parent < 0 ? depths[i] == 0 : depths[parent] < UInt16.max && depths[i] == depths[parent] + 1, "depths")
            let mainParent = Int(mainParents[i])
            try require(mainParent < 0 ? mainDepths[i] == 0
                        : mainDepths[mainParent] < UInt8.max && mainDepths[i] == mainDepths[mainParent] + 1, "view depths")
        }
        try require(rankCodes.allSatisfy { Int($0) < rankCount }, "rank codes")
        try require(mainLevels.allSatisfy { $0 >= -1 && Int($0) < TaxonRank.allCases.count }, "main ranks")
    }

    /// Every other check that makes the tree's walks safe (``checkEarlyArrays`` does the
    /// rest): each is one pass over an array, and each reads only positions it has
    /// checked in range itself (it runs beside the early checks, not after them).
    private func checkImage() throws(ImageError) {
        let n = ids.count
        func require(_ condition: Bool, _ what: String) throws(ImageError) {
            if !condition { throw .inconsistent(what) }
        }
        func inRange(_ array: TreeArray<Int32>, allowingRoot: Bool = false) -> Bool {
            let low: Int32 = allowingRoot ? -1 : 0
            return array.allSatisfy { $0 >= low && Int($0) < n }
        }
        var previousEnd: UInt32 = 0
        for end in nameEnds {
            try require(end >= previousEnd, "name ends")
            previousEnd = end
        }
        try require(Int(previousEnd) == nameBytes.count, "name bytes")
        // Each is a permutation: in range, and its inverse maps it back.
        try require(inRange(nameOrder) && nameOrder.indices.allSatisfy { nameRank[Int(nameOrder[$0])] == Int32($0) }, "name order")
        try require(inRange(preorder) && preorder.indices.allSatisfy { preorderPosition[Int(preorder[$0])] == Int32($0) },
                    "preorder")
        for node in 0..<n {
            try require(subtreeEnd[node] > preorderPosition[node] && Int(subtreeEnd[node]) <= n, "subtree ends")
        }
        try require(preorder.indices.allSatisfy { preorderRanks[$0] == rankCodes[Int(preorder[$0])] }, "preorder ranks")
        try require(nameSlots.count >= 16 && nameSlots.count & (nameSlots.count - 1) == 0
                    && nameSlots.allSatisfy { Int($0) <= n } && nameSlots.contains(0), "name slots")
        try Self.checkLists(childStart, children, allRoots, parents, "children")
    }

    /// A children list of `parents` (the whole tree's or the view's): offsets that rise to
    /// the list's end, children in range whose parent is the node listing them, roots
    /// without a parent.
    private static func checkLists(_ start: TreeArray<Int32>, _ children: TreeArray<Int32>, _ roots: TreeArray<Int32>,
                                   _ parents: TreeArray<Int32>, _ what: String) throws(ImageError) {
        let n = parents.count
        func require(_ condition: Bool) throws(ImageError) {
            if !condition { throw .inconsistent(what) }
        }
        func inRange(_ array: TreeArray<Int32>) -> Bool { array.allSatisfy { $0 >= 0 && Int($0) < n } }
        try require(start.count == n + 1 && start.first == 0 && Int(start[n]) == children.count && inRange(children)
                    && inRange(roots))
        for node in 0..<n {
            try require(start[node] <= start[node + 1] && Int(start[node + 1]) <= children.count)
            for k in Int(start[node])..<Int(start[node + 1]) { try require(parents[Int(children[k])] == Int32(node)) }
        }
        try require(roots.allSatisfy { parents[Int($0)] < 0 })
    }
}

/// The header's parts, in the image's layout.
private struct ImageHeaderWriter {
    var bytes: [UInt8] = []

    mutating func bytes(_ more: [UInt8]) { bytes += more }

    mutating func integer<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    /// Its length, its UTF-8 bytes, padded to 8.
    mutating func string(_ text: String) {
        let utf8 = Array(text.utf8)
        integer(UInt32(utf8.count))
        bytes += utf8
        bytes += [UInt8](repeating: 0, count: (8 - (4 + utf8.count) % 8) % 8)
    }
}

/// Reads an image's parts in order from its mapping: each array a ``TreeArray``
/// into the mapped file, checked against the file's length and aligned.
private struct ImageReader {
    let mapping: ImageMapping
    var offset = 0

    /// The next `count` bytes' place, moving past them.
    private mutating func take(_ count: Int) throws(TaxonomyTree.ImageError) -> Int {
        guard count >= 0, count <= mapping.length - offset else { throw .truncated }
        defer { offset += count }
        return offset
    }

    mutating func bytes(_ count: Int) throws(TaxonomyTree.ImageError) -> [UInt8] {
        let at = try take(count)
        return Array(UnsafeRawBufferPointer(start: mapping.base + at, count: count))
    }

    mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws(TaxonomyTree.ImageError) -> T {
        let at = try take(MemoryLayout<T>.size)
        return T(littleEndian: mapping.base.loadUnaligned(fromByteOffset: at, as: T.self))
    }

    mutating func string() throws(TaxonomyTree.ImageError) -> String {
        let length = Int(try integer(UInt32.self))
        guard length <= 4096 else { throw .inconsistent("a string of the header") }
        let utf8 = try bytes(length)
        _ = try take((8 - (4 + length) % 8) % 8)
        return String(decoding: utf8, as: UTF8.self)
    }

    /// An array of the image: its count (which must be `count` when given), its elements, its padding.
    mutating func section<T: BitwiseCopyable>(_ type: T.Type, count expected: Int? = nil) throws(TaxonomyTree.ImageError) -> TreeArray<T> {
        let count = try integer(UInt64.self)
        // No count larger than the file (a damaged one must not reach past the mapping).
        guard count <= UInt64(mapping.length), expected.map({ UInt64($0) == count }) ?? true else {
            throw .inconsistent("an array's length")
        }
        let bytes = Int(count) * MemoryLayout<T>.stride
        guard offset % MemoryLayout<T>.alignment == 0 else { throw .inconsistent("an array's alignment") }
        let at = try take(bytes)
        _ = try take((8 - bytes % 8) % 8)
        return TreeArray(base: mapping.base + at, count: Int(count))
    }
}
