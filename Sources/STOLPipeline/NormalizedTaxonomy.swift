import Foundation
import STOLModel

/// A taxonomy in STOL's shape: eight ranks, each taxon under its nearest kept
/// ancestor, names with BCP-47 tags and one preferred name per language.
public struct NormalizedTaxonomy: Sendable {
    public struct Taxon: Sendable, Equatable {
        public var id: TaxonID
        public var parentID: TaxonID?
        public var rank: TaxonRank
        public var scientificName: String
        public var author: String?
        public var year: Int?
        public var status: TaxonStatus
        public var conservation: String?
    }

    public struct Name: Sendable, Equatable {
        public var taxonID: TaxonID
        public var name: String
        public var language: String
        public var type: NameType
        public var preferred: Bool
    }

    public struct Reference: Sendable, Equatable {
        public var taxonID: TaxonID
        public var citation: String
        public var url: String?
        public var type: String
    }

    public struct Trait: Sendable, Equatable {
        public var taxonID: TaxonID
        public var key: String
        public var value: String
        public var unit: String?
        /// Index into `references`.
        public var reference: Int?
    }

    /// A node of the source's whole tree, with the source's own rank and parent.
    public struct TreeNode: Sendable, Equatable {
        public var id: TaxonID
        public var parentID: TaxonID?
        public var rank: String
        public var scientificName: String
    }

    public var taxa: [Taxon] = []
    /// The source's whole tree (schema 2 `tree_nodes`); empty unless the build keeps it.
    public var fullTree: [TreeNode] = []
    /// Ids the source merged into another (old → new) and ids it deleted.
    public var merged: [TaxonID: TaxonID] = [:]
    public var deleted: Set<TaxonID> = []
    public var names: [Name] = []
    public var references: [Reference] = []
    public var traits: [Trait] = []
    /// Source usages dropped because their rank is not one of the eight.
    public var droppedIntermediate = 0
    /// Names (vernacular or synonym) whose taxon was not kept.
    public var droppedNames = 0

    public init() {}
}

/// Turns a ``SourceTaxonomy`` into a ``NormalizedTaxonomy``.
public struct TaxonomyNormalizer {
    public static let iucnCategories: Set<String> = ["LC", "NT", "VU", "EN", "CR", "EW", "EX", "NE", "DD"]

    public init() {}

    /// - Parameter keepingFullTree: also keep every accepted usage as it is in the
    ///   source (``NormalizedTaxonomy/fullTree``), parents and ranks unchanged.
    public func normalize(_ source: SourceTaxonomy, keepingFullTree: Bool = false) -> NormalizedTaxonomy {
        var result = NormalizedTaxonomy()
        result.merged = source.merged
        result.deleted = source.deleted
        if keepingFullTree {
            let accepted = Set(source.usages.lazy.filter { $0.status != .synonym }.map(\.id))
            result.fullTree.reserveCapacity(accepted.count)
            for usage in source.usages where usage.status != .synonym {
                // A parent the source does not have (a cut subset's edge) makes a root.
                let parent = usage.parentID.flatMap { accepted.contains($0) && $0 != usage.id ? $0 : nil }
                result.fullTree.append(.init(id: usage.id, parentID: parent, rank: usage.rank,
                                             scientificName: usage.scientificName))
            }
        }
        let usageByID = Dictionary(source.usages.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var keptRank: [TaxonID: TaxonRank] = [:]
        for usage in source.usages {
            guard let rank = TaxonRank(sourceRank: usage.rank) else { continue }
            keptRank[usage.id] = rank
        }
        let conservation = Dictionary(
            source.properties.filter { $0.key == "iucn" && Self.iucnCategories.contains($0.value.uppercased()) }
                .map { ($0.taxonID, $0.value.uppercased()) },
            uniquingKeysWith: { first, _ in first })

        for usage in source.usages {
            guard let rank = keptRank[usage.id] else {
                result.droppedIntermediate += 1
                continue
            }
            // Nearest kept ancestor whose rank is above this one.
            var parent = usage.parentID
            var hops = 0
            while let candidate = parent, hops < 1000 {
                if let candidateRank = keptRank[candidate], candidateRank < rank { break }
                parent = usageByID[candidate]?.parentID
                hops += 1
            }
            if let candidate = parent, keptRank[candidate] == nil { parent = nil }
            result.taxa.append(.init(
                id: usage.id, parentID: parent, rank: rank, scientificName: usage.scientificName,
                author: usage.authorship, year: usage.authorship.flatMap(Self.year(from:)),
                status: usage.status, conservation: conservation[usage.id]))
        }

        var preferredSeen: Set<String> = []
        for name in source.vernacularNames {
            guard keptRank[name.taxonID] != nil else { result.droppedNames += 1; continue }
            let key = "\(name.taxonID)|\(name.language)"
            let preferred = name.preferred && !preferredSeen.contains(key)
            if preferred { preferredSeen.insert(key) }
            result.names.append(.init(taxonID: name.taxonID, name: name.name, language: name.language,
                                      type: .common, preferred: preferred))
        }
        // A language with names but none marked preferred: the first one is.
        for index in result.names.indices where result.names[index].type == .common {
            let key = "\(result.names[index].taxonID)|\(result.names[index].language)"
            if !preferredSeen.contains(key) {
                preferredSeen.insert(key)
                result.names[index].preferred = true
            }
        }
        for synonym in source.synonyms {
            guard keptRank[synonym.acceptedID] != nil else { result.droppedNames += 1; continue }
            result.names.append(.init(taxonID: synonym.acceptedID, name: synonym.name, language: "und",
                                      type: .synonym, preferred: false))
        }

        let referenceByID = Dictionary(source.references.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var referenceRow: [String: Int] = [:]
        for property in source.properties where keptRank[property.taxonID] != nil {
            var rowIndex: Int?
            if let refID = property.referenceID, let reference = referenceByID[refID] {
                let key = "\(property.taxonID)|\(refID)"
                if let existing = referenceRow[key] {
                    rowIndex = existing
                } else {
                    result.references.append(.init(taxonID: property.taxonID, citation: reference.citation,
                                                   url: reference.link, type: Self.referenceType(reference.type)))
                    rowIndex = result.references.count - 1
                    referenceRow[key] = rowIndex
                }
            }
            guard property.key != "iucn" else { continue }
            result.traits.append(.init(taxonID: property.taxonID, key: property.key, value: property.value,
                                       unit: property.unit, reference: rowIndex))
        }
        return result
    }

    /// The year of description from an authorship string, e.g. `(Linnaeus, 1758)`.
    /// The first year wins: in `(Migula, 1895) Castellani & Chalmers, 1919` the
    /// parenthesised original description is 1895; 1919 is the later combination.
    static func year(from authorship: String) -> Int? {
        var digits = ""
        for character in authorship + " " {
            if character.isASCII && character.isNumber {
                digits.append(character)
            } else {
                if digits.count == 4, let value = Int(digits), (1700...2100).contains(value) { return value }
                digits = ""
            }
        }
        return nil
    }

    static func referenceType(_ type: String) -> String {
        ["taxonomy", "ecology", "morphology", "conservation"].contains(type) ? type : "other"
    }
}
