import Foundation
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// Names are real NCBI Taxonomy scientific names.
final class PlaceholderFilterTests: XCTestCase {
    func testVerdict_describedSpeciesAndRealGroups_areKept() {
        for name in ["Panthera leo", "Homo sapiens", "Escherichia coli", "Mycobacterium tuberculosis",
                     "Eubacterium rectale", "Corynebacterium glutamicum", "Candidatus Pelagibacter ubique",
                     "Siganus guttatus", "Borna disease virus", "Human papillomavirus 16", "Alphapapillomavirus 9",
                     "Escherichia phage T4", "Panthera leo x Panthera tigris", "Felis catus", "Spirorchis scripta",
                     "Bacillus subtilis subsp. spizizenii"] {
            XCTAssertEqual(PlaceholderFilter.verdict(name: name, rank: "species"), .keep, name)
            XCTAssertFalse(PlaceholderFilter.isPlaceholder(name: name), name)
        }
        for (name, rank) in [("cellular organisms", "no rank"), ("root", "no rank"), ("Felidae", "family"),
                             ("Bacteria", "superkingdom"), ("Pantherinae", "subfamily")] {
            XCTAssertEqual(PlaceholderFilter.verdict(name: name, rank: rank), .keep, name)
        }
    }

    func testVerdict_placeholderOrganisms_dropTheirSubtree() {
        for name in ["Panthera sp.", "Bacillus sp. Biosubtyl", "Streptomyces sp. EF-35", "Bacillus sp",
                     "uncultured bacterium", "uncultured Corynebacterium sp. MT17L", "Felidae environmental sample",
                     "unidentified rumen bacterium 12-109", "marine metagenome", "human gut metagenome",
                     "Myotis cf. davidii ZMB Mam 108401", "Senecio aff. arenarius Merxmuller & Giess 28393",
                     "Orthaga nr. percnodes BOLD:AAC5885", "Lachnospiraceae bacterium AM48-27BH",
                     "alpha proteobacterium HIMB59", "Euryarchaeota archaeon UBA41", "actinobacterium HW3",
                     "Nostocales cyanobacterium Esc15.4", "Wolbachia endosymbiont of Drosophila simulans",
                     "bacterial symbiont of Thyasira flexuosa", "Anisakidae 53 FMC-2017", "Streptococcus genomosp. C5",
                     "Acinetobacter sp.SOS19", "Xylaria sp.7 RV-2015", "Armillaria spp. ambi-like virus 1",
                     "methanotroph K2-10", "marine eukaryote"] {
            XCTAssertEqual(PlaceholderFilter.verdict(name: name, rank: "species"), .dropSubtree, name)
            XCTAssertTrue(PlaceholderFilter.isPlaceholder(name: name), name)
        }
        XCTAssertEqual(PlaceholderFilter.verdict(name: "environmental samples", rank: "no rank"), .dropSubtree)
        XCTAssertEqual(PlaceholderFilter.verdict(name: "other sequences", rank: "no rank"), .dropSubtree)
    }

    func testVerdict_containers_dropOnlyThemselves() {
        XCTAssertEqual(PlaceholderFilter.verdict(name: "unclassified Felidae", rank: "no rank"), .dropTaxon)
        XCTAssertEqual(PlaceholderFilter.verdict(name: "Eupercaria incertae sedis", rank: "no rank"), .dropTaxon)
        XCTAssertEqual(PlaceholderFilter.verdict(name: "Asterales", rank: "order", flags: ["was_container"]), .dropTaxon)
        XCTAssertEqual(PlaceholderFilter.verdict(name: "Senecio", rank: "genus", flags: ["not_otu"]), .dropTaxon)
        XCTAssertEqual(PlaceholderFilter.verdict(name: "Senecio x", rank: "species", flags: ["environmental"]), .dropSubtree)
        XCTAssertEqual(PlaceholderFilter.verdict(name: "Senecio y", rank: "species",
                                                 flags: ["incertae_sedis", "extinct", "hidden", "barren"]), .keep)
    }

    func testVerdict_lowerCaseRule_appliesToSpeciesOnly() {
        XCTAssertEqual(PlaceholderFilter.verdict(name: "methanotroph K2-10", rank: "species"), .dropSubtree)
        XCTAssertEqual(PlaceholderFilter.verdict(name: "cellular organisms", rank: "no rank"), .keep)
    }

