import Foundation

/// Turns user text into a safe FTS5 query.
///
/// User text never reaches FTS5 syntax: it is cut into words of letters and
/// digits (so `"`, `*`, `(`, `:`, `-`, `NEAR` and friends are just separators or
/// plain words), and every word is emitted as a quoted FTS5 string. Text between
/// a pair of double quotes becomes a phrase (its words adjacent and in order),
/// which is still a quoted FTS5 string of plain words. Only the prefix marker `*`
/// is added by us, after the closing quote of the last group.
public struct SearchQuery: Equatable, Sendable {
    /// Words, lower-cased with diacritics folded (as the `unicode61
    /// remove_diacritics 2` tokenizer sees them), in order.
    public let words: [String]
    /// The words grouped into phrases; a plain word is a group of one.
    public let groups: [[String]]
    /// The groups a name must match, each once: a plain word or a phrase typed again,
    /// and a plain word a phrase of the query holds, left out (in prefix mode the last
    /// group, the prefix, always stays last). Every word must match, so this is the
    /// same query, and what FTS5 and the scorer are given: 170 times "sp" costs what
    /// "sp" costs. ``words`` and ``text`` keep what was typed ("Gorilla gorilla" is a
    /// name of two words).
    public let matchGroups: [[String]]
    public let prefix: Bool
    /// The text as typed, trimmed (for name-index lookups that keep punctuation,
    /// e.g. "Alternaria sp. 10/S"); never part of an FTS5 expression.
    public let raw: String

