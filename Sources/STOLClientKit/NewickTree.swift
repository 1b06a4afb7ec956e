import Foundation

/// A Newick tree as a user brings it (from ete4, IQ-TREE, RAxML, R's ape), read
/// and written back without losing what it carries: labels, branch lengths as
/// they were typed, and NHX properties (`[&&NHX:key=value:…]`).
///
/// Read as ete4 reads it with `parser=1`: a label bare or quoted ('…' with ''
/// for a quote, or "…"), `:length` after it, an NHX comment after that; any
/// other `[…]` is a comment and skipped; blanks between tokens do not count.
/// Parsing and writing are iterative, so a caterpillar tree 100,000 levels deep
/// cannot overflow the stack.
public struct NewickTree: Sendable, Equatable {
    public struct Property: Sendable, Equatable {
        public var key: String
        public var value: String
        public init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    public struct Node: Sendable, Equatable {
        /// The label, unquoted ('' and "" undone); empty when there is none.
        public var label: String
        /// The branch length as written (its text, so that it is written back the same).
        public var length: String?
        /// The NHX properties, in their order.
        public var properties: [Property]
        /// The node's content as it was in the text (label, length, comments), trimmed:
        /// what a node that is not changed is written back as.
        public var source: String
        public internal(set) var parent: Int?
        public internal(set) var children: [Int]
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        /// The byte offset in the text where reading failed.
        public let offset: Int
        public let reason: String
        public var description: String { "Newick, at byte \(offset): \(reason)" }
    }

    /// The nodes in preorder: the root first, a node before its children, children in order.
    public internal(set) var nodes: [Node]

    /// Reads one tree; text after its `;` other than blanks is an error.
    public init(parsing text: String) throws(ParseError) {
        var reader = Reader(bytes: Array(text.utf8))
        nodes = try reader.tree()
    }

    /// The tree as Newick, each node's content from `content` (its index; nil keeps
    /// what the text had).
    public func written(content: (Int) -> String?) -> String {
        guard !nodes.isEmpty else { return ";" }
        var text = ""
        // (node, next child to write); a node's content follows its ")" or stands alone.
        var stack: [(node: Int, next: Int)] = [(0, 0)]
        while let (node, next) = stack.last {
            let children = nodes[node].children
            if children.isEmpty {
                text += content(node) ?? nodes[node].source
                stack.removeLast()
                continue
            }
            if next == 0 { text += "(" } else if next < children.count { text += "," }
            if next < children.count {
                stack[stack.count - 1].next += 1
                stack.append((children[next], 0))
            } else {
                text += ")" + (content(node) ?? nodes[node].source)
                stack.removeLast()
            }
        }
        return text + ";"
    }

    /// A node's content written from its parts: the label quoted where Newick needs it,
    /// `:length`, and the NHX properties (none: no comment).
    public static func content(label: String, length: String?, properties: [Property]) -> String {
        var text = quoted(label)
        if let length { text += ":" + length }
        if !properties.isEmpty {
            text += "[&&NHX:" + properties.map { "\($0.key)=\($0.value)" }.joined(separator: ":") + "]"
        }
        return text
    }