    /// cellular organisms → Felidae (family) → Pantherinae → Panthera → lion, tiger,
    /// `Panthera sp.` → a strain; `Felidae environmental samples` → two samples;
    /// `unclassified Felidae` → `Felidae sp. 1` and `Miracinonyx trumani`.
    private func felidae() -> SourceTaxonomy {
        var source = SourceTaxonomy()
        func usage(_ id: TaxonID, _ parent: TaxonID?, _ rank: String, _ name: String) {
            source.usages.append(.init(id: id, parentID: parent, rank: rank, scientificName: name, authorship: nil,
                                       status: .accepted))
        }
        usage(131567, nil, "no rank", "cellular organisms")
        usage(9681, 131567, "family", "Felidae")
        usage(338153, 9681, "subfamily", "Pantherinae")
        usage(9688, 338153, "genus", "Panthera")
        usage(9689, 9688, "species", "Panthera leo")
        usage(9694, 9688, "species", "Panthera tigris")
        usage(1383299, 9688, "species", "Panthera sp.")
        usage(1383300, 1383299, "strain", "Panthera sp. ABC-1")
        usage(1069807, 9681, "no rank", "Felidae environmental samples")
        usage(1069808, 1069807, "species", "Felidae environmental sample")
        usage(1069809, 1069807, "species", "uncultured Felidae")
        usage(339610, 9681, "no rank", "unclassified Felidae")
        usage(2003999, 339610, "species", "Felidae sp. 1")
        usage(61384, 339610, "species", "Miracinonyx trumani")
        source.vernacularNames = [
            .init(taxonID: 9689, name: "lion", language: "en", preferred: true),
            .init(taxonID: 1383299, name: "panther", language: "en", preferred: true),
        ]
        source.synonyms = [.init(acceptedID: 1069808, name: "Felidae environmental sample 2", authorship: nil)]
        return source
    }

    func testFilter_dropsPlaceholdersWithTheirSubtreeAndCounts() {
        let (filtered, report) = PlaceholderFilter().filter(felidae())
        XCTAssertEqual(Set(filtered.usages.map(\.scientificName)),
                       ["cellular organisms", "Felidae", "Pantherinae", "Panthera", "Panthera leo", "Panthera tigris",
                        "Miracinonyx trumani"])
        XCTAssertEqual(report.placeholders, 6, "Panthera sp. and its strain, the samples container and its two samples, Felidae sp. 1")
        XCTAssertEqual(report.containers, 1)
        XCTAssertEqual(report.droppedUsages, 7)
        XCTAssertEqual(report.droppedSpecies, 4)
        XCTAssertEqual(report.reattached, 1)
        XCTAssertEqual(report.droppedNames, 2)
        XCTAssertEqual(filtered.vernacularNames.map(\.name), ["lion"])
        XCTAssertTrue(filtered.synonyms.isEmpty)
    }

    func testFilter_otherNamesGoWithTheirTaxon_andAreCounted() {
        var source = felidae()
        source.otherNames = [.init(taxonID: 9689, name: "Pantera leo", type: .misspelling, nameClass: "misspelling"),
                             .init(taxonID: 1383300, name: "ABC-1", type: .acronym, nameClass: "acronym")]
        let (filtered, report) = PlaceholderFilter().filter(source)
        XCTAssertEqual(filtered.otherNames.map(\.name), ["Pantera leo"])
        XCTAssertEqual(report.droppedNames, 3, "the placeholders' vernacular name, synonym and acronym")
    }

    func testFilter_childrenOfAContainer_areAttachedToItsParent() {
        let (filtered, _) = PlaceholderFilter().filter(felidae())
        XCTAssertEqual(filtered.usages.first { $0.id == 61384 }?.parentID, 9681)
        let normalized = TaxonomyNormalizer().normalize(filtered)
        let trumani = normalized.taxa.first { $0.id == 61384 }
        XCTAssertEqual(trumani?.parentID, 9681, "still under Felidae after normalisation, not a root")
        XCTAssertEqual(normalized.taxa.first { $0.id == 9689 }?.parentID, 9688)
    }

    func testFilter_whenNothingIsAPlaceholder_changesNothing() {
        var source = felidae()
        source.usages.removeAll { PlaceholderFilter.verdict(name: $0.scientificName, rank: $0.rank) != .keep }
        source.vernacularNames.removeAll { $0.taxonID == 1383299 }
        source.synonyms = []
        let (filtered, report) = PlaceholderFilter().filter(source)
        XCTAssertEqual(filtered.usages, source.usages)
        XCTAssertEqual(filtered.vernacularNames, source.vernacularNames)
        XCTAssertEqual(report, PlaceholderFilter.Report())
    }

    func testFilter_onTheNCBIFixture_keepsTheLionAndDropsPantheraSp() throws {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        let (filtered, report) = PlaceholderFilter().filter(try NCBITaxdumpReader().read(directory: directory))
        let names = Set(filtered.usages.map(\.scientificName))
        XCTAssertTrue(names.contains("Panthera leo"))
        XCTAssertFalse(names.contains("Panthera sp."))
        XCTAssertFalse(names.contains("unclassified Felidae"))
        XCTAssertEqual(report.placeholders, 1)
        XCTAssertEqual(report.containers, 1)
    }
}
