import Foundation

/// The name an installed release goes by: its provenance `release` ("2024.9.7",
/// "2023-08-28"), which names its file (`releases/<name>.sqlite`) and what users
/// pin (`--release`).
///
/// Only names that are safe as one path component are accepted, so that no
/// database, however it was built, can name a file outside the releases
/// directory. A database built without provenance installs as ``unknown``, which
/// keeps the single-reference behaviour of older builds (a newer one replaces it).
public enum ReleaseName {
    /// The release of a database built without provenance (or whose pipeline could not tell).
    public static let unknown = "unknown"
    /// The name that pins the bundled database (never an installed release's).
    public static let bundled = "bundled"
    /// The signed header's text field (`protocol/STOL-FORMAT.md` §1.1): one grammar for the
    /// release a header signs, the one a database's provenance names and the one installed,
    /// so that every installed release can be signed again.
    public static let maximumLength = 32

    /// Whether `name` can name an installed release: 1–32 of `A–Z a–z 0–9 . _ + -`,
    /// starting with a letter or digit, and not ``bundled``.
    public static func isValid(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= maximumLength, name != bundled,
              name.utf8.first != nil else { return false }
        return name.utf8.enumerated().allSatisfy { isNameByte($1, first: $0 == 0) }
    }

    /// One byte of a name (a release's, or any text field of a `.stol` header): a letter or
    /// digit first, then also `. _ + -`.
    public static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
        isAlphanumeric(byte) || (!first && (byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")))
    }

    /// The releases installed in `directory` (`<name>.sqlite` files with valid names), oldest
    /// release first (``precedes(_:_:)``).
    public static func installed(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".sqlite") }
            .map { String($0.dropLast(".sqlite".count)) }
            .filter { isValid($0) }
            .sorted(by: precedes)
    }

    /// Release order: the numbers in the names compared as numbers, so that 2021.3.25
    /// comes before 2021.11.16 (and both before 2024.9.7); other characters compare as text.
    public static func precedes(_ a: String, _ b: String) -> Bool {
        let left = parts(a), right = parts(b)
        for (x, y) in zip(left, right) where x != y {
            switch (x, y) {
            case (.number(let m), .number(let n)): return m < n
            case (.number, .text): return true
            case (.text, .number): return false
            case (.text(let s), .text(let t)): return s < t
            }
        }
        return left.count < right.count
    }

    private enum Part: Equatable {
        case number(UInt64)
        case text(String)
    }

    private static func parts(_ name: String) -> [Part] {
        var parts: [Part] = []
        var current = ""
        var digits = false
        func flush() {
            guard !current.isEmpty else { return }
            parts.append(digits ? .number(UInt64(current.prefix(18)) ?? .max) : .text(current))
            current = ""
        }
        for character in name {
            let isDigit = character.isASCII && character.isNumber
            if isDigit != digits { flush(); digits = isDigit }
            current.append(character)
        }
        flush()
        return parts
    }

    /// The release name of a database with this provenance.
    public static func of(_ provenance: Provenance?) -> String {
        provenance?.release ?? unknown
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
