import Glibc

/// One of the tree's arrays, read in place: either an array the tree was built
/// into (from a database's rows, kept by an ``ArrayKeeper``) or a range of a mapped
/// image file (``ImageMapping``). Reading an image used to copy its 245 MB into
/// fresh memory (a page fault and a zeroed page per 4 KB, then the copy: 200 ms of
/// a start's CPU on NCBI's tree); a mapped image is the page cache itself, shared
/// by every daemon that maps the same file, and only checked
/// (``TaxonomyTree/readImage(from:expectedKey:)``).
///
/// A pointer and a count, no reference: the tree keeps the memory of all its arrays
/// alive with one reference (``TaxonomyTree``'s `storage`), so copying a tree (each
/// request's queries do) costs one retain, not one per array, and a value of this
/// type is only read while its tree lives (inside the tree's own methods). Every
/// subscript is bounds-checked, as an `Array`'s is.
struct TreeArray<Element: BitwiseCopyable>: RandomAccessCollection, @unchecked Sendable {
    // @unchecked: the pointer is to memory nothing writes once this value exists
    // (an immutable array of a keeper, or a read-only mapping).
    private let base: UnsafePointer<Element>?
    let count: Int

    /// `count` elements at `base` (in range and aligned: the caller checked).
    init(base: UnsafeRawPointer, count: Int) {
        self.base = count == 0 ? nil : base.assumingMemoryBound(to: Element.self)
        self.count = count
    }

    /// The elements of `array`, kept by `keeper` (never copied).
    init(_ array: [Element], keptBy keeper: ArrayKeeper) {
        base = keeper.keep(array)
        count = array.count
    }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    @inline(__always)
    subscript(position: Int) -> Element {
        precondition(UInt(bitPattern: position) < UInt(bitPattern: count), "index out of range")
        return base.unsafelyUnwrapped[position]
    }

    /// The standard library's fast paths (a `String` decoded from a slice of the names'
    /// bytes, an `Array` made of a range) ask for this; without it they go an element
    /// at a time.
    func withContiguousStorageIfAvailable<Result>(_ body: (UnsafeBufferPointer<Element>) throws -> Result) rethrows -> Result? {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<Element>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(UnsafeBufferPointer(start: base, count: count)))
    }
}

/// The arrays a tree was built into, held still for its ``TreeArray``s: each is
/// never mutated again, so its elements stay where they are while the keeper lives.
final class ArrayKeeper: @unchecked Sendable {
    // @unchecked: appended to only while the tree is made, on one thread.
    private var kept: [Any] = []

    /// Keeps `array` and returns where its elements are.
    func keep<Element>(_ array: [Element]) -> UnsafePointer<Element>? {
        kept.append(array)
        // A native array's buffer (the only kind this module makes) does not move
        // while nothing mutates it: the copy in `kept` is never mutated.
        return array.withUnsafeBufferPointer { $0.baseAddress }
    }
}

/// A whole image file mapped read-only (private: nothing this process does writes
/// it back), unmapped when the last tree read from it goes. The server writes its
/// images by renaming a finished file over the old one, so a mapped file is never
/// changed under it; a file cut short by hand would make a read of its lost pages
/// fault (SIGBUS), as it would for any mapped file.
final class ImageMapping: @unchecked Sendable {
    // @unchecked: read-only memory, unmapped only at deinit.
    let base: UnsafeRawPointer
    let length: Int

    /// The file open on `descriptor`, whole (an empty file is a truncated image).
    init(descriptor: Int32) throws(TaxonomyTree.ImageError) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .io(errno) }
        guard status.st_size > 0 else { throw .truncated }
        length = Int(status.st_size)
        guard let mapped = mmap(nil, length, PROT_READ, MAP_PRIVATE, descriptor, 0), mapped != MAP_FAILED else {
            throw .io(errno)
        }
        // The checks read every page once, in order: ask for them ahead.
        _ = madvise(mapped, length, MADV_WILLNEED)
        base = UnsafeRawPointer(mapped)
    }

    deinit {
        munmap(UnsafeMutableRawPointer(mutating: base), length)
    }
}
