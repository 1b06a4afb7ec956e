/// The eight main ranks STOL keeps, root first (docs/design/queries-and-algorithms.md §1).
///
/// Sources have dozens of ranks; the pipeline keeps these eight and attaches each
/// kept taxon to its nearest kept ancestor.
public enum TaxonRank: String, CaseIterable, Sendable, Codable, Comparable {
    case domain, kingdom, phylum, `class`, order, family, genus, species

    /// 0 for domain … 7 for species.
    public var level: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (lhs: TaxonRank, rhs: TaxonRank) -> Bool { lhs.level < rhs.level }

    /// Maps a source rank name onto a main rank, or nil for an intermediate rank, by
    /// the spellings of ``RankOrder/mainRankSpellings`` (superkingdom, domain and
    /// acellular root are a domain; division a phylum). Case and surrounding
    /// whitespace do not matter.
    public init?(sourceRank: String) {
        guard let rank = RankOrder.mainRankOfSpelling[sourceRank.trimmingCharacters(in: .whitespaces).lowercased()] else {
            return nil
        }
        self = rank
    }
}

/// `taxa.status` values.
public enum TaxonStatus: String, Sendable, CaseIterable {
    case accepted, synonym, doubtful
}

/// `names.name_type` values: what a name is to search and to the detail page.
/// The source's own class is kept beside it (`names.name_class`, schema 3).
///
/// - `common`, `vernacular`: names people call the taxon (NCBI `genbank common
///   name`, `common name`, `blast name`);
/// - `synonym`: another scientific name of it (NCBI `synonym`, `equivalent name`,
///   `genbank synonym`, anamorph/teleomorph names);
/// - `acronym`: an abbreviation (NCBI `acronym`, `genbank acronym`: "HIV-1");
/// - `includes`: a narrower name it includes (NCBI `includes`, `in-part`);
/// - `authority`: the name with its author (NCBI `authority`);
/// - `misspelling`: a wrong spelling the source records (NCBI `misspelling`);
/// - `trade`: a trade name (not searched).
public enum NameType: String, Sendable, CaseIterable {
    case common, synonym, vernacular, trade, acronym, includes, authority, misspelling
}

/// A stable taxon id: the source's own id (e.g. the NCBI taxid).
public typealias TaxonID = Int64

import Foundation
