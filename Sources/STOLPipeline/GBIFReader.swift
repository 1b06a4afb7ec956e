import Foundation
import STOLModel

/// Reads the GBIF Backbone Taxonomy Darwin Core Archive (unzipped): `Taxon.tsv`
/// (required) and `VernacularName.tsv` (optional).
///
/// `Taxon.tsv` columns used: `taxonID`, `parentNameUsageID`,
/// `acceptedNameUsageID`, `scientificName`, `canonicalName`,
/// `scientificNameAuthorship`, `taxonRank`, `taxonomicStatus`; matched by
/// header name, case-insensitively, with or without a `dwc:` prefix.
/// - `accepted` usages are taxa; `doubtful` ones are taxa with status doubtful;
/// - `synonym`, `homotypic synonym`, `heterotypic synonym`, `proparte synonym`
///   (any status containing "synonym") and `misapplied` become synonym names of
///   their `acceptedNameUsageID`;
/// - the name is `canonicalName` when present (authorship kept separate),
///   otherwise `scientificName` with a trailing authorship removed;
/// - any other status is an error naming the file and line.
///
/// `VernacularName.tsv`: `taxonID`, `vernacularName`, `language` (ISO 639-1
/// mostly; empty → `und`), optional `isPreferredName`/`preferred`; the same name
/// of the same taxon in the same language (ignoring case) is kept once.
///
/// Not read: `Distribution.tsv`, `Description.tsv`, `Multimedia.tsv`,
/// `Reference.tsv`, `TypesAndSpecimen.tsv` (nothing in the schema takes them
/// yet), `meta.xml` (the backbone's files all have header rows).
///
/// The backbone's TSV is not quoted: a `"` is an ordinary character. CRLF line
/// ends are accepted.
public struct GBIFReader {
    public var progress: ReadProgressHandler?

    public init(progress: ReadProgressHandler? = nil) {
        self.progress = progress
    }

    public func read(directory: String) throws(SourceError) -> SourceTaxonomy {
        var source = SourceTaxonomy()
        guard let taxonPath = Self.file(directory, ["Taxon.tsv", "taxon.tsv", "Taxon.txt", "taxon.txt"]) else {
            throw .missingFile(directory + "/Taxon.tsv")
        }
        try readTaxa(taxonPath, into: &source)
        if let path = Self.file(directory, ["VernacularName.tsv", "vernacularname.tsv", "VernacularName.txt"]) {
            try readVernaculars(path, into: &source)
        }
        return source
    }

    static func file(_ directory: String, _ candidates: [String]) -> String? {
        candidates.map { directory + "/" + $0 }.first { FileManager.default.fileExists(atPath: $0) }
    }

