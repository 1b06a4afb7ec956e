import Foundation
import STOLModel

/// Reads an Open Tree Taxonomy (OTT) directory: `taxonomy.tsv` (required) and
/// `synonyms.tsv` (optional). Despite the extension both use the taxdump
/// separator `\t|\t`, with a header row and lines ending in `\t|` (or `\t|\t`).
///
/// `taxonomy.tsv`: `uid`, `parent_uid` (empty for the root), `name`, `rank`
/// (`no rank`, `no rank - terminal`, `varietas`, … kept as given; the normaliser
/// keeps the eight main ranks), `flags` (comma-separated, stored in
/// ``SourceTaxonomy/Usage/flags``: the placeholder filter drops `not_otu`,
/// `environmental` and `was_container` taxa; `incertae_sedis`, `extinct`,
/// `hidden`, `barren`, `unclassified` and the rest are kept). `sourceinfo` and
/// `uniqname` are not used. Every OTT taxon is accepted.
///
/// `synonyms.tsv`: `name`, `uid`, `type` (the column may be absent or empty).
/// Synonyms: an empty type, `synonym`, `equivalent name`, `genbank synonym`,
/// `anamorph`, `teleomorph`, `basionym`, `objective synonym`, `subjective synonym`.
/// Not synonyms: `misspelling`, `includes`, `in-part`, `authority`, `common name`
/// and other NCBI classes. OTT synonym names may carry their authorship
/// (`Senecio hypsobates Wedd.`); it is not split off.
public struct OpenTreeReader {
    public var progress: ReadProgressHandler?

    public init(progress: ReadProgressHandler? = nil) {
        self.progress = progress
    }

    static let synonymTypes: Set<String> = [
        "", "synonym", "equivalent name", "genbank synonym", "anamorph", "genbank anamorph", "teleomorph",
        "basionym", "objective synonym", "subjective synonym", "homotypic synonym", "heterotypic synonym",
    ]

    public func read(directory: String) throws(SourceError) -> SourceTaxonomy {
        var source = SourceTaxonomy()
        let taxonomyPath = directory + "/taxonomy.tsv"
        guard FileManager.default.fileExists(atPath: taxonomyPath) else { throw .missingFile(taxonomyPath) }
        try readTaxonomy(taxonomyPath, into: &source)
        let synonymsPath = directory + "/synonyms.tsv"
        if FileManager.default.fileExists(atPath: synonymsPath) {
            try readSynonyms(synonymsPath, into: &source)
        }
        return source
    }

    private func readTaxonomy(_ path: String, into source: inout SourceTaxonomy) throws(SourceError) {
        let file = try MappedFile(path: path)
        var reader = DelimitedRowReader(file: file, separator: .dump)
        guard reader.next() else { throw .unreadable(file: path, detail: "empty file") }
        let header = HeaderColumns(reader)
        let uid = try header.required("uid"), parent = try header.required("parent_uid")
        let name = try header.required("name"), rank = try header.required("rank")
        let flags = header.optional("flags")
        let minimumFields = max(uid, parent, name, rank) + 1
        var seen: Set<TaxonID> = []
        source.usages.reserveCapacity(file.bytes.count / 80)
        var ticker = ProgressTicker(file: path, handler: progress)
        while reader.next() {
            ticker.tick()
            guard reader.fieldCount >= minimumFields else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .malformedLine(file: path, line: reader.line,
                                     detail: "expected \(minimumFields) fields separated by '\\t|\\t', found \(reader.fieldCount)")
            }
            guard let id = reader.int64(uid) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "uid", value: reader.string(uid))
            }
            var parentID: TaxonID?
            if !reader.isEmpty(parent) {
                guard let value = reader.int64(parent) else {
                    if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                    throw .badValue(file: path, line: reader.line, column: "parent_uid", value: reader.string(parent))
                }
                parentID = value == id ? nil : value
            }
            guard !reader.isEmpty(name) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "name", value: "")
            }
            guard seen.insert(id).inserted else {
                source.readStatistics.duplicateRows += 1
                continue
            }
            let flagList = reader.optionalString(flags).map {
                $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            } ?? []
            source.usages.append(.init(id: id, parentID: parentID,
                                       rank: reader.isEmpty(rank) ? "no rank" : reader.string(rank),
                                       scientificName: reader.string(name), authorship: nil, status: .accepted,
                                       flags: flagList))
        }
        ticker.finish()
        source.readStatistics.rows += ticker.rows
    }

    private struct SynonymKey: Hashable {
        var taxon: TaxonID
        var name: String
    }

    private func readSynonyms(_ path: String, into source: inout SourceTaxonomy) throws(SourceError) {
        let file = try MappedFile(path: path)
        var reader = DelimitedRowReader(file: file, separator: .dump)
        guard reader.next() else { return }
        let header = HeaderColumns(reader)
        let name = try header.required("name"), uid = try header.required("uid")
        let type = header.optional("type")
        var seen: Set<SynonymKey> = []
        var ticker = ProgressTicker(file: path, handler: progress)
        while reader.next() {
            ticker.tick()
            guard let id = reader.int64(uid) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                if reader.fieldCount <= uid {
                    throw .malformedLine(file: path, line: reader.line,
                                         detail: "expected name and uid separated by '\\t|\\t'")
                }
                throw .badValue(file: path, line: reader.line, column: "uid", value: reader.string(uid))
            }
            guard !reader.isEmpty(name) else { continue }
            let kind = reader.optionalString(type)?.lowercased() ?? ""
            guard Self.synonymTypes.contains(kind) else { continue }
            let text = reader.string(name)
            guard seen.insert(SynonymKey(taxon: id, name: text)).inserted else {
                source.readStatistics.duplicateRows += 1
                continue
            }
            source.synonyms.append(.init(acceptedID: id, name: text, authorship: nil))
        }
        ticker.finish()
        source.readStatistics.rows += ticker.rows
    }
}
