import Foundation

/// A tab-separated file with a header row, as ColDP and GBIF ship them.
///
/// Fields are split on tabs only (ColDP forbids quoting in TSV); a trailing `\r`
/// is dropped, so files with Windows line ends read the same.
struct TSVTable {
    let file: String
    let header: [String: Int]
    let rows: [(line: Int, fields: [Substring])]

    init(path: String) throws(SourceError) {
        guard FileManager.default.fileExists(atPath: path) else { throw .missingFile(path) }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .unreadable(file: path, detail: "not UTF-8 text")
        }
        // In Swift "\r\n" is one Character, so splitting on "\n" alone would never split a CRLF file.
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        if lines.last == "" { lines.removeLast() }
        guard let first = lines.first else { throw .unreadable(file: path, detail: "empty file") }
        var header: [String: Int] = [:]
        for (index, name) in Self.fields(first).enumerated() {
            // ColDP headers may be prefixed, e.g. `col:ID`; match on the bare name, case-insensitively.
            let bare = name.split(separator: ":").last.map(String.init) ?? String(name)
            header[bare.lowercased()] = index
        }
        self.file = path
        self.header = header
        self.rows = lines.dropFirst().enumerated().compactMap { offset, line in
            line.isEmpty ? nil : (offset + 2, Self.fields(line))
        }
    }

    private static func fields(_ line: Substring) -> [Substring] {
        var line = line
        if line.hasSuffix("\r") { line = line.dropLast() }
        return line.split(separator: "\t", omittingEmptySubsequences: false)
    }

    func column(_ name: String) throws(SourceError) -> Int {
        guard let index = header[name.lowercased()] else { throw .missingColumn(file: file, column: name) }
        return index
    }

    func optionalColumn(_ name: String) -> Int? { header[name.lowercased()] }

    static func value(_ fields: [Substring], _ index: Int?) -> String? {
        guard let index, index < fields.count else { return nil }
        let value = fields[index].trimmingCharacters(in: .whitespaces)
        return value.isEmpty ? nil : value
    }
}
