import STOLModel

extension SourceTaxonomy {
    /// What an overlay added, for the build report.
    public struct OverlayReport: Equatable, Sendable {
        public var vernacularNames = 0
        public var synonyms = 0
        /// Acronyms, misspellings and the other names of ``SourceTaxonomy/OtherName``.
        public var otherNames = 0
        public var properties = 0
        public var references = 0
        /// Overlay facts about taxa the base does not have (dropped, counted).
        public var unmatched = 0
    }

    /// This taxonomy with the facts of `overlay` added for the taxa both share,
    /// matched by id (the curated overlay uses the sources' own ids).
    ///
    /// The base keeps its tree: usages, parents and ranks come from the base only.
    /// The overlay adds vernacular names (a name already present in the same
    /// language is not duplicated; where the overlay marks a preferred name for a
    /// language, it replaces the base's preferred one), synonyms and other names
    /// (a name the base has is not duplicated: a synonym by its text, another
    /// name by its text and class), properties (IUCN status, traits) and the
    /// references they cite.
    public func overlaid(with overlay: SourceTaxonomy) -> (SourceTaxonomy, OverlayReport) {
        var result = self
        var report = OverlayReport()
        let known = Set(usages.map(\.id))

        var existingNames = Set(vernacularNames.map { "\($0.taxonID)|\($0.language)|\($0.name.lowercased())" })
        let overlayPreferred = Set(overlay.vernacularNames.filter { $0.preferred && known.contains($0.taxonID) }
            .map { "\($0.taxonID)|\($0.language)" })
        for index in result.vernacularNames.indices
        where overlayPreferred.contains("\(result.vernacularNames[index].taxonID)|\(result.vernacularNames[index].language)") {
            result.vernacularNames[index].preferred = false
        }
        for name in overlay.vernacularNames {
            guard known.contains(name.taxonID) else { report.unmatched += 1; continue }
            let key = "\(name.taxonID)|\(name.language)|\(name.name.lowercased())"
            if existingNames.contains(key) {
                // Same name: only its preference can change.
                if name.preferred, let index = result.vernacularNames.firstIndex(where: {
                    $0.taxonID == name.taxonID && $0.language == name.language && $0.name.lowercased() == name.name.lowercased()
                }) {
                    result.vernacularNames[index].preferred = true
                }
                continue
            }
            existingNames.insert(key)
            result.vernacularNames.append(name)
            report.vernacularNames += 1
        }

        var existingSynonyms = Set(synonyms.map { "\($0.acceptedID)|\($0.name)" })
        for synonym in overlay.synonyms {
            guard known.contains(synonym.acceptedID) else { report.unmatched += 1; continue }
            guard existingSynonyms.insert("\(synonym.acceptedID)|\(synonym.name)").inserted else { continue }
            result.synonyms.append(synonym)
            report.synonyms += 1
        }

        var existingOtherNames = Set(otherNames.map { "\($0.taxonID)|\($0.nameClass)|\($0.name)" })
        for name in overlay.otherNames {
            guard known.contains(name.taxonID) else { report.unmatched += 1; continue }
            guard existingOtherNames.insert("\(name.taxonID)|\(name.nameClass)|\(name.name)").inserted else { continue }
            result.otherNames.append(name)
            report.otherNames += 1
        }

        var citedReferences: Set<String> = []
        for property in overlay.properties {
            guard known.contains(property.taxonID) else { report.unmatched += 1; continue }
            result.properties.append(property)
            report.properties += 1
            if let reference = property.referenceID { citedReferences.insert(reference) }
        }
        let existingReferences = Set(references.map(\.id))
        for reference in overlay.references where citedReferences.contains(reference.id) && !existingReferences.contains(reference.id) {
            result.references.append(reference)
            report.references += 1
        }
        return (result, report)
    }
}
