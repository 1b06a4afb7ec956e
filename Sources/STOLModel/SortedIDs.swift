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
