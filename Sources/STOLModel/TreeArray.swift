import Glibc

/// One of the tree's arrays, read in place: either an array the tree was built
/// into (from a database's rows) or a range of a mapped image file
/// (``ImageMapping``). Reading an image used to copy its 245 MB into fresh memory
/// (a page fault and a zeroed page per 4 KB, then the copy: 200 ms of a start's
/// CPU on NCBI's tree); a mapped image is the page cache itself, shared by every
/// daemon that maps the same file, and only checked (``TaxonomyTree/readImage(from:expectedKey:)``).
///
/// Elements are read through a pointer that stays valid as long as this value:
/// it keeps its owner (the array's box or the mapping) alive. Every subscript is
/// bounds-checked, as an `Array`'s is.
struct TreeArray<Element: BitwiseCopyable>: RandomAccessCollection, @unchecked Sendable {
    // @unchecked: the pointer is to memory nothing writes once this value exists
    // (an immutable array kept by `owner`, or a read-only mapping).
    private let base: UnsafePointer<Element>?
    let count: Int
    private let owner: AnyObject?

    /// The elements of `array`, kept by this value (never copied).
    init(_ array: [Element]) {
        let box = ArrayBox(array)
        owner = box
        base = box.base
        count = array.count
    }

    /// `count` elements at `offset` of `mapping` (in range and aligned: the caller checked).
    init(mapping: ImageMapping, offset: Int, count: Int) {
        owner = mapping
        base = count == 0 ? nil : (mapping.base + offset).assumingMemoryBound(to: Element.self)
        self.count = count
    }

    init() {
        owner = nil
        base = nil
        count = 0
    }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    @inline(__always)
    subscript(position: Int) -> Element {
        precondition(UInt(bitPattern: position) < UInt(bitPattern: count), "index out of range")
        return base.unsafelyUnwrapped[position]
    }

    func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<Element>) throws -> Result) rethrows -> Result {
        try withExtendedLifetime(owner) { try body(UnsafeBufferPointer(start: base, count: count)) }
    }

    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withUnsafeBufferPointer { try body(UnsafeRawBufferPointer($0)) }
    }
}

/// An array's storage held still for ``TreeArray``: the array is never mutated
/// again, so its elements stay where they are for the box's life.
private final class ArrayBox<Element: BitwiseCopyable>: @unchecked Sendable {
    let array: [Element]
    let base: UnsafePointer<Element>?

    init(_ array: [Element]) {
        self.array = array
        // A native array's buffer (the only kind this module makes) does not move
        // while nothing mutates it; `array` is a `let` of this box.
        base = array.withUnsafeBufferPointer { $0.baseAddress }
    }
}

/// A whole image file mapped read-only (private: nothing this process does writes
/// it back), unmapped when the last ``TreeArray`` into it goes. The server writes
/// its images by renaming a finished file over the old one, so a mapped file is
/// never changed under it; a file cut short by hand would make a read of its lost
/// pages fault (SIGBUS), as it would for any mapped file.
final class ImageMapping: @unchecked Sendable {
    let base: UnsafeRawPointer
    let length: Int

    /// The file open on `descriptor`, whole; nil for an empty file.
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
