/// The distinct words of the names people type as one word (common names,
/// synonyms, and the scientific names above species), with a trigram index, so
/// that a misspelt word finds its corrections within a Levenshtein distance of
/// 1 or 2 without comparing it with every word.
///
/// An edit changes at most three of a word's trigrams (padded with two marks at
/// each end, a word of n characters has n + 2), so a word within distance d of
/// the query shares at least n + 2 − 3d of the query's trigrams; counting shared
/// trigrams over the posting lists is cheap, and only words reaching that count
/// get a (banded) Levenshtein computation. A BK-tree was tried first and
/// dropped: at distance 2 it still computes the distance to a large share of
/// the vocabulary (about 140,000 words on the full NCBI build), where the
/// trigram filter computes it for the few words within reach. Species epithets are left out (millions of words for little gain): a typo
/// in a binomial is found through its other, correct word (see ``SearchEngine``).
///
/// Flat arrays, not a `String` per word and an `Array` per trigram: those took
/// about 30 MB of the server's memory on the full NCBI build (heaptrack, at the
/// start's peak), twice these.
public struct FuzzyVocabulary: Sendable {
    /// Every word's UTF-8 bytes, back to back.
    private let bytes: [UInt8]
    /// Start of each word in `bytes` (one more element than there are words).
    private let starts: [Int32]
    /// The distinct trigrams, sorted; trigram i's words are `postings[postingStarts[i]..<postingStarts[i + 1]]`.
    private let grams: [UInt64]
    private let postingStarts: [Int32]
    /// Per trigram, the words containing it (each word once per distinct trigram).
    private let postings: [Int32]

    public init<S: Sequence>(words input: S) where S.Element == String {
        var unique = Set<String>()
        var bytes: [UInt8] = []
        var starts: [Int32] = [0]
        for word in input where !word.isEmpty && unique.insert(word).inserted {
            bytes.append(contentsOf: word.utf8)
            starts.append(Int32(bytes.count))
        }
        unique = []
        // Twice over the words: count each trigram's words, then place them.
        var counts: [UInt64: Int32] = [:]
        let wordCount = starts.count - 1
        func eachDistinctTrigram(_ body: (Int32, UInt64) -> Void) {
            for index in 0..<wordCount {
                let word = String(decoding: bytes[Int(starts[index])..<Int(starts[index + 1])], as: UTF8.self)
                for gram in Set(Self.trigrams(word.unicodeScalars.map(\.value))) { body(Int32(index), gram) }
            }
        }
        eachDistinctTrigram { _, gram in counts[gram, default: 0] += 1 }
        let grams = counts.keys.sorted()
        var postingStarts: [Int32] = [0]
        postingStarts.reserveCapacity(grams.count + 1)
        var next: [UInt64: Int32] = [:]
        next.reserveCapacity(grams.count)
        for gram in grams {
            next[gram] = postingStarts[postingStarts.count - 1]
            postingStarts.append(postingStarts[postingStarts.count - 1] + counts[gram]!)
        }
        counts = [:]
        var postings = [Int32](repeating: 0, count: Int(postingStarts[postingStarts.count - 1]))
        eachDistinctTrigram { index, gram in
            postings[Int(next[gram]!)] = index
            next[gram]! += 1
        }
        self.bytes = bytes
        self.starts = starts
        self.grams = grams
        self.postingStarts = postingStarts
        self.postings = postings
    }

    /// The words containing `gram`.
    private func words(containing gram: UInt64) -> ArraySlice<Int32> {
        var low = 0, high = grams.count
        while low < high {
            let middle = (low + high) / 2
            if grams[middle] < gram { low = middle + 1 } else { high = middle }
        }
        guard low < grams.count, grams[low] == gram else { return [] }
        return postings[Int(postingStarts[low])..<Int(postingStarts[low + 1])]
    }

    /// Trigrams of the word padded with two marks at each end (n + 2 of them).
    static func trigrams(_ word: [UInt32]) -> [UInt64] {
        let padded: [UInt32] = [0x1FFFFE, 0x1FFFFE] + word + [0x1FFFFF, 0x1FFFFF]
        return (0..<(padded.count - 2)).map { i in
            UInt64(padded[i]) << 42 | UInt64(padded[i + 1]) << 21 | UInt64(padded[i + 2])
        }
    }

