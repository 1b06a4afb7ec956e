import Foundation
import Glibc

/// Reads rows of a delimited text file at byte level.
///
/// Two separators: `.dump` is the NCBI/Open Tree `\t|\t` with an optional line
/// end of `\t|` (or `\t|\t`); `.tab` is plain TSV (GBIF, ColDP), where quotes are
/// ordinary characters. Both accept LF and CRLF line ends and skip blank lines.
/// A leading UTF-8 byte order mark is skipped.
///
/// Damaged files: a NUL byte ends the current line the way a newline does, and
/// the run of NULs is skipped. The lines on either side of such a run are marked
/// ``isDamaged`` so that readers skip them when they do not parse (a cut-off row),
/// instead of failing the whole read; elsewhere a malformed line is an error.
struct DelimitedRowReader {
    enum Separator { case dump, tab }

    let file: MappedFile
    let separator: Separator
    /// 1-based number of the line the current row starts on.
    private(set) var line = 0
    /// Whether the current row touches a run of NUL bytes.
    private(set) var isDamaged = false
    /// Number of fields of the current row.
    private(set) var fieldCount = 0

    private var position = 0
    private var completedLines = 0
    private var nextIsDamaged = false
    private var starts: [Int] = Array(repeating: 0, count: 32)
    private var ends: [Int] = Array(repeating: 0, count: 32)

    init(file: MappedFile, separator: Separator) {
        self.file = file
        self.separator = separator
        // A UTF-8 byte order mark (spreadsheet exports write one) is not part of the first field.
        let bytes = file.bytes
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { position = 3 }
    }

    var path: String { file.path }

    /// Advances to the next non-blank row; false at the end of the file.
    mutating func next() -> Bool {
        guard let base = file.bytes.baseAddress else { return false }
        let count = file.bytes.count
        while position < count {
            let start = position
            line = completedLines + 1
            let remaining = count - start
            var end: Int
            var resume: Int
            if let newline = memchr(base + start, 0x0A, remaining) {
                end = base.distance(to: newline.assumingMemoryBound(to: UInt8.self))
                resume = end + 1
            } else {
                end = count
                resume = count
            }
            var damaged = nextIsDamaged
            nextIsDamaged = false
            if end > start, let nul = memchr(base + start, 0, end - start) {
                // Cut the line at the NUL and skip the run; what follows the run
                // up to the next newline is the (also damaged) next segment.
                end = base.distance(to: nul.assumingMemoryBound(to: UInt8.self))
                var skip = end
                while skip < count && base[skip] == 0 { skip += 1 }
                resume = skip
                damaged = true
                nextIsDamaged = true
            } else if resume > end {
                completedLines += 1
            }
            position = resume
            if split(base, start, end) {
                isDamaged = damaged
                return true
            }
        }
        return false
    }

    /// Splits `[start, end)` into fields; false when the line is blank.
    private mutating func split(_ base: UnsafePointer<UInt8>, _ start: Int, _ lineEnd: Int) -> Bool {
        var end = lineEnd
        if end > start && base[end - 1] == 0x0D { end -= 1 }
        if separator == .dump {
            // Line terminators `\t|\t`, `\t|` (NCBI) — also a bare trailing `|`.
            if end - start >= 3 && base[end - 3] == 0x09 && base[end - 2] == 0x7C && base[end - 1] == 0x09 {
                end -= 3
            } else if end - start >= 2 && base[end - 2] == 0x09 && base[end - 1] == 0x7C {
                end -= 2
            } else if end - start == 1 && base[start] == 0x7C {
                end -= 1
            }
        }
        // Blank (or whitespace-only) lines carry no row.
        var probe = start
        while probe < end && (base[probe] == 0x20 || base[probe] == 0x09) { probe += 1 }
        if probe == end { return false }

        fieldCount = 0
        var fieldStart = start
        var cursor = start
        switch separator {
        case .tab:
            while cursor < end {
                if base[cursor] == 0x09 {
                    append(fieldStart, cursor)
                    fieldStart = cursor + 1
                }
                cursor += 1
            }
        case .dump:
            while cursor + 2 < end {
                guard let tab = memchr(base + cursor, 0x09, end - cursor - 2) else { break }
                let at = base.distance(to: tab.assumingMemoryBound(to: UInt8.self))
                if base[at + 1] == 0x7C && base[at + 2] == 0x09 {
                    append(fieldStart, at)
                    fieldStart = at + 3
                    cursor = at + 3
                } else {
                    cursor = at + 1
                }
            }
        }
        append(fieldStart, end)
        return true
    }

