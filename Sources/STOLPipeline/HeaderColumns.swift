/// A header row read into column positions: names are matched case-insensitively
/// and without a namespace prefix (`dwc:taxonID` is `taxonID`).
struct HeaderColumns {
    let file: String
    private let positions: [String: Int]

    init(_ reader: DelimitedRowReader) {
        var positions: [String: Int] = [:]
        for index in 0..<reader.fieldCount {
            let name = reader.string(index)
            let bare = name.split(separator: ":").last.map(String.init) ?? name
            let key = bare.lowercased()
            if positions[key] == nil { positions[key] = index }
        }
        self.file = reader.path
        self.positions = positions
    }

    func required(_ name: String) throws(SourceError) -> Int {
        guard let index = positions[name.lowercased()] else { throw .missingColumn(file: file, column: name) }
        return index
    }

    func optional(_ name: String) -> Int? { positions[name.lowercased()] }
}
