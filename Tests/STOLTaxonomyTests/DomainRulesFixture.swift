import STOLTestFixtures
import XCTest

/// Nodes of every kind the domain rules tell apart, added to the NCBI taxdump fixture
/// (``TaxdumpFixture``: the lion's lineage in NCBI's 2024 spellings): bacteria with
/// strains (one under another), a serotype and a `no rank` directly under a genus;
/// Viruses in NCBI's 2025 spellings (`acellular root`, a realm, a subgenus, a `no rank`
/// virus under its species); a subspecies of the lion, and a clade under Felidae with
/// a `no rank` under it. Used by the tests of `rank_filter`, lineage templates,
/// `annotate_tree` and `resolve_name`.
enum DomainRulesFixture {
    private static func node(_ id: String, _ parent: String, _ rank: String, division: String = "2") -> String {
        dumpRow(id, parent, rank, "", division, "1", "1", "1", "2", "1", "0", "0", "")
    }

    private static func name(_ id: String, _ text: String, _ kind: String = "scientific name") -> String {
        dumpRow(id, text, "", kind)
    }

    static let nodes = [
        node("2", "131567", "superkingdom", division: "0"),
        node("1224", "2", "phylum", division: "0"),
        node("1236", "1224", "class", division: "0"),
        node("91347", "1236", "order", division: "0"),
        node("543", "91347", "family", division: "0"),
        node("561", "543", "genus", division: "0"),
        node("562", "561", "species", division: "0"),
        node("83333", "562", "strain", division: "0"),
        node("511145", "83333", "strain", division: "0"),
        node("83334", "562", "serotype", division: "0"),
        node("9999903", "561", "no rank", division: "0"),
        node("10239", "1", "acellular root", division: "9"),
        node("2559587", "10239", "realm", division: "9"),
        node("2732396", "2559587", "kingdom", division: "9"),
        node("2732408", "2732396", "phylum", division: "9"),
        node("2732506", "2732408", "class", division: "9"),
        node("76804", "2732506", "order", division: "9"),
        node("11118", "76804", "family", division: "9"),
        node("694002", "11118", "genus", division: "9"),
        node("2509511", "694002", "subgenus", division: "9"),
        node("694009", "2509511", "species", division: "9"),
        node("2697049", "694009", "no rank", division: "9"),
        node("9695", "9689", "subspecies"),
        node("9999901", "9681", "clade"),
        node("9999902", "9999901", "no rank"),
    ]

    static let names = [
        name("2", "Bacteria"), name("1224", "Pseudomonadota"), name("1236", "Gammaproteobacteria"),
        name("91347", "Enterobacterales"), name("543", "Enterobacteriaceae"), name("561", "Escherichia"),
        name("562", "Escherichia coli"), name("83333", "Escherichia coli K-12"),
        name("511145", "Escherichia coli str. K-12 substr. MG1655"), name("83334", "Escherichia coli O157:H7"),
        name("9999903", "Escherichia group X"),
        name("10239", "Viruses"), name("2559587", "Riboviria"), name("2732396", "Orthornavirae"),
        name("2732408", "Pisuviricota"), name("2732506", "Pisoniviricetes"), name("76804", "Nidovirales"),
        name("11118", "Coronaviridae"), name("694002", "Betacoronavirus"), name("2509511", "Sarbecovirus"),
        name("694009", "Betacoronavirus pandemicum"), name("2697049", "Severe acute respiratory syndrome coronavirus 2"),
        name("2697049", "SARS-CoV-2", "genbank acronym"),
        name("9695", "Panthera leo persica"), name("9695", "Asiatic lion", "genbank common name"),
        name("9999901", "Felidae test clade"), name("9999902", "Felidae test group"),
    ]

    /// The fixture served, its in-memory trees loaded (`fullTree` false: a database of
    /// the main ranks only, schema 2 without its whole tree).
    static func harness(_ testCase: XCTestCase, fullTree: Bool = true, extraNodes: [String] = [],
                        extraNames: [String] = []) async throws -> ServiceHarness {
        try await ncbiFixtureHarness(testCase, fullTree: fullTree, extraNodes: nodes + extraNodes, extraNames: names + extraNames)
    }
}
