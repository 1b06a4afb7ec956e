extension RandomAccessCollection where Element == TaxonID, Index == Int {
    /// The position of `id` in this ascending array (the in-memory trees' id
    /// tables), nil when it is not there.
    func position(ofSorted id: TaxonID) -> Int? { position(ofSorted: id, within: startIndex..<endIndex) }

    /// The same, searching only `range` (where the id must be if it is there).
    @inline(__always)
    func position(ofSorted id: TaxonID, within range: Range<Int>) -> Int? {
        var low = range.lowerBound, high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < id { low = middle + 1 } else { high = middle }
        }
        return low < endIndex && self[low] == id ? low : nil
    }
}

/// Positions of ascending ids, for the millions of lookups of a tree's build
/// (every parent, every view parent, every id of the name order). Where the ids
/// are dense enough (NCBI: 2.6 M ids up to 3.5 M) a table indexed by id answers
/// in one memory access, 4 bytes per possible id; otherwise a binary search
/// (twenty cache misses per lookup on NCBI, a second of a start in all).
struct IDPositions {
    private let ids: [TaxonID]
    private let table: [Int32]

    init(_ ids: [TaxonID]) {
        self.ids = ids
        if let largest = ids.last, let smallest = ids.first, smallest >= 0, largest < TaxonID(4 * ids.count + 1024) {
            var table = [Int32](repeating: -1, count: Int(largest) + 1)
            for (position, id) in ids.enumerated() { table[Int(id)] = Int32(position) }
            self.table = table
        } else {
            table = []
        }
    }

    @inline(__always)
    func position(of id: TaxonID) -> Int? {
        if !table.isEmpty {
            guard id >= 0, id < TaxonID(table.count) else { return nil }
            let position = table[Int(id)]
            return position < 0 ? nil : Int(position)
        }
        return ids.position(ofSorted: id)
    }
}

/// Where an id is in a tree's ascending id table, for the lookups of every request
/// (each query by id, each pair, each member of a set): where the first id of each
/// bucket of 2^`shift` consecutive ids is, then a binary search within the bucket.
/// About eight ids a bucket, so a lookup reads the bucket's two bounds and one or two
/// cache lines of ids, where a binary search of NCBI's 2.6 M ids reads twenty lines
/// far apart (the server's largest cost in a batch of lineages: 14 % of its time).
/// 4 bytes per bucket: under 1 MB for NCBI (3.5 M possible ids, 16 to a bucket).
/// Built from the ids in one pass when a tree is made or read; ``IDPositions``,
/// 4 bytes per possible id, stays the build's, which does millions of lookups once.
struct SortedIDLookup: Sendable {
    private let base: TaxonID
    private let shift: Int
    /// `starts[b]`: the position of the first id at or above bucket `b`'s; one more
    /// entry than buckets, the id count.
    private let starts: [Int32]

    /// Ids per bucket on average, at most.
    static let idsPerBucket = 8

    init(_ ids: TreeArray<TaxonID>) {
        guard let first = ids.first, let last = ids.last else {
            base = 0
            shift = 0
            starts = [0]
            return
        }
        let span = UInt64(bitPattern: last &- first)
        let buckets = UInt64(max(1, ids.count / Self.idsPerBucket))
        var shift = 0
        while span >> UInt64(shift) >= buckets { shift += 1 }
        let count = Int(span >> UInt64(shift)) + 1
        var starts = [Int32](repeating: Int32(ids.count), count: count + 1)
        var bucket = 0
        for (position, id) in ids.enumerated() {
            // Clamped: an image's ids are made a lookup before they are checked ascending
            // (a damaged image is then refused, not trapped on).
            let its = Int(min(UInt64(bitPattern: id &- first) >> UInt64(shift), UInt64(count - 1)))
            while bucket <= its {
                starts[bucket] = Int32(position)
                bucket += 1
            }
        }
        base = first
        self.shift = shift
        self.starts = starts
    }

    /// The position of `id` in `ids`, the ascending table this lookup was made from.
    @inline(__always)
    func position(of id: TaxonID, in ids: TreeArray<TaxonID>) -> Int? {
        guard id >= base else { return nil }
        let bucket = UInt64(bitPattern: id &- base) >> UInt64(shift)
        guard bucket < UInt64(starts.count - 1) else { return nil }
        return ids.position(ofSorted: id, within: Int(starts[Int(bucket)])..<Int(starts[Int(bucket) + 1]))
    }
}