    private mutating func append(_ start: Int, _ end: Int) {
        if fieldCount == starts.count {
            starts.append(0)
            ends.append(0)
        }
        // Fields are trimmed of spaces and tabs at both ends.
        guard let base = file.bytes.baseAddress else { return }
        var s = start, e = end
        while s < e && (base[s] == 0x20 || base[s] == 0x09) { s += 1 }
        while e > s && (base[e - 1] == 0x20 || base[e - 1] == 0x09) { e -= 1 }
        starts[fieldCount] = s
        ends[fieldCount] = e
        fieldCount += 1
    }

    // MARK: Field access

    /// The bytes of field `index` (empty when the row has fewer fields).
    func bytes(_ index: Int) -> UnsafeBufferPointer<UInt8> {
        guard index >= 0, index < fieldCount, let base = file.bytes.baseAddress else {
            return UnsafeBufferPointer(start: nil, count: 0)
        }
        return UnsafeBufferPointer(start: base + starts[index], count: ends[index] - starts[index])
    }

    func isEmpty(_ index: Int) -> Bool {
        index >= fieldCount || starts[index] == ends[index]
    }

    /// Field `index` as text (invalid UTF-8 is repaired), "" when absent.
    func string(_ index: Int) -> String {
        let field = bytes(index)
        return field.isEmpty ? "" : String(decoding: field, as: UTF8.self)
    }

    /// Field `index` as text, nil when absent or empty.
    func optionalString(_ index: Int?) -> String? {
        guard let index, !isEmpty(index) else { return nil }
        return string(index)
    }

    /// Field `index` as a non-negative decimal integer, nil when it is anything else.
    func int64(_ index: Int) -> Int64? {
        let field = bytes(index)
        guard !field.isEmpty, field.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in field {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value &* 10 &+ Int64(byte &- 0x30)
        }
        return value
    }

    /// Whether field `index` is exactly `literal` (ASCII, case-sensitive).
    func equals(_ index: Int, _ literal: StaticString) -> Bool {
        let field = bytes(index)
        guard field.count == literal.utf8CodeUnitCount else { return false }
        guard let fieldBase = field.baseAddress else { return literal.utf8CodeUnitCount == 0 }
        return memcmp(fieldBase, literal.utf8Start, field.count) == 0
    }

    /// Whether field `index` equals `literal`, ignoring ASCII case.
    func equalsIgnoringCase(_ index: Int, _ literal: StaticString) -> Bool {
        let field = bytes(index)
        guard field.count == literal.utf8CodeUnitCount else { return false }
        let other = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for (a, b) in zip(field, other) where a | 0x20 != b | 0x20 { return false }
        return true
    }

    /// Field `index` lower-cased (ASCII only), for small vocabularies such as statuses.
    func lowercased(_ index: Int) -> String {
        string(index).lowercased()
    }
}

extension DelimitedRowReader {
    /// Opens a tab-separated file whose first row is a header (ColDP, the
    /// released-id records): the reader is left on the header row, so the
    /// first `next()` gives the first data row.
    ///
    /// An empty file is an error rather than a table without rows: a header is
    /// what says which column is which, and a file without one was cut short.
    static func headedTable(path: String) throws(SourceError) -> (rows: DelimitedRowReader, header: HeaderColumns) {
        var reader = DelimitedRowReader(file: try MappedFile(path: path), separator: .tab)
        guard reader.next() else { throw .unreadable(file: path, detail: "empty file") }
        return (reader, HeaderColumns(reader))
    }
}
