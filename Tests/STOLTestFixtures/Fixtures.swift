import Foundation
import Glibc
import STOLModel

// Fixtures shared by the pipeline and taxonomy tests: ColDP files written from
// literal TSV, and a small real Felidae dataset.

public func fileExists(_ path: String) -> Bool {
    FileManager.default.fileExists(atPath: path)
}

/// Writes `lines` (already tab-separated) to `directory/name`, joined by `lineEnding`
/// and terminated by one.
public func writeTSV(_ directory: String, _ name: String, _ lines: [String], lineEnding: String = "\n") throws {
    let text = lines.joined(separator: lineEnding) + lineEnding
    try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
}

/// Tab-joins fields, so fixtures can be read as columns.
public func row(_ fields: String...) -> String { fields.joined(separator: "\t") }

/// The committed curated ColDP source (`Pipeline/curated`), found from this file.
public let curatedSourceDirectory = Workspace.repositoryRoot + "/Pipeline/curated"

/// A small but realistic ColDP source: NCBI ids and lineages of a few cats, a dog,
/// us, an oak and E. coli, with intermediate ranks (clade, subphylum, suborder,
/// subfamily) the normaliser must collapse, synonyms, vernacular names in four
/// languages, IUCN categories, traits and one reference.
public enum FelidaeFixture {
    public static let nameUsage = [
        row("ID", "parentID", "status", "rank", "scientificName", "authorship"),
        row("2759", "", "accepted", "superkingdom", "Eukaryota", ""),
        row("33154", "2759", "accepted", "clade", "Opisthokonta", ""),
        row("33208", "33154", "accepted", "kingdom", "Metazoa", ""),
        row("7711", "33208", "accepted", "phylum", "Chordata", ""),
        row("89593", "7711", "accepted", "subphylum", "Craniata", ""),
        row("40674", "89593", "accepted", "class", "Mammalia", "Linnaeus, 1758"),
        row("33554", "40674", "accepted", "order", "Carnivora", "Bowdich, 1821"),
        row("379583", "33554", "accepted", "suborder", "Feliformia", ""),
        row("9681", "379583", "accepted", "family", "Felidae", "Fischer de Waldheim, 1817"),
        row("338153", "9681", "accepted", "subfamily", "Pantherinae", ""),
        row("9688", "338153", "accepted", "genus", "Panthera", "Oken, 1816"),
        row("9689", "9688", "accepted", "species", "Panthera leo", "(Linnaeus, 1758)"),
        row("9694", "9688", "accepted", "species", "Panthera tigris", "(Linnaeus, 1758)"),
        row("9691", "9688", "accepted", "species", "Panthera pardus", "(Linnaeus, 1758)"),
        row("9690", "9688", "accepted", "species", "Panthera onca", "(Linnaeus, 1758)"),
        row("338152", "9681", "accepted", "subfamily", "Felinae", ""),
        row("9682", "338152", "accepted", "genus", "Felis", "Linnaeus, 1758"),
        row("9685", "9682", "accepted", "species", "Felis catus", "Linnaeus, 1758"),
        row("379584", "33554", "accepted", "suborder", "Caniformia", ""),
        row("9608", "379584", "accepted", "family", "Canidae", ""),
        row("9611", "9608", "accepted", "genus", "Canis", ""),
        row("9612", "9611", "accepted", "species", "Canis lupus", "Linnaeus, 1758"),
        row("9443", "40674", "accepted", "order", "Primates", ""),
        row("9604", "9443", "accepted", "family", "Hominidae", ""),
        row("9605", "9604", "accepted", "genus", "Homo", ""),
        row("9606", "9605", "accepted", "species", "Homo sapiens", "Linnaeus, 1758"),
        row("33090", "2759", "accepted", "kingdom", "Viridiplantae", ""),
        row("35493", "33090", "accepted", "phylum", "Streptophyta", ""),
        row("3398", "35493", "accepted", "class", "Magnoliopsida", ""),
        row("71240", "3398", "accepted", "clade", "eudicotyledons", ""),
        row("3502", "71240", "accepted", "order", "Fagales", ""),
        row("3503", "3502", "accepted", "family", "Fagaceae", ""),
        row("3511", "3503", "accepted", "genus", "Quercus", "L."),
        row("38942", "3511", "accepted", "species", "Quercus robur", "L."),
        row("2", "", "accepted", "superkingdom", "Bacteria", ""),
        row("1224", "2", "accepted", "phylum", "Pseudomonadota", ""),
        row("1236", "1224", "accepted", "class", "Gammaproteobacteria", ""),
        row("91347", "1236", "accepted", "order", "Enterobacterales", ""),
        row("543", "91347", "accepted", "family", "Enterobacteriaceae", ""),
        row("561", "543", "accepted", "genus", "Escherichia", ""),
        row("562", "561", "accepted", "species", "Escherichia coli", "(Migula, 1895) Castellani & Chalmers, 1919"),
        row("syn-1", "9689", "synonym", "species", "Felis leo", "Linnaeus, 1758"),
        row("syn-2", "9688", "synonym", "genus", "Uncia", "Gray, 1854"),
        row("syn-3", "9694", "synonym", "species", "Felis tigris", "Linnaeus, 1758"),
        row("syn-4", "338153", "synonym", "subfamily", "Pantherini", ""),
    ]

