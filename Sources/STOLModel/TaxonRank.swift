/// The eight main ranks STOL keeps, root first (docs/design/queries-and-algorithms.md §1).
///
/// Sources have dozens of ranks; the pipeline keeps these eight and attaches each
/// kept taxon to its nearest kept ancestor.
public enum TaxonRank: String, CaseIterable, Sendable, Codable, Comparable {
    case domain, kingdom, phylum, `class`, order, family, genus, species

    /// 0 for domain … 7 for species.
    public var level: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (lhs: TaxonRank, rhs: TaxonRank) -> Bool { lhs.level < rhs.level }

    /// Maps a source rank name onto a main rank, or nil for an intermediate rank.
    /// A top-level `superkingdom` (NCBI) is a domain; `empire`/`realm` are not kept.
    public init?(sourceRank: String) {
        let normalized = sourceRank.trimmingCharacters(in: .whitespaces).lowercased()
        switch normalized {
        case "domain", "superkingdom": self = .domain
        case "kingdom": self = .kingdom
        case "phylum", "division": self = .phylum
        case "class": self = .class
        case "order": self = .order
        case "family": self = .family
        case "genus": self = .genus
        case "species": self = .species
        default: return nil
        }
    }
}

/// `taxa.status` values.
public enum TaxonStatus: String, Sendable, CaseIterable {
    case accepted, synonym, doubtful
}

/// `names.name_type` values.
public enum NameType: String, Sendable, CaseIterable {
    case common, synonym, vernacular, trade
}

/// A stable taxon id: the source's own id (e.g. the NCBI taxid).
public typealias TaxonID = Int64

import Foundation
