import Foundation

/// One taxdump line: fields joined by `\t|\t`, ended by `\t|` as NCBI writes them.
public func dumpRow(_ fields: String...) -> String { fields.joined(separator: "\t|\t") + "\t|" }

/// Writes raw bytes (for NUL blocks and exact line ends).
public func writeBytes(_ directory: String, _ name: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
}

/// A small real NCBI taxdump (tax_ids, names and classes as in the NCBI
/// Taxonomy): the lion's lineage with intermediate ranks, a cat, a placeholder
/// `Panthera sp.` and an `unclassified Felidae` container.
public enum TaxdumpFixture {
    public static let nodes = [
        dumpRow("1", "1", "no rank", "", "8", "0", "1", "0", "0", "0", "0", "0", ""),
        dumpRow("131567", "1", "no rank", "", "8", "1", "1", "1", "0", "1", "1", "0", ""),
        dumpRow("2759", "131567", "superkingdom", "", "1", "0", "1", "0", "1", "0", "0", "0", ""),
        dumpRow("33208", "2759", "kingdom", "", "1", "1", "1", "1", "5", "1", "0", "0", ""),
        dumpRow("7711", "33208", "phylum", "", "1", "1", "1", "1", "2", "1", "0", "0", ""),
        dumpRow("40674", "7711", "class", "", "2", "1", "1", "1", "2", "1", "0", "0", ""),
        dumpRow("33554", "40674", "order", "", "2", "1", "1", "1", "2", "1", "0", "0", ""),
        dumpRow("9681", "33554", "family", "", "2", "1", "1", "1", "2", "1", "0", "0", ""),
        dumpRow("338153", "9681", "subfamily", "", "2", "1", "1", "1", "2", "1", "0", "0", ""),
        dumpRow("9688", "338153", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", ""),
        dumpRow("9689", "9688", "species", "PL", "2", "1", "1", "1", "2", "1", "1", "0", ""),
        dumpRow("9694", "9688", "species", "PT", "2", "1", "1", "1", "2", "1", "1", "0", ""),
        dumpRow("9690", "9688", "species", "PO", "2", "1", "1", "1", "2", "1", "1", "0", ""),
        dumpRow("9682", "9681", "genus", "", "2", "1", "1", "1", "2", "1", "0", "0", ""),
        dumpRow("9685", "9682", "species", "FC", "2", "1", "1", "1", "2", "1", "1", "0", ""),
        dumpRow("1383299", "9688", "species", "", "2", "1", "1", "1", "2", "1", "1", "0", ""),
        dumpRow("339610", "9681", "no rank", "", "2", "1", "1", "1", "2", "1", "0", "0", ""),
    ]

    public static let names = [
        dumpRow("1", "all", "", "synonym"),
        dumpRow("1", "root", "", "scientific name"),
        dumpRow("131567", "cellular organisms", "", "scientific name"),
        dumpRow("2759", "Eucarya", "", "synonym"),
        dumpRow("2759", "eucaryotes", "", "genbank common name"),
        dumpRow("2759", "Eukaryota", "", "scientific name"),
        dumpRow("2759", "eukaryotes", "eukaryotes <blast name>", "blast name"),
        dumpRow("2759", "eukaryotes", "eukaryotes <common name>", "common name"),
        dumpRow("33208", "Metazoa", "", "scientific name"),
        dumpRow("33208", "metazoans", "metazoans <blast name>", "blast name"),
        dumpRow("7711", "Chordata", "", "scientific name"),
        dumpRow("40674", "Mammalia", "", "scientific name"),
        dumpRow("40674", "Mammalia Linnaeus, 1758", "", "authority"),
        dumpRow("40674", "mammals", "mammals <blast name>", "blast name"),
        dumpRow("40674", "mammals", "mammals <genbank common name>", "genbank common name"),
        dumpRow("33554", "Carnivora", "", "scientific name"),
        dumpRow("9681", "cat family", "", "genbank common name"),
        dumpRow("9681", "Felidae", "", "scientific name"),
        dumpRow("338153", "Pantherinae", "", "scientific name"),
        dumpRow("9688", "Leo", "", "synonym"),
        dumpRow("9688", "Panthera", "", "scientific name"),
        dumpRow("9689", "Felis leo", "", "synonym"),
        dumpRow("9689", "Felis leo Linnaeus, 1758", "", "authority"),
        dumpRow("9689", "Leo leo", "", "synonym"),
        dumpRow("9689", "lion", "", "genbank common name"),
        dumpRow("9689", "African lion", "", "common name"),
        dumpRow("9689", "Panthera leo", "", "scientific name"),
        dumpRow("9689", "Panthera leo (Linnaeus, 1758)", "", "authority"),
        dumpRow("9689", "Panthera leo persica", "", "includes"),
        dumpRow("9689", "Pantera leo", "", "misspelling"),
        dumpRow("9689", "lions", "", "equivalent name"),
        dumpRow("9689", "ZMB Mam 1234", "ZMB Mam 1234 <holotype>", "type material"),
        dumpRow("9694", "Panthera tigris", "", "scientific name"),
        dumpRow("9694", "tiger", "", "genbank common name"),
        dumpRow("9694", "Tigris tigris", "", "equivalent name"),
        dumpRow("9690", "Panthera onca", "", "scientific name"),
        dumpRow("9690", "jaguar", "", "genbank common name"),
        dumpRow("9682", "Felis", "", "scientific name"),
        dumpRow("9685", "cat", "", "common name"),
        dumpRow("9685", "cats", "", "common name"),
        dumpRow("9685", "domestic cat", "", "genbank common name"),
        dumpRow("9685", "Felis catus Linnaeus, 1758", "", "authority"),
        dumpRow("9685", "Felis catus", "", "scientific name"),
        dumpRow("9685", "Felis domesticus", "", "synonym"),
        dumpRow("9685", "Korat cats", "", "includes"),
        dumpRow("9685", "Korat cats L.", "", "authority"),
        dumpRow("1383299", "Panthera sp.", "", "scientific name"),
        dumpRow("339610", "unclassified Felidae", "", "scientific name"),
    ]

    public static let merged = [dumpRow("12345", "9689"), dumpRow("54321", "9685")]
    public static let deleted = [dumpRow("99999"), dumpRow("88888")]

    @discardableResult
    public static func write(to directory: String, lineEnding: String = "\n") throws -> String {
        try writeTSV(directory, "nodes.dmp", nodes, lineEnding: lineEnding)
        try writeTSV(directory, "names.dmp", names, lineEnding: lineEnding)
        try writeTSV(directory, "merged.dmp", merged, lineEnding: lineEnding)
        try writeTSV(directory, "delnodes.dmp", deleted, lineEnding: lineEnding)
        return directory
    }
}

