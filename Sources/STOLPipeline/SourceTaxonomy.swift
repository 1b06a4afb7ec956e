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
        /// Source flags that say something about the taxon itself (Open Tree:
        /// `environmental`, `not_otu`, `incertae_sedis`, `extinct`, …). Empty for
        /// sources without flags.
        public var flags: [String] = []

        public init(id: TaxonID, parentID: TaxonID?, rank: String, scientificName: String, authorship: String?,
                    status: TaxonStatus, flags: [String] = []) {
            self.id = id
            self.parentID = parentID
            self.rank = rank
            self.scientificName = scientificName
            self.authorship = authorship
            self.status = status
            self.flags = flags
        }
    }

    public struct Synonym: Sendable, Equatable {
        public var acceptedID: TaxonID
        public var name: String
        public var authorship: String?
        /// The source's class of the name, verbatim (NCBI `genbank synonym`,
        /// `equivalent name`, …); nil when the source has no classes (the
        /// normaliser then writes `synonym`).
        public var nameClass: String?

        public init(acceptedID: TaxonID, name: String, authorship: String?, nameClass: String? = nil) {
            self.acceptedID = acceptedID
            self.name = name
            self.authorship = authorship
            self.nameClass = nameClass
        }
    }

    public struct VernacularName: Sendable, Equatable {
        public var taxonID: TaxonID
        public var name: String
        /// A BCP-47 tag (already mapped from the source's code).
        public var language: String
        public var preferred: Bool
        /// The source's class of the name, verbatim (NCBI `genbank common name`,
        /// `blast name`, …); nil when the source has no classes (the normaliser
        /// then writes `vernacular name`).
        public var nameClass: String?

        public init(taxonID: TaxonID, name: String, language: String, preferred: Bool, nameClass: String? = nil) {
            self.taxonID = taxonID
            self.name = name
            self.language = language
            self.preferred = preferred
            self.nameClass = nameClass
        }
    }

    /// A name of a taxon that is neither one people call it nor another
    /// scientific name of it, but that people still type for it: an acronym
    /// ("HIV-1"), a narrower group it includes, its name with the author, a
    /// misspelling the source records (NCBI `acronym`, `includes`, `authority`,
    /// `misspelling`, …). Kept so that search finds the taxon by it.
    public struct OtherName: Sendable, Equatable {
        public var taxonID: TaxonID
        public var name: String
        public var type: NameType
        /// The source's class of the name, verbatim (`genbank acronym`, `in-part`, …).
        public var nameClass: String

        public init(taxonID: TaxonID, name: String, type: NameType, nameClass: String) {
            self.taxonID = taxonID
            self.name = name
            self.type = type
            self.nameClass = nameClass
        }
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
    /// Names that are neither vernacular names nor synonyms (``OtherName``).
    public var otherNames: [OtherName] = []
    public var properties: [Property] = []
    public var references: [Reference] = []
    /// Ids the source retired by merging them into another (NCBI `merged.dmp`:
    /// old → new): schema 2 `merged_ids`, and the id-stability checks.
    public var merged: [TaxonID: TaxonID] = [:]
    /// Ids the source deleted (NCBI `delnodes.dmp`).
    public var deleted: Set<TaxonID> = []
    /// What the reader skipped or merged while reading (for the build report).
    public var readStatistics = ReadStatistics()

    public init() {}
}

/// Counts a reader keeps about rows it did not turn into data one to one.
public struct ReadStatistics: Sendable, Equatable {
    /// Data rows read, over all files.
    public var rows = 0
    /// Lines skipped because they were damaged (NUL bytes in or next to them)
    /// and could not be parsed.
    public var damagedLines = 0
    /// Rows that repeated an earlier row (same taxon id, or the same name of the same taxon).
    public var duplicateRows = 0
    /// Names whose taxon id is not a taxon of the source.
    public var orphanNames = 0

    public init() {}
}

/// Progress of a long read, reported every few hundred thousand rows and once
/// at the end of each file.
public struct ReadProgress: Sendable {
    public var file: String
    public var rows: Int
    public var elapsed: Duration
    public var finished: Bool

    public var rowsPerSecond: Double {
        let seconds = elapsed.inSeconds
        return seconds > 0 ? Double(rows) / seconds : 0
    }
}

public typealias ReadProgressHandler = @Sendable (ReadProgress) -> Void

/// Why a source could not be read. Each case names the file and line.
public enum SourceError: Error, Equatable, CustomStringConvertible {
    case missingFile(String)
    case missingColumn(file: String, column: String)
    case badValue(file: String, line: Int, column: String, value: String)
    case unreadable(file: String, detail: String)
    /// A line that does not have the shape of the format (too few fields, …).
    case malformedLine(file: String, line: Int, detail: String)

    public var description: String {
        switch self {
        case .missingFile(let path): "source file not found: \(path)"
        case .missingColumn(let file, let column): "\(file): required column '\(column)' is missing from the header"
        case .badValue(let file, let line, let column, let value): "\(file):\(line): bad \(column) '\(value)'"
        case .unreadable(let file, let detail): "\(file): \(detail)"
        case .malformedLine(let file, let line, let detail): "\(file):\(line): \(detail)"
        }
    }
}
