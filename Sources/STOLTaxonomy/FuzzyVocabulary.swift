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
public struct FuzzyVocabulary: Sendable {
    /// Unicode scalars of every word, back to back.
    private let scalars: [UInt32]
    /// Start of each word in `scalars` (one more element than there are words).
    private let starts: [Int32]
    private let words: [String]
    /// Trigram → the words containing it (each word once per distinct trigram).
    private let postings: [UInt64: [Int32]]

    public init<S: Sequence>(words input: S) where S.Element == String {
        var unique = Set<String>()
        var words: [String] = []
        for word in input where !word.isEmpty && unique.insert(word).inserted { words.append(word) }
        var scalars: [UInt32] = []
        var starts: [Int32] = [0]
        starts.reserveCapacity(words.count + 1)
        var postings: [UInt64: [Int32]] = [:]
        for (index, word) in words.enumerated() {
            let wordScalars = word.unicodeScalars.map(\.value)
            scalars.append(contentsOf: wordScalars)
            starts.append(Int32(scalars.count))
            for gram in Set(Self.trigrams(wordScalars)) { postings[gram, default: []].append(Int32(index)) }
        }
        self.words = words
        self.scalars = scalars
        self.starts = starts
        self.postings = postings
    }

    /// Trigrams of the word padded with two marks at each end (n + 2 of them).
    static func trigrams(_ word: [UInt32]) -> [UInt64] {
        let padded: [UInt32] = [0x1FFFFE, 0x1FFFFE] + word + [0x1FFFFF, 0x1FFFFF]
        return (0..<(padded.count - 2)).map { i in
            UInt64(padded[i]) << 42 | UInt64(padded[i + 1]) << 21 | UInt64(padded[i + 2])
        }
    }

    public var count: Int { words.count }

    /// Words within `maximumDistance` of `word`, nearest first (then alphabetical).
    public func corrections(of word: String, maximumDistance: Int, limit: Int = 20) -> [(word: String, distance: Int)] {
        guard !words.isEmpty else { return [] }
        let query = word.unicodeScalars.map(\.value)
        let grams = Self.trigrams(query)
        let distinct = Set(grams)
        // Shared distinct trigrams ≥ (n + 2 − 3d) − (repeated trigrams of the query).
        let needed = grams.count - 3 * maximumDistance - (grams.count - distinct.count)
        var counts = [UInt8](repeating: 0, count: words.count)
        var reached: [Int32] = []
        if needed <= 0 {
            // Too short for the filter to prove anything: compare with every word.
            reached = (0..<Int32(words.count)).map { $0 }
        } else {
            for gram in distinct {
            for index in postings[gram] ?? [] {
                counts[Int(index)] &+= 1
                if Int(counts[Int(index)]) == needed { reached.append(index) }
                }
            }
        }
        var found: [(String, Int)] = []
        var scratch = [Int](repeating: 0, count: 2 * 66)
        scalars.withUnsafeBufferPointer { buffer in
            query.withUnsafeBufferPointer { query in
                for index in reached {
                    let node = Int(index)
                    let candidate = UnsafeBufferPointer(rebasing: buffer[Int(starts[node])..<Int(starts[node + 1])])
                    let distance = Levenshtein.distance(query, candidate, limit: maximumDistance, scratch: &scratch)
                    if distance <= maximumDistance { found.append((words[node], distance)) }
                }
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
    static func distance(_ a: UnsafeBufferPointer<UInt32>, _ b: UnsafeBufferPointer<UInt32>, limit: Int,
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