    /// The intermediate-rank usages above, which the normaliser drops.
    public static let intermediateIDs: Set<TaxonID> = [33154, 89593, 379583, 338153, 338152, 379584, 71240]
    public static let acceptedUsageCount = 41

    public static let vernacularName = [
        row("taxonID", "name", "language", "preferred"),
        row("9689", "lion", "eng", "true"),
        row("9689", "león", "spa", "true"),
        row("9689", "狮", "zho", "true"),
        row("9689", "Löwe", "deu", ""),
        row("9694", "tiger", "eng", "true"),
        row("9691", "leopard", "eng", "true"),
        row("9690", "jaguar", "eng", "true"),
        row("9685", "domestic cat", "eng", "true"),
        row("9685", "house cat", "eng", ""),
        row("9612", "gray wolf", "eng", ""),
        row("9612", "wolf", "eng", ""),
        row("9606", "human", "eng", "true"),
        row("9606", "man", "eng", "true"),
        row("9606", "humano", "spa", ""),
        row("38942", "English oak", "eng", ""),
        row("38942", "pedunculate oak", "eng", "true"),
        row("38942", "roble", "spa", ""),
        row("9681", "cats", "eng", "true"),
        row("338153", "pantherines", "eng", "true"),
    ]

    public static let taxonProperty = [
        row("taxonID", "property", "value", "unit", "reference"),
        row("9689", "iucn", "VU", "", "ref-iucn"),
        row("9689", "habitat", "savanna", "", ""),
        row("9689", "body_length", "2.0", "m", ""),
        row("9694", "iucn", "en", "", "ref-iucn"),
        row("9685", "iucn", "XX", "", ""),
        row("338153", "habitat", "forest", "", ""),
    ]

    public static let reference = [
        row("ID", "citation", "link", "type"),
        row("ref-iucn", "IUCN. 2024. The IUCN Red List of Threatened Species.", "https://www.iucnredlist.org",
            "conservation"),
    ]

    /// Writes the fixture into `directory` and returns it.
    @discardableResult
    public static func write(to directory: String, creating: Bool = false, extraUsages: [String] = []) throws -> String {
        if creating { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        try writeTSV(directory, "NameUsage.tsv", nameUsage + extraUsages)
        try writeTSV(directory, "VernacularName.tsv", vernacularName)
        try writeTSV(directory, "TaxonProperty.tsv", taxonProperty)
        try writeTSV(directory, "Reference.tsv", reference)
        return directory
    }
}
