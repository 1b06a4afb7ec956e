extension Array where Element == TaxonID {
    /// The position of `id` in this ascending array (the in-memory trees' id
    /// tables), nil when it is not there.
    func position(ofSorted id: TaxonID) -> Int? {
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < id { low = middle + 1 } else { high = middle }
        }
        return low < count && self[low] == id ? low : nil
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
