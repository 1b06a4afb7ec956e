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
        func section<T: BitwiseCopyable>(_ array: [T]) throws {
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
    public static func readImage(from descriptor: Int32, expectedKey: String) throws(ImageError) -> TaxonomyTree {
        var reader = ImageReader(descriptor: descriptor)
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
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .io(errno) }
        guard status.st_size == reader.offset else { throw status.st_size < reader.offset ? .truncated : .inconsistent("bytes after the end") }
        return tree
    }

    /// The key an image was written with (``writeImage(key:_:)``), read from its header alone.
    public static func readImageKey(from descriptor: Int32) throws(ImageError) -> String {
        var reader = ImageReader(descriptor: descriptor)
        guard try reader.bytes(imageMagic.count) == imageMagic, try reader.integer(UInt32.self) == imageVersion else {
            throw .notAnImage
        }
        return try reader.string()
    }

    private init(imageOf reader: inout ImageReader, count: Int, rankNames: [String], speciesCode: Int16) throws(ImageError) {
        let n = count
        // The arrays after the names' bytes (about half the image) are read on a second
        // thread meanwhile: a start's tree is ready sooner on the machines' two cores.
        // Where they start: seven arrays of n elements, then the names' bytes, whose
        // count says how many (each array: its count, its elements, its padding).
        var namesAt = reader.offset
        for stride in [MemoryLayout<TaxonID>.stride, 4, 2, 1, 1, 4, 1] {
            namesAt += off_t(8 + ImageReader.padded(bytes: n * stride))
        }
        let nameByteCount = try reader.count(at: namesAt)
        let laterAt = namesAt + off_t(8 + ImageReader.padded(bytes: nameByteCount))
        let descriptor = reader.descriptor
        let reading = BackgroundWork { () -> Result<LaterSections, ImageError> in
            var second = ImageReader(descriptor: descriptor, offset: laterAt)
            return Result { () throws(ImageError) -> LaterSections in try LaterSections(&second, count: n) }
        }
        do {
            ids = try reader.section(TaxonID.self, count: n)
            parents = try reader.section(Int32.self, count: n)
            depths = try reader.section(UInt16.self, count: n)
            rankCodes = try reader.section(UInt8.self, count: n)
            mainLevels = try reader.section(Int8.self, count: n)
            mainParents = try reader.section(Int32.self, count: n)
            mainDepths = try reader.section(UInt8.self, count: n)
            nameBytes = try reader.section(UInt8.self)
            try Self.checkEarlyArrays(ids: ids, parents: parents, depths: depths, rankCodes: rankCodes, rankCount: rankNames.count,
                                      mainLevels: mainLevels, mainParents: mainParents, mainDepths: mainDepths)
        } catch {
            _ = reading.join()  // no read of the caller's descriptor outlives this call
            throw error
        }
        idLookup = SortedIDLookup(ids)
        let later = try reading.join().get()
        guard reader.offset == laterAt else { throw .inconsistent("an array's length") }
        reader.offset = later.end
        nameEnds = later.nameEnds
        nameOrder = later.nameOrder
        nameRank = later.nameRank
        nameSlots = later.nameSlots
        childStart = later.childStart
        children = later.children
        mainChildStart = later.mainChildStart
        mainChildren = later.mainChildren
        allRoots = later.allRoots
        mainRoots = later.mainRoots
        preorder = later.preorder
        preorderPosition = later.preorderPosition
        subtreeEnd = later.subtreeEnd
        preorderRanks = later.preorderRanks
        self.rankNames = rankNames
        self.speciesCode = speciesCode
        try checkImage()
    }

    /// The checks of the arrays before the names' bytes, run while the second thread
    /// reads the rest: ids ascending, parents in range, depths that prove every walk up
    /// ends at a root, rank codes and main ranks in range.
    private static func checkEarlyArrays(ids: [TaxonID], parents: [Int32], depths: [UInt16], rankCodes: [UInt8], rankCount: Int,
                                         mainLevels: [Int8], mainParents: [Int32], mainDepths: [UInt8]) throws(ImageError) {
        let n = ids.count
        func require(_ condition: Bool, _ what: String) throws(ImageError) {
            if !condition { throw .inconsistent(what) }
        }
        func inRange(_ array: [Int32]) -> Bool { array.allSatisfy { $0 >= -1 && Int($0) < n } }
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

    /// Every other check that makes the tree's walks safe (after ``checkEarlyArrays``):
    /// each is one pass over an array.
    private func checkImage() throws(ImageError) {
        let n = ids.count
        func require(_ condition: Bool, _ what: String) throws(ImageError) {
            if !condition { throw .inconsistent(what) }
        }
        func inRange(_ array: [Int32], allowingRoot: Bool = false) -> Bool {
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
        func checkLists(_ start: [Int32], _ children: [Int32], _ roots: [Int32], _ parents: [Int32], _ what: String) throws(ImageError) {
            try require(start.first == 0 && Int(start[n]) == children.count && inRange(children) && inRange(roots), what)
            for node in 0..<n {
                try require(start[node] <= start[node + 1] && Int(start[node + 1]) <= children.count, what)
                for k in Int(start[node])..<Int(start[node + 1]) { try require(parents[Int(children[k])] == Int32(node), what) }
            }
            try require(roots.allSatisfy { parents[Int($0)] < 0 }, what)
        }
        try checkLists(childStart, children, allRoots, parents, "children")
        try checkLists(mainChildStart, mainChildren, mainRoots, mainParents, "view children")
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

/// Reads an image's parts in order, each array straight into its storage.
/// The image's arrays after the names' bytes, in the image's order: what the second
/// thread of ``TaxonomyTree/readImage(from:expectedKey:)`` reads.
private struct LaterSections: Sendable {
    let nameEnds: [UInt32], nameOrder: [Int32], nameRank: [Int32], nameSlots: [UInt32]
    let childStart: [Int32], children: [Int32], mainChildStart: [Int32], mainChildren: [Int32]
    let allRoots: [Int32], mainRoots: [Int32]
    let preorder: [Int32], preorderPosition: [Int32], subtreeEnd: [Int32], preorderRanks: [UInt8]
    /// Where the last array's padding ends.
    let end: off_t

    init(_ reader: inout ImageReader, count n: Int) throws(TaxonomyTree.ImageError) {
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
        end = reader.offset
    }
}

private struct ImageReader {
    let descriptor: Int32
    var offset: off_t = 0

    /// `bytes` and the padding after them to the next multiple of 8.
    static func padded(bytes: Int) -> Int { bytes + (8 - bytes % 8) % 8 }

    /// The element count of the array whose count is at `offset`, read without moving;
    /// no larger than the file (it places the arrays after it).
    func count(at offset: off_t) throws(TaxonomyTree.ImageError) -> Int {
        var peek = ImageReader(descriptor: descriptor, offset: offset)
        let count = try peek.integer(UInt64.self)
        var stat = stat()
        guard fstat(descriptor, &stat) == 0 else { throw .io(errno) }
        guard count <= UInt64(max(0, stat.st_size)) else { throw .inconsistent("an array's length") }
        return Int(count)
    }

    /// Fills `buffer` from the current offset.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(TaxonomyTree.ImageError) {
        var done = 0
        while done < buffer.count {
            let got = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, offset + off_t(done))
            if got < 0 {
                if errno == EINTR { continue }
                throw .io(errno)
            }
            if got == 0 { throw .truncated }
            done += got
        }
        offset += off_t(buffer.count)
    }

    mutating func bytes(_ count: Int) throws(TaxonomyTree.ImageError) -> [UInt8] {
        try section(UInt8.self, exactly: count)
    }

    mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws(TaxonomyTree.ImageError) -> T {
        var value = T.zero
        try withUnsafeMutableBytes(of: &value) { (raw: UnsafeMutableRawBufferPointer) throws(TaxonomyTree.ImageError) in try fill(raw) }
        return T(littleEndian: value)
    }

    mutating func string() throws(TaxonomyTree.ImageError) -> String {
        let length = Int(try integer(UInt32.self))
        guard length <= 4096 else { throw .inconsistent("a string of the header") }
        let utf8 = try bytes(length)
        _ = try bytes((8 - (4 + length) % 8) % 8)
        return String(decoding: utf8, as: UTF8.self)
    }

    /// An array of the image: its count (which must be `count` when given), its elements, its padding.
    mutating func section<T: BitwiseCopyable>(_ type: T.Type, count expected: Int? = nil) throws(TaxonomyTree.ImageError) -> [T] {
        let count = try integer(UInt64.self)
        // No count larger than the file (a damaged one must not allocate terabytes).
        var stat = stat()
        guard fstat(descriptor, &stat) == 0 else { throw .io(errno) }
        guard count <= UInt64(max(0, stat.st_size)), expected.map({ UInt64($0) == count }) ?? true else {
            throw .inconsistent("an array's length")
        }
        let array = try section(T.self, exactly: Int(count))
        let padding = (8 - (Int(count) * MemoryLayout<T>.stride) % 8) % 8
        if padding > 0 { offset += off_t(padding) }
        return array
    }

    private mutating func section<T: BitwiseCopyable>(_ type: T.Type, exactly count: Int) throws(TaxonomyTree.ImageError) -> [T] {
        var failure: TaxonomyTree.ImageError?
        let array = [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(TaxonomyTree.ImageError) {
                try fill(UnsafeMutableRawBufferPointer(buffer))
                initialized = count
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return array
    }
}