    /// A label in single quotes when it holds a character Newick reads otherwise
    /// (the characters ete4's `quote` escapes, and a double quote, which would start a
    /// quoted label), a quote inside doubled.
    public static func quoted(_ label: String) -> String {
        guard label.utf8.contains(where: { quotedBytes[Int($0)] }) else { return label }
        return "'" + label.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// An NHX value as ete4's `prop_repr` writes it: each of `:;(),[]=` becomes `_`.
    /// (Checked on the UTF-8 bytes: a tree of 10,000 taxa writes some 400,000 names, and
    /// a character-by-character test of each was most of `annotate`'s time.)
    public static func nhxValue(_ value: String) -> String {
        guard value.utf8.contains(where: { nhxBytes[Int($0)] }) else { return value }
        return String(decoding: value.utf8.map { nhxBytes[Int($0)] ? UInt8(ascii: "_") : $0 }, as: UTF8.self)
    }

    /// The bytes that make a label need quotes, and those NHX writes as `_` (all ASCII, so a
    /// byte of a multi-byte UTF-8 character is never one of them).
    private static let quotedBytes = byteSet(" \t\r\n()[]':;,\"")
    private static let nhxBytes = byteSet(":;(),[]=")
    private static func byteSet(_ characters: String) -> [Bool] {
        var table = [Bool](repeating: false, count: 256)
        for byte in characters.utf8 { table[Int(byte)] = true }
        return table
    }

    /// The parser: a cursor over the UTF-8 bytes.
    struct Reader {
        let bytes: [UInt8]
        var position = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func failure(_ reason: String) -> ParseError { ParseError(offset: position, reason: reason) }

        var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        static let blanks: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]

        mutating func skipBlanks() {
            while let byte = current, Self.blanks.contains(byte) { position += 1 }
        }

        /// Blanks and comments, up to an NHX comment (which belongs to the node before it).
        mutating func skipBlanksAndComments() throws(ParseError) {
            while true {
                skipBlanks()
                guard current == UInt8(ascii: "["), !bytes[position...].starts(with: Self.nhx) else { return }
                _ = try bracketed()
            }
        }

        static let nhx = Array("[&&NHX".utf8)

        /// The text of a `[…]` at the cursor, without its brackets.
        mutating func bracketed() throws(ParseError) -> String {
            let start = position
            guard let close = bytes[(position + 1)...].firstIndex(of: UInt8(ascii: "]")) else {
                throw failure("a '[' without its ']'")
            }
            position = close + 1
            return String(decoding: bytes[(start + 1)..<close], as: UTF8.self)
        }

        mutating func tree() throws(ParseError) -> [Node] {
            var nodes: [Node] = []
            var open: [Int] = []
            var expectingNode = true
            func newNode() -> Int {
                let parent = open.last
                nodes.append(Node(label: "", length: nil, properties: [], source: "", parent: parent, children: []))
                if let parent { nodes[parent].children.append(nodes.count - 1) }
                return nodes.count - 1
            }
            try skipBlanksAndComments()
            guard current != nil else { throw failure("no tree: the text is empty") }
            while true {
                try skipBlanksAndComments()
                guard let byte = current else { throw failure("the tree ends without ';'") }
                if expectingNode {
                    if byte == UInt8(ascii: "(") {
                        open.append(newNode())
                        position += 1
                        continue
                    }
                    let node = newNode()
                    try content(of: node, in: &nodes)
                    if open.isEmpty { break }
                    expectingNode = false
                } else if byte == UInt8(ascii: ",") {
                    position += 1
                    expectingNode = true
                } else if byte == UInt8(ascii: ")") {
                    position += 1
                    let node = open.removeLast()
                    try content(of: node, in: &nodes)
                    if open.isEmpty { break }
                } else {
                    throw failure("expected ',' or ')' after a node, found '\(Character(Unicode.Scalar(byte)))'")
                }
            }
            try skipBlanksAndComments()
            guard current == UInt8(ascii: ";") else {
                throw current == nil ? failure("the tree ends without ';'")
                    : failure(current == UInt8(ascii: ")") ? "a ')' without its '('" : "text after the tree's last ')' or label")
            }
            position += 1
            try skipBlanksAndComments()
            guard current == nil else { throw failure("text after the ';' (one tree per input)") }
            return nodes
        }

        /// A node's label, length and NHX properties, up to the next `,`, `)` or `;`.
        mutating func content(of node: Int, in nodes: inout [Node]) throws(ParseError) {
            try skipBlanksAndComments()
            let start = position
            var label = ""
            if let quote = current, quote == UInt8(ascii: "'") || quote == UInt8(ascii: "\"") {
                position += 1
                var raw: [UInt8] = []
                while true {
                    guard let byte = current else { throw failure("a quoted label without its closing quote") }
                    position += 1
                    if byte == quote {
                        if current == quote { raw.append(quote); position += 1; continue }
                        break
                    }
                    raw.append(byte)
                }
                label = String(decoding: raw, as: UTF8.self)
            } else {
                let endings: Set<UInt8> = [UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: ","), UInt8(ascii: ")"),
                                           UInt8(ascii: ";"), UInt8(ascii: "(")]
                while let byte = current, !endings.contains(byte) { position += 1 }
                label = String(decoding: bytes[start..<position], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                if current == UInt8(ascii: "(") { throw failure("a '(' inside a label") }
            }
            var length: String?
            var properties: [Property] = []
            // The length and comments, NHX or not, in either order (`A:0.5[&&NHX:…]`, and
            // `A[&&NHX:…]:0.5` as some writers put them).
            while true {
                skipBlanks()
                if current == UInt8(ascii: ":"), length == nil {
                    position += 1
                    try skipBlanksAndComments()
                    let lengthStart = position
                    let endings: Set<UInt8> = [UInt8(ascii: "["), UInt8(ascii: ","), UInt8(ascii: ")"), UInt8(ascii: ";")]
                    while let byte = current, !endings.contains(byte), !Self.blanks.contains(byte) { position += 1 }
                    let text = String(decoding: bytes[lengthStart..<position], as: UTF8.self)
                    guard Double(text) != nil else { throw failure("the branch length '\(text.prefix(40))' is not a number") }
                    length = text
                } else if current == UInt8(ascii: "[") {
                    let comment = try bracketed()
                    guard comment.hasPrefix("&&NHX") else { continue }
                    for pair in comment.dropFirst(5).split(separator: ":") {
                        guard let equals = pair.firstIndex(of: "=") else { throw failure("an NHX property without '=': '\(pair.prefix(40))'") }
                        properties.append(Property(key: String(pair[..<equals]), value: String(pair[pair.index(after: equals)...])))
                    }
                } else {
                    break
                }
            }
            let source = String(decoding: bytes[start..<position], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            nodes[node].label = label
            nodes[node].length = length
            nodes[node].properties = properties
            nodes[node].source = source
        }
    }
}