    /// - Parameter phrase: the whole text is one phrase.
    public init(text: String, prefix: Bool, phrase: Bool = false) {
        var groups: [[String]] = []
        if phrase {
            let words = Self.words(in: text)
            if !words.isEmpty { groups = [words] }
        } else {
            // Balanced quotes delimit phrases; an unpaired quote is a separator.
            let parts = text.split(separator: "\"", omittingEmptySubsequences: false)
            let paired = parts.count % 2 == 1 ? parts.count : parts.count - 1
            for (index, part) in parts.enumerated() {
                let words = Self.words(in: String(part))
                guard !words.isEmpty else { continue }
                if index % 2 == 1 && index < paired {
                    groups.append(words)
                } else {
                    groups.append(contentsOf: words.map { [$0] })
                }
            }
        }
        self.groups = groups
        self.words = groups.flatMap { $0 }
        self.matchGroups = Self.distinct(groups, prefix: prefix)
        self.prefix = prefix
        self.raw = text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public var isEmpty: Bool { words.isEmpty }

    /// Words a name must match: those of ``matchGroups`` (a phrase counts each of its
    /// words). What a search's cost grows with; it has a cap (``SearchLimits/words``).
    public var matchWordCount: Int { matchGroups.reduce(0) { $0 + $1.count } }

    /// The distinct words of ``matchGroups``, in order.
    var distinctWords: [String] {
        var seen = Set<String>()
        return matchGroups.flatMap { $0 }.filter { seen.insert($0).inserted }
    }

    /// ``matchGroups`` from the groups as typed.
    static func distinct(_ groups: [[String]], prefix: Bool) -> [[String]] {
        let last = groups.count - 1
        // Words of whole phrases (not of a phrase being typed in prefix mode, whose last word is a prefix).
        let phraseWords = Set(groups.enumerated().filter { $0.element.count > 1 && !(prefix && $0.offset == last) }
            .flatMap(\.element))
        var seen = Set<[String]>()
        var result: [[String]] = []
        for (index, group) in groups.enumerated() {
            if prefix && index == last {
                result.append(group)
            } else if group.count == 1 && phraseWords.contains(group[0]) {
                continue
            } else if seen.insert(group).inserted {
                result.append(group)
            }
        }
        return result
    }

    /// "c elegans" when the query abbreviates a binomial's genus to its initial
    /// ("C. elegans", "E coli", "H. sapiens neanderthalensis"): a first word of one
    /// letter followed by at least one word; nil otherwise.
    public var abbreviationKey: String? {
        guard words.count >= 2, groups.count == words.count, words[0].count == 1,
              words[0].first.map({ $0.isLetter }) == true else { return nil }
        return words.joined(separator: " ")
    }

    /// The abbreviation key of a folded scientific name of two words or more
    /// ("caenorhabditis elegans" → "c elegans").
    static func abbreviationKey(ofFoldedName name: String) -> String? {
        guard let space = name.firstIndex(of: " "), let initial = name.first,
              name.index(after: space) < name.endIndex else { return nil }
        return String(initial) + name[space...]
    }

    /// Whether an abbreviated query of three words or more names part of a longer
    /// name: the genus starting with its initial, its epithet next, and every other
    /// word of it a word of the name ("E. coli MG1655" in "Escherichia coli str. K-12
    /// substr. MG1655").
    func abbreviates(partOf nameWords: [String]) -> Bool {
        guard abbreviationKey != nil, words.count > 2, nameWords.count > words.count, nameWords[0].count > 1,
              nameWords[0].hasPrefix(words[0]), nameWords[1] == words[1] else { return false }
        let rest = Set(nameWords.dropFirst(2))
        return words.dropFirst(2).allSatisfy(rest.contains)
    }

    /// Whether the folded words of a name are the query's abbreviation: as many
    /// words, the first starting with the query's initial, the others equal.
    func isAbbreviation(of nameWords: [String]) -> Bool {
        if words.count == 1, nameWords.count == 2, let initial = nameWords[0].first, nameWords[0].count > 1 {
            // One word for a binomial: its initial and its epithet ("ecoli").
            return words[0] == String(initial) + nameWords[1]
        }
        guard abbreviationKey != nil, nameWords.count == words.count, nameWords[0].count > 1,
              nameWords[0].hasPrefix(words[0]) else { return false }
        return nameWords.dropFirst().elementsEqual(words.dropFirst())
    }

    /// The query with its last word in the English plural, as the names of groups
    /// are written ("oak" → "oaks", "fruit fly" → "fruit flies", "wolf" → "wolves",
    /// "finch" → "finches"): the regular forms only, for a last word of three
    /// letters or more; empty for a phrase or a word with digits.
    public var pluralForms: [String] {
        guard let last = words.last, last.count >= 3, groups.count == words.count,
              last.allSatisfy({ $0.isLetter && $0.isASCII }) else { return [] }
        var forms: [String] = []
        if last.hasSuffix("y"), let before = last.dropLast().last, !"aeiou".contains(before) {
            forms.append(last.dropLast() + "ies")
        } else if ["s", "x", "z", "ch", "sh"].contains(where: { last.hasSuffix($0) }) {
            forms.append(last + "es")
        } else {
            forms.append(last + "s")
            if last.hasSuffix("o") { forms.append(last + "es") }
            if last.hasSuffix("fe") { forms.append(last.dropLast(2) + "ves") }
            if last.hasSuffix("f") { forms.append(last.dropLast() + "ves") }
        }
        let head = words.dropLast().joined(separator: " ")
        return forms.map { head.isEmpty ? $0 : head + " " + $0 }
    }

    /// Whether the folded words of a name are the query with its last word in the
    /// plural (``pluralForms``).
    func isPlural(of nameWords: [String]) -> Bool {
        guard nameWords.count == words.count, nameWords.count > 0,
              nameWords.dropLast().elementsEqual(words.dropLast()) else { return false }
        return pluralForms.contains(nameWords.joined(separator: " "))
    }

    /// The folded words joined by single spaces (what names are compared with).
    public var text: String { words.joined(separator: " ") }

    /// The FTS5 MATCH expression: implicit AND of quoted words and phrases.
    public var matchExpression: String {
        Self.expression(matchGroups, prefix: prefix)
    }

    /// The FTS5 expression of `groups`: each group quoted, the last one a prefix
    /// (`"…"*`) when `prefix`. A phrase with a word that occurs twice in the groups
    /// (in itself, "sp sp", or in another group, "sp 1" "sp 2") is given as its
    /// words instead (``loosensPhrases(_:)``): FTS5 checks a phrase in every row that
    /// holds its words, and a frequent word repeated made that row count the cost
    /// (16 times "sp" as one phrase: 874 ms over its 1.3 million rows on NCBI, where
    /// "sp" alone takes 0.1 ms to fill a page). The words match every row the phrase
    /// matches; the scorer keeps only the names that hold the phrase.
    static func expression(_ groups: [[String]], prefix: Bool) -> String {
        func quoted(_ words: [String]) -> String {
            "\"" + words.joined(separator: " ").replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        let repeated = repeatedWords(groups)
        var emitted = Set<String>()
        var parts: [String] = []
        for (index, group) in groups.enumerated() {
            let last = prefix && index == groups.count - 1
            if group.count > 1 && group.contains(where: repeated.contains) {
                for (position, word) in group.enumerated() where emitted.insert(word).inserted || (last && position == group.count - 1) {
                    parts.append(quoted([word]) + (last && position == group.count - 1 ? "*" : ""))
                }
            } else {
                parts.append(quoted(group) + (last ? "*" : ""))
            }
        }
        return parts.joined(separator: " ")
    }

    /// Words that occur more than once in `groups`.
    private static func repeatedWords(_ groups: [[String]]) -> Set<String> {
        var seen = Set<String>(), repeated = Set<String>()
        for word in groups.joined() where !seen.insert(word).inserted { repeated.insert(word) }
        return repeated
    }

    /// Whether ``expression(_:prefix:)`` gives a phrase of `groups` as its words: FTS5
    /// then matches more rows than the phrase, and a page of them may hold none of its
    /// names.
    static func loosensPhrases(_ groups: [[String]]) -> Bool {
        let repeated = repeatedWords(groups)
        return groups.contains { $0.count > 1 && $0.contains(where: repeated.contains) }
    }

    public static func words(in text: String) -> [String] {
        if let ascii = asciiWords(in: text) { return ascii }
        return fold(text).split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }

    /// The same words for pure ASCII text, without Foundation's folding (which
    /// costs tens of microseconds a call, and search folds hundreds of names).
    private static func asciiWords(in text: String) -> [String]? {
        var words: [String] = []
        var current: [UInt8] = []
        for byte in text.utf8 {
            guard byte < 0x80 else { return nil }
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                current.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                current.append(byte + 32)
            default:
                if !current.isEmpty {
                    words.append(String(decoding: current, as: UTF8.self))
                    current.removeAll(keepingCapacity: true)
                }
            }
        }
        if !current.isEmpty { words.append(String(decoding: current, as: UTF8.self)) }
        return words
    }

    public static func fold(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    }

    /// Whether `name` contains every query word and phrase (the last word as a
    /// prefix when `prefix`), the test used to report which name matched.
    public func matches(_ name: String) -> Bool {
        matches(words: Self.words(in: name))
    }

    func matches(words nameWords: [String]) -> Bool {
        for (groupIndex, group) in matchGroups.enumerated() {
            let lastGroup = prefix && groupIndex == matchGroups.count - 1
            var found = false
            var start = 0
            while !found && start + group.count <= nameWords.count {
                found = true
                for (offset, word) in group.enumerated() {
                    let nameWord = nameWords[start + offset]
                    let isPrefix = lastGroup && offset == group.count - 1
                    if isPrefix ? !nameWord.hasPrefix(word) : nameWord != word {
                        found = false
                        break
                    }
                }
                start += 1
            }
            if !found { return false }
        }
        return true
    }
}