    public var count: Int { starts.count - 1 }

    /// Words within `maximumDistance` of `word`, nearest first (then alphabetical).
    public func corrections(of word: String, maximumDistance: Int, limit: Int = 20) -> [(word: String, distance: Int)] {
        guard count > 0 else { return [] }
        let query = word.unicodeScalars.map(\.value)
        let grams = Self.trigrams(query)
        let distinct = Set(grams)
        // Shared distinct trigrams ≥ (n + 2 − 3d) − (repeated trigrams of the query).
        let needed = grams.count - 3 * maximumDistance - (grams.count - distinct.count)
        var counts = [UInt8](repeating: 0, count: count)
        var reached: [Int32] = []
        if needed <= 0 {
            // Too short for the filter to prove anything: compare with every word.
            reached = (0..<Int32(count)).map { $0 }
        } else {
            for gram in distinct {
            for index in words(containing: gram) {
                counts[Int(index)] &+= 1
                if Int(counts[Int(index)]) == needed { reached.append(index) }
                }
            }
        }
        var found: [(String, Int)] = []
        var scratch = [Int](repeating: 0, count: 2 * 66)
        // Most words and queries are ASCII: their bytes are their scalars, compared as they are.
        let asciiQuery: [UInt8]? = query.allSatisfy { $0 < 0x80 } ? query.map { UInt8($0) } : nil
        var candidate: [UInt32] = []
        bytes.withUnsafeBufferPointer { bytes in
            for index in reached {
                let node = Int(index)
                let word = UnsafeBufferPointer(rebasing: bytes[Int(starts[node])..<Int(starts[node + 1])])
                let distance: Int
                if let asciiQuery, word.allSatisfy({ $0 < 0x80 }) {
                    distance = asciiQuery.withUnsafeBufferPointer {
                        Levenshtein.distance($0, word, limit: maximumDistance, scratch: &scratch)
                    }
                } else {
                    candidate.removeAll(keepingCapacity: true)
                    candidate.append(contentsOf: String(decoding: word, as: UTF8.self).unicodeScalars.lazy.map(\.value))
                    distance = query.withUnsafeBufferPointer { query in
                        candidate.withUnsafeBufferPointer { Levenshtein.distance(query, $0, limit: maximumDistance, scratch: &scratch) }
                    }
                }
                if distance <= maximumDistance { found.append((String(decoding: word, as: UTF8.self), distance)) }
            }
        }
        found.sort { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
        return Array(found.prefix(limit))
    }
}

/// Edit distance (insertions, deletions, substitutions) over Unicode scalars.
public enum Levenshtein {
    public static func distance(_ a: String, _ b: String) -> Int {
        let x = a.unicodeScalars.map(\.value), y = b.unicodeScalars.map(\.value)
        var scratch: [Int] = []
        return x.withUnsafeBufferPointer { x in
            y.withUnsafeBufferPointer { y in distance(x, y, limit: Int.max / 2, scratch: &scratch) }
        }
    }

    /// The distance, or some value above `limit` as soon as it must exceed it.
    static func distance<Element: Equatable>(_ a: UnsafeBufferPointer<Element>, _ b: UnsafeBufferPointer<Element>, limit: Int,
                         scratch: inout [Int]) -> Int {
        if abs(a.count - b.count) > limit { return limit + 1 }
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        let width = b.count + 1
        if scratch.count < 2 * width { scratch = [Int](repeating: 0, count: 2 * width) }
        return scratch.withUnsafeMutableBufferPointer { rows in
            var previous = 0, current = width
            for j in 0..<width { rows[j] = j }
            for i in 1...a.count {
                rows[current] = i
                var rowMinimum = i
                let ai = a[i - 1]
                for j in 1..<width {
                    let cost = ai == b[j - 1] ? 0 : 1
                    let value = min(rows[previous + j] + 1, rows[current + j - 1] + 1, rows[previous + j - 1] + cost)
                    rows[current + j] = value
                    if value < rowMinimum { rowMinimum = value }
                }
                if rowMinimum > limit { return limit + 1 }
                swap(&previous, &current)
            }
            return rows[previous + width - 1]
        }
    }
}
