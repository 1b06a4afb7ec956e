import STOLModel

/// A source dataset after parsing and before normalisation: the source's own ids
/// and ranks, every intermediate rank still present.
public struct SourceTaxonomy: Sendable {
    public struct Usage: Sendable, Equatable {
        public var id: TaxonID
        public var parentID: TaxonID?
        public var rank: String
        public var scientificName: String
        public var authorship: String?
        public var status: TaxonStatus
    }

    public struct Synonym: Sendable, Equatable {
        public var acceptedID: TaxonID
        public var name: String
        public var authorship: String?
    }

    public struct VernacularName: Sendable, Equatable {
        public var taxonID: TaxonID
        public var name: String
        /// A BCP-47 tag (already mapped from the source's code).
        public var language: String
        public var preferred: Bool
    }

    public struct Property: Sendable, Equatable {
        public var taxonID: TaxonID
        public var key: String
        public var value: String
        public var unit: String?
        public var referenceID: String?
    }

    public struct Reference: Sendable, Equatable {
        public var id: String
        public var citation: String
        public var link: String?
        public var type: String
    }

    public var usages: [Usage] = []
    public var synonyms: [Synonym] = []
    public var vernacularNames: [VernacularName] = []
    public var properties: [Property] = []
    public var references: [Reference] = []

    public init() {}
}

/// Why a source could not be read. Each case names the file and line.
public enum SourceError: Error, Equatable, CustomStringConvertible {
    case missingFile(String)
    case missingColumn(file: String, column: String)
    case badValue(file: String, line: Int, column: String, value: String)
    case unreadable(file: String, detail: String)

    public var description: String {
        switch self {
        case .missingFile(let path): "source file not found: \(path)"
        case .missingColumn(let file, let column): "\(file): required column '\(column)' is missing from the header"
        case .badValue(let file, let line, let column, let value): "\(file):\(line): bad \(column) '\(value)'"
        case .unreadable(let file, let detail): "\(file): \(detail)"
        }
    }
}
