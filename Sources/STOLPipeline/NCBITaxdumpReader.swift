import Foundation
import STOLModel

/// Reads an NCBI Taxonomy dump directory: `nodes.dmp` and `names.dmp`
/// (required), `merged.dmp` and `delnodes.dmp` (optional: the PyPI snapshot has
/// neither). `division.dmp`, `gencode.dmp` and the other files of
/// `taxdump.tar.gz` are not read.
///
/// Format: fields separated by `\t|\t`, lines ending in `\t|`; LF or CRLF; the
/// trailing `|` may be missing. The root (tax_id 1) is its own parent and
/// becomes a taxon without parent; ranks are kept as NCBI spells them (the
/// normaliser maps `superkingdom` — or the 2025 `domain` — to domain).
///
/// Name classes of `names.dmp` (each kept name carries its class verbatim,
/// `names.name_class`, so the build report says which classes a build had):
/// - `scientific name` → the taxon's name (the `name_txt` column; the
///   `unique name` column with its `<…>` disambiguation is not used);
/// - `authority` → the authorship of the scientific name, with the leading name
///   removed (`Panthera leo (Linnaeus, 1758)` → `(Linnaeus, 1758)`). An authority
///   that starts with one of the taxon's synonyms instead is that synonym's
///   authorship; one that matches neither (usually a misspelt name) gives no
///   authorship; when several match, the first in the file wins. Every
///   authority is also kept whole as a name of type `authority`: people paste
///   the name with its author;
/// - synonyms: `synonym`, `genbank synonym`, `equivalent name` (a variant
///   spelling or formatting of the same name), `anamorph`, `genbank anamorph`,
///   `teleomorph`. Such a name that starts with a lower-case letter is an
///   English label filed under the wrong class (`equivalent name` "primate") and
///   is skipped. A name in several of these classes is kept once, with the class
///   of its first row;
/// - English vernacular names (`en`): `genbank common name` (preferred),
///   `common name`, `blast name` (NCBI's English labels of large groups:
///   "vertebrates", "bats"), duplicates ignoring case dropped. The preferred one
///   is the first GenBank common name, else the first common name, else the
///   first blast name. A name in several of these classes is kept once, with
///   the best of its classes;
/// - other names, not synonyms (they name other or wrong things) but what people
///   type for the taxon, so searchable: `acronym`, `genbank acronym` → type
///   `acronym` ("HIV-1"); `includes`, `in-part` (names of narrower or
///   overlapping groups) → `includes`; `misspelling`, `misnomer` → `misspelling`;
/// - `type material` is dropped: specimen and culture codes ("ZMB Mam 1234",
///   "ATCC 25922"), not names people type for a taxon. Any other class is
///   ignored.
///
/// Damaged dumps: NUL bytes are skipped and a row cut by them is dropped
/// (counted in ``SourceTaxonomy/readStatistics``); repeated rows (a node id seen
/// before, the same name of the same class for the same taxon) are dropped;
/// names of tax_ids that are not in `nodes.dmp` are counted and dropped. Any
/// other malformed line is a ``SourceError`` naming the file and line.
public struct NCBITaxdumpReader {
    public var progress: ReadProgressHandler?

    public init(progress: ReadProgressHandler? = nil) {
        self.progress = progress
    }

    public func read(directory: String) throws(SourceError) -> SourceTaxonomy {
        var source = SourceTaxonomy()
        let nodesPath = directory + "/nodes.dmp", namesPath = directory + "/names.dmp"
        guard FileManager.default.fileExists(atPath: nodesPath) else { throw .missingFile(nodesPath) }
        guard FileManager.default.fileExists(atPath: namesPath) else { throw .missingFile(namesPath) }
        var lines: [Int32] = []
        let indexByID = try readNodes(nodesPath, into: &source, lines: &lines)
        try readNames(namesPath, indexByID: indexByID, lines: lines, nodesPath: nodesPath, into: &source)
        let mergedPath = directory + "/merged.dmp"
        if FileManager.default.fileExists(atPath: mergedPath) {
            try readMerged(mergedPath, into: &source)
        }
        let deletedPath = directory + "/delnodes.dmp"
        if FileManager.default.fileExists(atPath: deletedPath) {
            try readDeleted(deletedPath, into: &source)
        }
        return source
    }

    // MARK: nodes.dmp

