import STOLModel

/// Keys (folded names, words, abbreviations) sorted by their UTF-8 bytes, back
/// to back in one buffer, each with its run of taxa: the shape of search's
/// in-memory indexes, without a `String` and an `Array` per entry.
///
/// Those were two heap objects per key, 50–100 bytes of headers and slack for a
/// key of ten: the abbreviations' 233,000 keys took 22 MB and the prominent
/// names' 266,000 another 14 MB of the server's memory on the full NCBI build
/// (heaptrack, at the start's peak), most of it the allocator's rather than the
/// data's. Here the same keys cost their bytes and 12 bytes each.
struct SortedNameTable: Sendable {
    /// Every key's bytes, in key order.
    private let bytes: [UInt8]
    /// Where each key ends in ``bytes`` (it starts where the previous one ends).
    private let keyEnds: [UInt32]
    /// Where each key's run ends in ``ids``.
    private let idEnds: [UInt32]
    /// Each key's taxa, key after key.
    let ids: [TaxonID]

    static let empty = SortedNameTable(bytes: [], keyEnds: [], idEnds: [], ids: [])

    private init(bytes: [UInt8], keyEnds: [UInt32], idEnds: [UInt32], ids: [TaxonID]) {
        self.bytes = bytes
        self.keyEnds = keyEnds
        self.idEnds = idEnds
        self.ids = ids
    }

    /// The number of distinct keys.
    var count: Int { keyEnds.count }

    /// Key `index`'s bytes.
    func keyBytes(at index: Int) -> ArraySlice<UInt8> {
        bytes[(index == 0 ? 0 : Int(keyEnds[index - 1]))..<Int(keyEnds[index])]
    }

    /// Key `index`.
    func key(at index: Int) -> String { String(decoding: keyBytes(at: index), as: UTF8.self) }

    /// The taxa of keys `range`, key after key (each key's in the order it was built with).
    func ids(ofKeys range: Range<Int>) -> ArraySlice<TaxonID> {
        guard !range.isEmpty else { return [] }
        let start = range.lowerBound == 0 ? 0 : Int(idEnds[range.lowerBound - 1])
        return ids[start..<Int(idEnds[range.upperBound - 1])]
    }

    /// The taxa of `key`; empty when it is not a key.
    func ids(for key: String) -> ArraySlice<TaxonID> {
        let keys = self.keys(withPrefix: key)
        guard !keys.isEmpty, keyBytes(at: keys.lowerBound).count == key.utf8.count else { return [] }
        return ids(ofKeys: keys.lowerBound..<keys.lowerBound + 1)
    }

    /// The keys that start with `prefix`'s bytes (every key for an empty prefix): one range, keys being sorted.
    func keys(withPrefix prefix: String) -> Range<Int> {
        let prefix = Array(prefix.utf8)
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if keyBytes(at: middle).lexicographicallyPrecedes(prefix) { low = middle + 1 } else { high = middle }
        }
        var end = low
        high = count
        while end < high {  // the first key past the prefix's range: the first that does not start with it
            let middle = (end + high) / 2
            if keyBytes(at: middle).starts(with: prefix) { end = middle + 1 } else { high = middle }
        }
        return low..<end
    }

    /// Collects (key, taxon) pairs, the keys' bytes in one buffer as they come, and
    /// sorts them once into a table: no `String` per pair meanwhile either.
    struct Builder {
        private var bytes: [UInt8] = []
        /// (where the key starts in `bytes`, its length, its taxon), in the order added.
        private var entries: [(start: UInt32, length: UInt32, id: TaxonID)] = []

        init() {}

        mutating func append<Key: Collection<UInt8>>(_ key: Key, _ id: TaxonID) {
            entries.append((UInt32(bytes.count), UInt32(key.count), id))
            bytes.append(contentsOf: key)
        }

        mutating func append(_ key: String, _ id: TaxonID) { append(key.utf8, id) }

        /// The table: keys by their bytes; a key's taxa by `areInIncreasingOrder`, then
        /// in the order added, at most `kept` of them.
        consuming func build(kept: Int = .max,
                             by areInIncreasingOrder: (TaxonID, TaxonID) -> Bool = { _, _ in false }) -> SortedNameTable {
            let order = bytes.withUnsafeBufferPointer { buffer -> [Int32] in
                func key(_ entry: Int32) -> UnsafeBufferPointer<UInt8> {
                    let e = entries[Int(entry)]
                    return UnsafeBufferPointer(rebasing: buffer[Int(e.start)..<Int(e.start + e.length)])
                }
                var order = (0..<Int32(entries.count)).map { $0 }
                order.sort { a, b in
                    let ka = key(a), kb = key(b)
                    if !ka.elementsEqual(kb) { return ka.lexicographicallyPrecedes(kb) }
                    let ia = entries[Int(a)].id, ib = entries[Int(b)].id
                    if areInIncreasingOrder(ia, ib) { return true }
                    if areInIncreasingOrder(ib, ia) { return false }
                    return a < b
                }
                return order
            }
            var tableBytes: [UInt8] = [], keyEnds: [UInt32] = [], idEnds: [UInt32] = [], ids: [TaxonID] = []
            ids.reserveCapacity(entries.count)
            var previous: (start: UInt32, length: UInt32)?
            var inKey = 0
            for index in order {
                let entry = entries[Int(index)]
                let same = previous.map { bytes[Int($0.start)..<Int($0.start + $0.length)]
                    .elementsEqual(bytes[Int(entry.start)..<Int(entry.start + entry.length)]) } ?? false
                if !same {
                    tableBytes.append(contentsOf: bytes[Int(entry.start)..<Int(entry.start + entry.length)])
                    keyEnds.append(UInt32(tableBytes.count))
                    idEnds.append(UInt32(ids.count))
                    previous = (entry.start, entry.length)
                    inKey = 0
                }
                guard inKey < kept else { continue }
                ids.append(entry.id)
                idEnds[idEnds.count - 1] = UInt32(ids.count)
                inKey += 1
            }
            return SortedNameTable(bytes: tableBytes, keyEnds: keyEnds, idEnds: idEnds, ids: ids)
        }
    }
}
