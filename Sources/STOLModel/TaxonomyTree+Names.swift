import Glibc

/// Exact lookups by scientific name without a query: the name order and a hash
/// of each distinct name (10 MB and 34 MB for NCBI, where a `[String: …]` of
/// 2.6 M names is 200).
extension TaxonomyTree {
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

    static func sortedByName(count: Int, bytes: [UInt8], ends: [UInt32]) -> [Int32] {
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

    static func nameSlots(order: [Int32], bytes: [UInt8], ends: [UInt32]) -> [UInt32] {
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
        nodes(named: name, limit: .max).nodes
    }

    /// The first `limit` nodes whose name is exactly `name` (bytewise), in id order,
    /// and how many carry it. The cost is bounded by `limit` and the logarithm of the
    /// count, not by the count: "environmental samples" names 6,433 NCBI nodes, and a
    /// batch may ask for it a thousand times.
    public func nodes(named name: String, limit: Int) -> (nodes: [Int], total: Int) {
        guard let run = positions(named: name) else { return ([], 0) }
        let listed = min(run.count, max(0, limit))
        return (nameOrder[run.lowerBound..<(run.lowerBound + listed)].map(Int.init), run.count)
    }

    /// Reads, for a batch of names about to be looked up (``nodes(named:limit:)``), the
    /// memory each lookup reads first, a stage at a time across the whole batch: the
    /// name's hash slot, then the node it names and the next in name order, then their
    /// names' ends, the node's id and its name's first bytes. Within one lookup each of
    /// these reads waits for the one before (six or seven cache misses in a row on NCBI's
    /// 245 MB tree); across the names of a stage they are independent, so the processor
    /// has many under way at once, and the lookups that follow find them in the cache.
    /// Answers nothing. 10,000 names in batches of 1,000: the server's CPU 22 → 15–16 ms
    /// (docs/benchmarks.md §21).
    public func readAhead(forNames names: [String]) {
        let count = names.count
        guard count > 1, nameSlots.count > 0 else { return }
        let mask = nameSlots.count - 1
        var probe = [Int32](repeating: -1, count: count)  // the node named in each name's first slot
        for index in 0..<count {
            var name = names[index]
            let slot = name.withUTF8 { query in Int(Self.hash(query.baseAddress ?? UnsafePointer(bitPattern: 1)!, query.count) & UInt64(mask)) }
            let position = Int(nameSlots[slot]) - 1
            probe[index] = position < 0 || position >= nameOrder.count ? -1 : Int32(position)
        }
        var next = [Int32](repeating: -1, count: count)   // and the node after it in name order (a run's end)
        for index in 0..<count where probe[index] >= 0 {
            let position = Int(probe[index])
            probe[index] = nameOrder[position]
            if position + 1 < nameOrder.count { next[index] = nameOrder[position + 1] }
        }
        var read: UInt64 = 0
        var starts = [Int](repeating: -1, count: count)
        for index in 0..<count where probe[index] >= 0 {
            let node = Int(probe[index])
            let start = node == 0 ? 0 : Int(nameEnds[node - 1])
            starts[index] = start
            read &+= UInt64(nameEnds[node]) &+ UInt64(bitPattern: ids[node])
            if next[index] >= 0 { read &+= UInt64(nameEnds[Int(next[index])]) }
        }
        for index in 0..<count where starts[index] >= 0 && starts[index] < nameBytes.count {
            read &+= UInt64(nameBytes[starts[index]])
        }
        Self.keep(read)
    }

    /// Takes a value the optimizer must compute: the reads ahead answer nothing, and
    /// would otherwise be removed as unused.
    @inline(never) @_optimize(none)
    private static func keep(_ value: UInt64) {}

    /// The positions in ``nameOrder`` of the nodes named `name`: the hash finds the
    /// first, a galloping search the end of the run.
    private func positions(named name: String) -> Range<Int>? {
        var name = name
        return name.withUTF8 { query -> Range<Int>? in
            nameBytes.withUnsafeBufferPointer { bytes in
                nameEnds.withUnsafeBufferPointer { ends in
                    guard let endBase = ends.baseAddress, let base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1),
                          let queryBase = query.baseAddress ?? UnsafePointer(bitPattern: 1) else { return nil }
                    /// The lengths first: another name (a probe that collided, the next name past
                    /// the run) mostly differs in its length, and its bytes, elsewhere in memory,
                    /// are then never read (a batch of names spent a fifth of its time in memcmp).
                    func isName(_ position: Int) -> Bool {
                        guard position < nameOrder.count else { return false }
                        let node = Int(nameOrder[position])
                        let start = node == 0 ? 0 : Int(endBase[node - 1])
                        return Int(endBase[node]) - start == query.count
                            && (query.count == 0 || memcmp(base + start, queryBase, query.count) == 0)
                    }
                    let mask = nameSlots.count - 1
                    var slot = Int(Self.hash(queryBase, query.count) & UInt64(mask))
                    var low = -1
                    while nameSlots[slot] != 0 {
                        let position = Int(nameSlots[slot]) - 1
                        if isName(position) {
                            low = position
                            break
                        }
                        slot = (slot + 1) & mask
                    }
                    guard low >= 0 else { return nil }
                    // The run is [low, end): double the step past its end, then halve back to it.
                    var inside = low, step = 1
                    while isName(inside + step) {
                        inside += step
                        step *= 2
                    }
                    var outside = inside + step  // the first position known to be past the run (or past the end)
                    while outside - inside > 1 {
                        let middle = inside + (outside - inside) / 2
                        if isName(middle) { inside = middle } else { outside = middle }
                    }
                    return low..<(inside + 1)
                }
            }
        }
    }
}