    private func readNodes(_ path: String, into source: inout SourceTaxonomy,
                           lines: inout [Int32]) throws(SourceError) -> [TaxonID: Int32] {
        let file = try MappedFile(path: path)
        var reader = DelimitedRowReader(file: file, separator: .dump)
        // About 60 bytes per row in the real dump.
        let estimate = file.bytes.count / 50 + 16
        source.usages.reserveCapacity(estimate)
        lines.reserveCapacity(estimate)
        var indexByID: [TaxonID: Int32] = [:]
        indexByID.reserveCapacity(estimate)
        var ticker = ProgressTicker(file: path, handler: progress)
        while reader.next() {
            ticker.tick()
            guard reader.fieldCount >= 3, let id = reader.int64(0), let parent = reader.int64(1) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                if reader.fieldCount < 3 {
                    throw .malformedLine(file: path, line: reader.line,
                                         detail: "expected tax_id, parent tax_id and rank separated by '\\t|\\t'")
                }
                if reader.int64(0) == nil {
                    throw .badValue(file: path, line: reader.line, column: "tax_id", value: reader.string(0))
                }
                throw .badValue(file: path, line: reader.line, column: "parent tax_id", value: reader.string(1))
            }
            let position = Int32(source.usages.count)
            if let first = indexByID.updateValue(position, forKey: id) {
                // Keep the first row of a repeated tax_id.
                indexByID[id] = first
                source.readStatistics.duplicateRows += 1
                continue
            }
            source.usages.append(.init(id: id, parentID: parent == id ? nil : parent,
                                       rank: reader.isEmpty(2) ? "no rank" : reader.string(2),
                                       scientificName: "", authorship: nil, status: .accepted))
            lines.append(Int32(truncatingIfNeeded: reader.line))
        }
        ticker.finish()
        source.readStatistics.rows += ticker.rows
        return indexByID
    }

    // MARK: names.dmp

    private enum NameClass {
        case scientific
        case authority
        /// The class, verbatim.
        case synonym(String)
        case vernacular(priority: Int8)
        /// The type and the class, verbatim.
        case other(NameType, String)
        case ignored
    }

    /// The classes of vernacular names, by priority (the preferred class first).
    private static let vernacularClasses = ["genbank common name", "common name", "blast name"]

    /// Every class kept, and what it becomes (the class strings are made once
    /// here, not per row). Not here, so dropped: `type material` and any class
    /// NCBI may add.
    private static let classes: [(StaticString, NameClass)] = [
        ("scientific name", .scientific),
        ("authority", .authority),
        ("genbank common name", .vernacular(priority: 0)),
        ("common name", .vernacular(priority: 1)),
        ("blast name", .vernacular(priority: 2)),
        ("synonym", .synonym("synonym")),
        ("genbank synonym", .synonym("genbank synonym")),
        ("equivalent name", .synonym("equivalent name")),
        ("anamorph", .synonym("anamorph")),
        ("genbank anamorph", .synonym("genbank anamorph")),
        ("teleomorph", .synonym("teleomorph")),
        ("includes", .other(.includes, "includes")),
        ("in-part", .other(.includes, "in-part")),
        ("acronym", .other(.acronym, "acronym")),
        ("genbank acronym", .other(.acronym, "genbank acronym")),
        ("misspelling", .other(.misspelling, "misspelling")),
        ("misnomer", .other(.misspelling, "misnomer")),
    ]

    /// What a name of NCBI class `nameClass` (`acronym`, `equivalent name`, …) becomes
    /// when another source names it so (the curated overlay's `OtherName.tsv`): a synonym
    /// of that class, another name of a type, or nil for the classes that are no such
    /// name (scientific, authority, vernacular, or unknown). One table for both readers.
    static func otherNameKind(ofClass nameClass: String) -> (synonym: Bool, type: NameType?)? {
        for (literal, kind) in classes where literal.description == nameClass {
            switch kind {
            case .synonym: return (true, nil)
            case .other(let type, _): return (false, type)
            default: return nil
            }
        }
        return nil
    }

    private static func nameClass(_ reader: DelimitedRowReader) -> NameClass {
        for (literal, nameClass) in classes where reader.equals(3, literal) { return nameClass }
        return .ignored
    }

    private struct NameKey: Hashable {
        var taxon: Int32
        var name: String
    }

    /// A name of a class: the same name in two classes is two names.
    private struct ClassedNameKey: Hashable {
        var taxon: Int32
        var name: String
        var nameClass: String
    }

    private func readNames(_ path: String, indexByID: [TaxonID: Int32], lines: [Int32], nodesPath: String,
                           into source: inout SourceTaxonomy) throws(SourceError) {
        let file = try MappedFile(path: path)
        var reader = DelimitedRowReader(file: file, separator: .dump)
        var authorities: [(taxon: Int32, text: String)] = []
        var synonyms: [(taxon: Int32, name: String, nameClass: String)] = []
        var seenSynonyms: Set<NameKey> = []
        var vernaculars: [(taxon: Int32, name: String, priority: Int8)] = []
        var seenVernaculars: [NameKey: Int] = [:]
        var others: [(taxon: Int32, name: String, type: NameType, nameClass: String)] = []
        var seenOthers: Set<ClassedNameKey> = []
        var ticker = ProgressTicker(file: path, handler: progress)
        while reader.next() {
            ticker.tick()
            guard reader.fieldCount >= 4, let id = reader.int64(0) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                if reader.fieldCount < 4 {
                    throw .malformedLine(file: path, line: reader.line,
                                         detail: "expected tax_id, name_txt, unique name and name class separated by '\\t|\\t'")
                }
                throw .badValue(file: path, line: reader.line, column: "tax_id", value: reader.string(0))
            }
            guard let taxon = indexByID[id] else {
                source.readStatistics.orphanNames += 1
                continue
            }
            if reader.isEmpty(1) {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "name_txt", value: "")
            }
            switch Self.nameClass(reader) {
            case .scientific:
                if source.usages[Int(taxon)].scientificName.isEmpty {
                    source.usages[Int(taxon)].scientificName = reader.string(1)
                } else {
                    source.readStatistics.duplicateRows += 1
                }
            case .authority:
                let text = reader.string(1)
                guard seenOthers.insert(ClassedNameKey(taxon: taxon, name: text, nameClass: "authority")).inserted else {
                    source.readStatistics.duplicateRows += 1
                    continue
                }
                authorities.append((taxon, text))
                others.append((taxon, text, .authority, "authority"))
            case .synonym(let nameClass):
                let name = reader.string(1)
                // A lower-case "synonym" is an English label, not a scientific name.
                guard let first = name.utf8.first, !(first >= 0x61 && first <= 0x7A) else { continue }
                if seenSynonyms.insert(NameKey(taxon: taxon, name: name)).inserted {
                    synonyms.append((taxon, name, nameClass))
                } else {
                    source.readStatistics.duplicateRows += 1
                }
            case .vernacular(let priority):
                let name = reader.string(1)
                let key = NameKey(taxon: taxon, name: name.lowercased())
                if let existing = seenVernaculars[key] {
                    // The same name in a better class upgrades it; in the same class it is a repeated row.
                    if priority < vernaculars[existing].priority {
                        vernaculars[existing].priority = priority
                    } else if priority == vernaculars[existing].priority {
                        source.readStatistics.duplicateRows += 1
                    }
                    continue
                }
                seenVernaculars[key] = vernaculars.count
                vernaculars.append((taxon, name, priority))
            case .other(let type, let nameClass):
                let name = reader.string(1)
                guard seenOthers.insert(ClassedNameKey(taxon: taxon, name: name, nameClass: nameClass)).inserted else {
                    source.readStatistics.duplicateRows += 1
                    continue
                }
                others.append((taxon, name, type, nameClass))
            case .ignored:
                continue
            }
        }
        ticker.finish()
        source.readStatistics.rows += ticker.rows

        if let missing = source.usages.indices.first(where: { source.usages[$0].scientificName.isEmpty }) {
            throw .malformedLine(file: nodesPath, line: Int(lines[missing]),
                                 detail: "tax_id \(source.usages[missing].id) has no scientific name in names.dmp")
        }

        // Synonyms, with the authorities that name them.
        var synonymPositions: [NameKey: Int] = [:]
        source.synonyms.reserveCapacity(synonyms.count)
        for (taxon, name, nameClass) in synonyms {
            synonymPositions[NameKey(taxon: taxon, name: name)] = source.synonyms.count
            source.synonyms.append(.init(acceptedID: source.usages[Int(taxon)].id, name: name, authorship: nil,
                                         nameClass: nameClass))
        }
        for (taxon, text) in authorities {
            let usage = source.usages[Int(taxon)]
            if usage.authorship == nil, let author = Self.authorship(text, of: usage.scientificName) {
                source.usages[Int(taxon)].authorship = author
                continue
            }
            // Otherwise the authority of one of the taxon's synonyms ("Felis leo Linnaeus, 1758").
            for split in text.indices(of: " ") {
                let prefix = String(text[..<split])
                if let position = synonymPositions[NameKey(taxon: taxon, name: prefix)],
                   source.synonyms[position].authorship == nil,
                   let author = Self.authorship(text, of: prefix) {
                    source.synonyms[position].authorship = author
                    break
                }
            }
        }

        // Vernacular names: the best class of each taxon gives its preferred name.
        var best: [Int32: (priority: Int8, position: Int)] = [:]
        for (position, entry) in vernaculars.enumerated() {
            if let current = best[entry.taxon], current.priority <= entry.priority { continue }
            best[entry.taxon] = (entry.priority, position)
        }
        source.vernacularNames.reserveCapacity(vernaculars.count)
        for (position, entry) in vernaculars.enumerated() {
            source.vernacularNames.append(.init(taxonID: source.usages[Int(entry.taxon)].id, name: entry.name,
                                                language: "en", preferred: best[entry.taxon]?.position == position,
                                                nameClass: Self.vernacularClasses[Int(entry.priority)]))
        }

        source.otherNames.reserveCapacity(others.count)
        for entry in others {
            source.otherNames.append(.init(taxonID: source.usages[Int(entry.taxon)].id, name: entry.name,
                                           type: entry.type, nameClass: entry.nameClass))
        }
    }

    /// The authorship part of an NCBI authority string that begins with `name`
    /// followed by a space, or nil.
    static func authorship(_ authority: String, of name: String) -> String? {
        guard !name.isEmpty, authority.hasPrefix(name) else { return nil }
        let rest = authority.utf8.dropFirst(name.utf8.count)
        guard let first = rest.first, first == 0x20 else { return nil }
        let author = String(Substring(rest)).trimmingCharacters(in: .whitespaces)
        return author.isEmpty ? nil : author
    }

    // MARK: merged.dmp

    private func readMerged(_ path: String, into source: inout SourceTaxonomy) throws(SourceError) {
        let file = try MappedFile(path: path)
        var reader = DelimitedRowReader(file: file, separator: .dump)
        var ticker = ProgressTicker(file: path, handler: progress)
        while reader.next() {
            ticker.tick()
            guard reader.fieldCount >= 2, let old = reader.int64(0), let new = reader.int64(1) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                if reader.fieldCount < 2 {
                    throw .malformedLine(file: path, line: reader.line,
                                         detail: "expected old_tax_id and new_tax_id separated by '\\t|\\t'")
                }
                let column = reader.int64(0) == nil ? 0 : 1
                throw .badValue(file: path, line: reader.line, column: column == 0 ? "old_tax_id" : "new_tax_id",
                                value: reader.string(column))
            }
            if source.merged.updateValue(new, forKey: old) != nil { source.readStatistics.duplicateRows += 1 }
        }
        ticker.finish()
        source.readStatistics.rows += ticker.rows
    }

    // MARK: delnodes.dmp

    /// One deleted tax_id per line (`12345\t|`).
    private func readDeleted(_ path: String, into source: inout SourceTaxonomy) throws(SourceError) {
        let file = try MappedFile(path: path)
        var reader = DelimitedRowReader(file: file, separator: .dump)
        var ticker = ProgressTicker(file: path, handler: progress)
        while reader.next() {
            ticker.tick()
            guard reader.fieldCount >= 1, let id = reader.int64(0) else {
                if reader.isDamaged { source.readStatistics.damagedLines += 1; continue }
                throw .badValue(file: path, line: reader.line, column: "tax_id", value: reader.string(0))
            }
            if !source.deleted.insert(id).inserted { source.readStatistics.duplicateRows += 1 }
        }
        ticker.finish()
        source.readStatistics.rows += ticker.rows
    }
}

private extension String {
    /// Positions of `separator` in the string.
    func indices(of separator: Character) -> [String.Index] {
        indices.filter { self[$0] == separator }
    }
}
