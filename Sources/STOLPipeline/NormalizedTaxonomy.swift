import Foundation
import STOLModel

/// A taxonomy in STOL's shape: every node of the source (``nodes``, schema 3
/// `taxa`) with its own rank and parent, the eight-rank view of it (``taxa``:
/// each taxon of a main rank under its nearest kept ancestor), names with BCP-47
/// tags and one preferred name per language, attached to any node.
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
        /// The source's class of the name, verbatim (NCBI `genbank common name`,
        /// `equivalent name`, …); nil when the source has none.
        public var nameClass: String? = nil
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

    /// A node of the source's whole tree, with the source's own rank and parent,
    /// and its place in the eight-rank view (schema 3 `taxa`).
    public struct Node: Sendable, Equatable {
        public var id: TaxonID
        /// The source's parent (nil for a root).
        public var parentID: TaxonID?
        /// The rank as the source spells it (`no rank`, `strain`, `superkingdom`).
        public var rank: String
        /// One of the eight ranks, or nil for a node the eight-rank view leaves out.
        public var mainRank: TaxonRank?
        /// The eight-rank view's parent: for a node of a main rank the nearest
        /// ancestor of a main rank above it; for any other node its nearest
        /// ancestor of a main rank (its place in a main-rank lineage).
        public var mainParentID: TaxonID?
        public var scientificName: String
        public var author: String?
        public var year: Int?
        public var status: TaxonStatus
        public var conservation: String?
    }

    /// The eight-rank view: the taxa of a main rank, each under its nearest kept
    /// ancestor (the view of the in-memory tree, its Euler tour, precomputed relatives).
    public var taxa: [Taxon] = []
    /// Every node (schema 3 `taxa`): the accepted usages of the source, and the
    /// view's taxa the source keeps only as usages of another status.
    public var nodes: [Node] = []
    /// Ids the source merged into another (old → new) and ids it deleted.
    public var merged: [TaxonID: TaxonID] = [:]
    public var deleted: Set<TaxonID> = []
    public var names: [Name] = []
    public var references: [Reference] = []
    public var traits: [Trait] = []
    /// Source usages whose rank is not one of the eight (kept as nodes, not in the view).
    public var droppedIntermediate = 0
    /// Names (vernacular, synonym or other) whose taxon was not kept.
    public var droppedNames = 0
    /// What prominence counts under each node on the source before a build cut it
    /// (``SourceTaxonomy/subtreeCounts()``); nil when nothing was cut, and the
    /// nodes themselves are counted.
    public var sourceCounts: [TaxonID: SubtreeCount]? = nil

    public init() {}
}

/// Turns a ``SourceTaxonomy`` into a ``NormalizedTaxonomy``.
public struct TaxonomyNormalizer {
    public static let iucnCategories: Set<String> = ["LC", "NT", "VU", "EN", "CR", "EW", "EX", "NE", "DD"]

    /// `names.name_class` of a vernacular name and of a synonym whose source has
    /// no classes of its own (ColDP, GBIF, Open Tree, the curated overlay): the
    /// kind of table or status they come from, so that every name of a build has
    /// a class and the report has no `(none)`.
    public static let vernacularClass = "vernacular name"
    public static let synonymClass = "synonym"

    public init() {}

    public func normalize(_ source: SourceTaxonomy) -> NormalizedTaxonomy {
        var result = NormalizedTaxonomy()
        result.merged = source.merged
        result.deleted = source.deleted
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

        var mainParent: [TaxonID: TaxonID?] = [:]
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
            mainParent[usage.id] = parent
            result.taxa.append(.init(
                id: usage.id, parentID: parent, rank: rank, scientificName: usage.scientificName,
                author: usage.authorship, year: usage.authorship.flatMap(Self.year(from:)),
                status: usage.status, conservation: conservation[usage.id]))
        }

        // Every accepted usage is a node, under its own parent; a parent the source
        // does not have (a cut subset's edge) makes a root.
        let accepted = Set(source.usages.lazy.filter { $0.status != .synonym }.map(\.id))
        /// The nearest ancestor of a main rank, memoised (NCBI: 2.6 M nodes, depth up to 60).
        var nearestMain: [TaxonID: TaxonID] = [:]
        func nearestMainAncestor(of id: TaxonID) -> TaxonID? {
            var path: [TaxonID] = []
            var current = usageByID[id]?.parentID
            var found: TaxonID?
            while let candidate = current, candidate != path.last, path.count < 1000 {
                if keptRank[candidate] != nil { found = candidate; break }
                if let known = nearestMain[candidate] { found = known; break }
                path.append(candidate)
                current = usageByID[candidate]?.parentID
            }
            if let found { for step in path { nearestMain[step] = found } }
            return found
        }
        result.nodes.reserveCapacity(accepted.count)
        var nodeIDs = Set<TaxonID>()
        for usage in source.usages where accepted.contains(usage.id) && nodeIDs.insert(usage.id).inserted {
            let parent = usage.parentID.flatMap { accepted.contains($0) && $0 != usage.id ? $0 : nil }
            let main = keptRank[usage.id]
            let mainParentID = main != nil ? (mainParent[usage.id] ?? nil) : nearestMainAncestor(of: usage.id)
            result.nodes.append(.init(
                id: usage.id, parentID: parent, rank: usage.rank, mainRank: main,
                mainParentID: mainParentID,
                scientificName: usage.scientificName, author: usage.authorship,
                year: usage.authorship.flatMap(Self.year(from:)), status: usage.status, conservation: conservation[usage.id]))
        }
        // A taxon of the view that the source keeps only as a synonym usage: a node
        // under its view parent, so that every taxon of the view is a node.
        for taxon in result.taxa where nodeIDs.insert(taxon.id).inserted {
            result.nodes.append(.init(
                id: taxon.id, parentID: taxon.parentID, rank: taxon.rank.rawValue, mainRank: taxon.rank,
                mainParentID: taxon.parentID, scientificName: taxon.scientificName, author: taxon.author,
                year: taxon.year, status: taxon.status, conservation: taxon.conservation))
        }

        var preferredSeen: Set<String> = []
        for name in source.vernacularNames {
            guard nodeIDs.contains(name.taxonID) else { result.droppedNames += 1; continue }
            let key = "\(name.taxonID)|\(name.language)"
            let preferred = name.preferred && !preferredSeen.contains(key)
            if preferred { preferredSeen.insert(key) }
            result.names.append(.init(taxonID: name.taxonID, name: name.name, language: name.language,
                                      type: .common, preferred: preferred,
                                      nameClass: name.nameClass ?? Self.vernacularClass))
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
            guard nodeIDs.contains(synonym.acceptedID) else { result.droppedNames += 1; continue }
            result.names.append(.init(taxonID: synonym.acceptedID, name: synonym.name, language: "und",
                                      type: .synonym, preferred: false, nameClass: synonym.nameClass ?? Self.synonymClass))
        }
        // Acronyms, included groups, authorities, misspellings: in no language, never a preferred name.
        for name in source.otherNames {
            guard nodeIDs.contains(name.taxonID) else { result.droppedNames += 1; continue }
            result.names.append(.init(taxonID: name.taxonID, name: name.name, language: "und",
                                      type: name.type, preferred: false, nameClass: name.nameClass))
        }

        let referenceByID = Dictionary(source.references.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var referenceRow: [String: Int] = [:]
        for property in source.properties where nodeIDs.contains(property.taxonID) {
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