    private func readTaxa(_ path: String, into source: inout SourceTaxonomy) throws(SourceError) {
        let file = try MappedFile(path: path)
        var reader = DelimitedRowReader(file: file, separator: .tab)
        guard reader.next() else { throw .unreadable(file: path, detail: "empty file") }
        let header = HeaderColumns(reader)
        let id = try header.required("taxonID"), parent = try header.required("parentNameUsageID")
        let accepted = try header.required("acceptedNameUsageID"), scientific = try header.required("scientificName")
        let rank = try header.required("taxonRank"), status = try header.required("taxonomicStatus")
        let canonical = header.optional("canonicalName"), author = header.optional("scientificNameAuthorship")
        source.usages.reserveCapacity(file.bytes.count / 400)
        var seen: Set<TaxonID> = []
        var ticker = ProgressTicker(file: path, handler: progress)
        while reader.next() {
            ticker.tick()
            let name: String
            if let canonical, !reader.isEmpty(canonical) {
                name = reader.string(canonical)
            } else if !reader.isEmpty(scientific) {
                name = Self.stripAuthorship(reader.string(scientific), reader.optionalString(author))
            } else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "scientificName", value: "")
            }
            let authorship = reader.optionalString(author)
            let kind: TaxonStatus
            if reader.isEmpty(status) || reader.equalsIgnoringCase(status, "accepted") {
                kind = .accepted
            } else if reader.equalsIgnoringCase(status, "doubtful") {
                kind = .doubtful
            } else {
                let value = reader.lowercased(status)
                guard value.contains("synonym") || value == "misapplied" else {
                    if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                    throw .badValue(file: path, line: reader.line, column: "taxonomicStatus", value: reader.string(status))
                }
                kind = .synonym
            }
            if kind == .synonym {
                guard let acceptedID = reader.int64(accepted) else {
                    if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                    throw .badValue(file: path, line: reader.line, column: "acceptedNameUsageID",
                                    value: reader.string(accepted))
                }
                source.synonyms.append(.init(acceptedID: acceptedID, name: name, authorship: authorship))
                continue
            }
            guard let taxonID = reader.int64(id) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "taxonID", value: reader.string(id))
            }
            var parentID: TaxonID?
            if !reader.isEmpty(parent) {
                guard let value = reader.int64(parent) else {
                    if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                    throw .badValue(file: path, line: reader.line, column: "parentNameUsageID",
                                    value: reader.string(parent))
                }
                parentID = value == taxonID ? nil : value
            }
            guard seen.insert(taxonID).inserted else {
                source.readStatistics.duplicateRows += 1
                continue
            }
            source.usages.append(.init(id: taxonID, parentID: parentID,
                                       rank: reader.isEmpty(rank) ? "unranked" : reader.string(rank),
                                       scientificName: name, authorship: authorship, status: kind))
        }
        ticker.finish()
        source.readStatistics.rows += ticker.rows
    }

    /// `Panthera leo (Linnaeus, 1758)` without its authorship `(Linnaeus, 1758)`.
    static func stripAuthorship(_ scientificName: String, _ authorship: String?) -> String {
        guard let authorship, !authorship.isEmpty, scientificName.hasSuffix(" " + authorship) else {
            return scientificName
        }
        return String(scientificName.dropLast(authorship.count + 1))
    }

    private struct VernacularKey: Hashable {
        var taxon: TaxonID
        var language: String
        var name: String
    }

    private func readVernaculars(_ path: String, into source: inout SourceTaxonomy) throws(SourceError) {
        let file = try MappedFile(path: path)
        var reader = DelimitedRowReader(file: file, separator: .tab)
        guard reader.next() else { return }
        let header = HeaderColumns(reader)
        let taxon = try header.required("taxonID"), name = try header.required("vernacularName")
        let language = header.optional("language")
        let preferred = header.optional("isPreferredName") ?? header.optional("preferred")
        var seen: Set<VernacularKey> = []
        var tags: [String: String] = [:]
        var ticker = ProgressTicker(file: path, handler: progress)
        while reader.next() {
            ticker.tick()
            guard let taxonID = reader.int64(taxon) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "taxonID", value: reader.string(taxon))
            }
            guard !reader.isEmpty(name) else { continue }
            let text = reader.string(name)
            let code = reader.optionalString(language) ?? ""
            let tag: String
            if let known = tags[code] {
                tag = known
            } else {
                tag = LanguageTags.bcp47(code) ?? "und"
                tags[code] = tag
            }
            guard seen.insert(VernacularKey(taxon: taxonID, language: tag, name: text.lowercased())).inserted else {
                source.readStatistics.duplicateRows += 1
                continue
            }
            let isPreferred = preferred.map { reader.equalsIgnoringCase($0, "true") || reader.equals($0, "1")
                || reader.equalsIgnoringCase($0, "yes") || reader.equalsIgnoringCase($0, "t") } ?? false
            source.vernacularNames.append(.init(taxonID: taxonID, name: text, language: tag, preferred: isPreferred))
        }
        ticker.finish()
        source.readStatistics.rows += ticker.rows
    }
}
