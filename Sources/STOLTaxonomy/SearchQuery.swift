import Foundation

/// Turns user text into a safe FTS5 query.
///
/// User text never reaches FTS5 syntax: it is cut into words of letters and
/// digits (so `"`, `*`, `(`, `:`, `-`, `NEAR` and friends are just separators or
/// plain words), and every word is emitted as a quoted FTS5 string. Only the
/// prefix marker `*` is added by us, after the closing quote of the last word.
public struct SearchQuery: Equatable, Sendable {
    /// Words, lower-cased with diacritics folded (as the `unicode61
    /// remove_diacritics 2` tokenizer sees them).
    public let words: [String]
    public let prefix: Bool

    public init(text: String, prefix: Bool) {
        self.words = Self.words(in: text)
        self.prefix = prefix
    }

    public var isEmpty: Bool { words.isEmpty }

    /// The FTS5 MATCH expression: implicit AND of quoted words.
    public var matchExpression: String {
        words.enumerated().map { index, word in
            let quoted = "\"" + word.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            return prefix && index == words.count - 1 ? quoted + "*" : quoted
        }.joined(separator: " ")
    }

    public static func words(in text: String) -> [String] {
        fold(text).split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }

    public static func fold(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    }

    /// Whether `name` contains every query word (the last as a prefix when
    /// `prefix`), the test used to report which name matched.
    public func matches(_ name: String) -> Bool {
        let nameWords = Self.words(in: name)
        for (index, word) in words.enumerated() {
            let isPrefix = prefix && index == words.count - 1
            if !nameWords.contains(where: { isPrefix ? $0.hasPrefix(word) : $0 == word }) { return false }
        }
        return true
    }
}
