import Foundation
import STOLModel

/// Reads a Catalogue of Life Data Package (ColDP) directory: `NameUsage.tsv`
/// (required), `VernacularName.tsv`, `TaxonProperty.tsv`, `Reference.tsv`.
///
/// Accepted usages become taxa; `synonym` usages become synonym names of the
/// accepted usage named by their `parentID` (the ColDP convention). Ids must be
/// integers: STOL's ids are the sources' own stable ids.
public struct ColDPReader {
    public init() {}

    public func read(directory: String) throws(SourceError) -> SourceTaxonomy {
        var source = SourceTaxonomy()
        try readUsages(TSVTable(path: Self.file(directory, "NameUsage")), into: &source)
        if let path = Self.optionalFile(directory, "VernacularName") {
            try readVernaculars(TSVTable(path: path), into: &source)
        }
        if let path = Self.optionalFile(directory, "TaxonProperty") {
            try readProperties(TSVTable(path: path), into: &source)
        }
        if let path = Self.optionalFile(directory, "Reference") {
            try readReferences(TSVTable(path: path), into: &source)
        }
        return source
    }

    /// ColDP allows `NameUsage.tsv` or `name-usage.tsv` spellings.
    static func optionalFile(_ directory: String, _ name: String) -> String? {
        let kebab = name.enumerated().map { index, character in
            character.isUppercase && index > 0 ? "-" + character.lowercased() : character.lowercased()
        }.joined()
        for candidate in [name, kebab] {
            let path = directory + "/" + candidate + ".tsv"
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        return nil
    }

    static func file(_ directory: String, _ name: String) throws(SourceError) -> String {
        guard let path = optionalFile(directory, name) else { throw .missingFile(directory + "/" + name + ".tsv") }
        return path
    }

    private func readUsages(_ table: TSVTable, into source: inout SourceTaxonomy) throws(SourceError) {
        let id = try table.column("ID"), parent = try table.column("parentID"), status = try table.column("status")
        let rank = try table.column("rank"), name = try table.column("scientificName")
        let author = table.optionalColumn("authorship")
        for (line, fields) in table.rows {
            let statusValue = TSVTable.value(fields, status)?.lowercased() ?? "accepted"
            guard let scientificName = TSVTable.value(fields, name) else {
                throw .badValue(file: table.file, line: line, column: "scientificName", value: "")
            }
            let parentValue = TSVTable.value(fields, parent)
            if statusValue.contains("synonym") || statusValue == "misapplied" {
                guard let parentValue, let accepted = TaxonID(parentValue) else {
                    throw .badValue(file: table.file, line: line, column: "parentID", value: parentValue ?? "")
                }
                source.synonyms.append(.init(acceptedID: accepted, name: scientificName,
                                             authorship: TSVTable.value(fields, author)))
                continue
            }
            let idValue = TSVTable.value(fields, id) ?? ""
            guard let taxonID = TaxonID(idValue), taxonID > 0 else {
                throw .badValue(file: table.file, line: line, column: "ID", value: idValue)
            }
            var parentID: TaxonID?
            if let parentValue {
                guard let value = TaxonID(parentValue) else {
                    throw .badValue(file: table.file, line: line, column: "parentID", value: parentValue)
                }
                parentID = value
            }
            source.usages.append(.init(
                id: taxonID, parentID: parentID, rank: TSVTable.value(fields, rank) ?? "no rank",
                scientificName: scientificName, authorship: TSVTable.value(fields, author),
                status: statusValue == "provisionally accepted" || statusValue == "doubtful" ? .doubtful : .accepted))
        }
    }

    private func readVernaculars(_ table: TSVTable, into source: inout SourceTaxonomy) throws(SourceError) {
        let taxon = try table.column("taxonID"), name = try table.column("name")
        let language = table.optionalColumn("language"), preferred = table.optionalColumn("preferred")
        for (line, fields) in table.rows {
            let taxonValue = TSVTable.value(fields, taxon) ?? ""
            guard let taxonID = TaxonID(taxonValue) else {
                throw .badValue(file: table.file, line: line, column: "taxonID", value: taxonValue)
            }
            guard let text = TSVTable.value(fields, name) else { continue }
            let code = TSVTable.value(fields, language) ?? "und"
            let tag = LanguageTags.bcp47(code) ?? "und"
            let isPreferred = ["true", "1", "yes", "t"].contains(TSVTable.value(fields, preferred)?.lowercased() ?? "")
            source.vernacularNames.append(.init(taxonID: taxonID, name: text, language: tag, preferred: isPreferred))
        }
    }

    private func readProperties(_ table: TSVTable, into source: inout SourceTaxonomy) throws(SourceError) {
        let taxon = try table.column("taxonID"), property = try table.column("property"), value = try table.column("value")
        let unit = table.optionalColumn("unit"), reference = table.optionalColumn("reference") ?? table.optionalColumn("referenceID")
        for (line, fields) in table.rows {
            let taxonValue = TSVTable.value(fields, taxon) ?? ""
            guard let taxonID = TaxonID(taxonValue) else {
                throw .badValue(file: table.file, line: line, column: "taxonID", value: taxonValue)
            }
            guard let key = TSVTable.value(fields, property), let text = TSVTable.value(fields, value) else { continue }
            source.properties.append(.init(taxonID: taxonID, key: key.lowercased(), value: text,
                                           unit: TSVTable.value(fields, unit),
                                           referenceID: TSVTable.value(fields, reference)))
        }
    }

    private func readReferences(_ table: TSVTable, into source: inout SourceTaxonomy) throws(SourceError) {
        let id = try table.column("ID"), citation = try table.column("citation")
        let link = table.optionalColumn("link"), type = table.optionalColumn("type")
        for (_, fields) in table.rows {
            guard let refID = TSVTable.value(fields, id), let text = TSVTable.value(fields, citation) else { continue }
            source.references.append(.init(id: refID, citation: text, link: TSVTable.value(fields, link),
                                           type: TSVTable.value(fields, type)?.lowercased() ?? "other"))
        }
    }
}
