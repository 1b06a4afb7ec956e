import STOLModel
@testable import STOLPipeline
import XCTest

final class SourceOverlayTests: XCTestCase {
    private func base() -> SourceTaxonomy {
        var source = SourceTaxonomy()
        source.usages = [
            .init(id: 9688, parentID: nil, rank: "genus", scientificName: "Panthera", authorship: nil, status: .accepted),
            .init(id: 9689, parentID: 9688, rank: "species", scientificName: "Panthera leo", authorship: nil, status: .accepted),
        ]
        source.vernacularNames = [.init(taxonID: 9689, name: "Lion", language: "en", preferred: true)]
        source.synonyms = [.init(acceptedID: 9689, name: "Felis leo", authorship: nil)]
        return source
    }

    private func overlay() -> SourceTaxonomy {
        var source = SourceTaxonomy()
        source.vernacularNames = [
            .init(taxonID: 9689, name: "lion", language: "en", preferred: false),      // same name, other case
            .init(taxonID: 9689, name: "león", language: "es", preferred: true),
            .init(taxonID: 9689, name: "African lion", language: "en", preferred: true),
            .init(taxonID: 424242, name: "unicorn", language: "en", preferred: true),  // not in the base
        ]
        source.synonyms = [.init(acceptedID: 9689, name: "Felis leo", authorship: "Linnaeus, 1758"),
                           .init(acceptedID: 9689, name: "Leo leo", authorship: nil)]
        source.properties = [.init(taxonID: 9689, key: "iucn", value: "VU", unit: nil, referenceID: "iucn"),
                             .init(taxonID: 424242, key: "iucn", value: "EX", unit: nil, referenceID: nil)]
        source.references = [.init(id: "iucn", citation: "IUCN Red List", link: nil, type: "conservation"),
                             .init(id: "unused", citation: "Not cited", link: nil, type: "other")]
        return source
    }

    func testOverlay_addsFactsForSharedTaxaAndKeepsTheBaseTree() {
        let (merged, report) = base().overlaid(with: overlay())
        XCTAssertEqual(merged.usages, base().usages)
        XCTAssertEqual(Set(merged.vernacularNames.map(\.name)), ["Lion", "león", "African lion"])
        XCTAssertEqual(merged.synonyms.map(\.name), ["Felis leo", "Leo leo"])
        XCTAssertEqual(merged.properties.map(\.value), ["VU"])
        XCTAssertEqual(merged.references.map(\.id), ["iucn"], "only cited references come along")
        XCTAssertEqual(report, .init(vernacularNames: 2, synonyms: 1, properties: 1, references: 1, unmatched: 2))
    }

    func testOverlay_preferredNameReplacesTheBasePreferenceInThatLanguageOnly() {
        let (merged, _) = base().overlaid(with: overlay())
        let preferredEnglish = merged.vernacularNames.filter { $0.language == "en" && $0.preferred }.map(\.name)
        XCTAssertEqual(preferredEnglish, ["African lion"])
        XCTAssertEqual(merged.vernacularNames.filter { $0.language == "es" && $0.preferred }.map(\.name), ["león"])
    }

    func testOverlay_thenNormaliser_leavesExactlyOnePreferredNamePerLanguage() {
        let (merged, _) = base().overlaid(with: overlay())
        let normalized = TaxonomyNormalizer().normalize(merged)
        let preferred = normalized.names.filter { $0.type == .common && $0.preferred }
        XCTAssertEqual(preferred.count, Set(preferred.map { "\($0.taxonID)|\($0.language)" }).count)
        XCTAssertEqual(normalized.taxa.first { $0.id == 9689 }?.conservation, "VU")
    }

    func testOverlay_addsOtherNamesOfSharedTaxa_onceByTextAndClass() {
        var base = base()
        base.otherNames = [.init(taxonID: 9689, name: "Pantera leo", type: .misspelling, nameClass: "misspelling")]
        var overlay = SourceTaxonomy()
        overlay.otherNames = [
            .init(taxonID: 9689, name: "Pantera leo", type: .misspelling, nameClass: "misspelling"),  // already there
            .init(taxonID: 9689, name: "Panthera leo (Linnaeus, 1758)", type: .authority, nameClass: "authority"),
            .init(taxonID: 424242, name: "UNI", type: .acronym, nameClass: "acronym"),                  // not in the base
        ]
        let (merged, report) = base.overlaid(with: overlay)
        XCTAssertEqual(merged.otherNames.map(\.name), ["Pantera leo", "Panthera leo (Linnaeus, 1758)"])
        XCTAssertEqual(report.otherNames, 1)
        XCTAssertEqual(report.unmatched, 1)
    }

    func testSubsetAndNamedSpecies_carryOtherNamesWithTheirTaxon_andCountTheDropped() {
        var source = SourceTaxonomy()
        func usage(_ id: TaxonID, _ parent: TaxonID?, _ rank: String) -> SourceTaxonomy.Usage {
            .init(id: id, parentID: parent, rank: rank, scientificName: "T\(id)", authorship: nil, status: .accepted)
        }
        source.usages = [usage(1, nil, "genus"), usage(2, 1, "species"), usage(3, 1, "species")]
        source.vernacularNames = [.init(taxonID: 3, name: "three", language: "en", preferred: true)]
        source.otherNames = [.init(taxonID: 2, name: "T-2", type: .acronym, nameClass: "genbank acronym"),
                             .init(taxonID: 3, name: "T-3", type: .acronym, nameClass: "acronym")]
        let (subset, subsetReport) = source.subset(roots: [3])
        XCTAssertEqual(subset.otherNames.map(\.name), ["T-3"])
        XCTAssertEqual(subsetReport.droppedNames, 1)
        let (named, namedReport) = source.keepingNamedSpecies()
        XCTAssertEqual(named.otherNames.map(\.name), ["T-3"], "an acronym alone does not make a species named")
        XCTAssertEqual(namedReport.droppedNames, 1)
    }

    func testKeepingNamedSpecies_dropsUnnamedSpeciesWithTheirSubspecies_keepsPropertyOnlyAndListedOnes() {
        var source = SourceTaxonomy()
        func usage(_ id: TaxonID, _ parent: TaxonID?, _ rank: String) -> SourceTaxonomy.Usage {
            .init(id: id, parentID: parent, rank: rank, scientificName: "T\(id)", authorship: nil, status: .accepted)
        }
        source.usages = [usage(1, nil, "genus"), usage(2, 1, "species"), usage(3, 2, "subspecies"),
                         usage(4, 1, "species"), usage(5, 1, "species"), usage(6, 1, "species"), usage(7, 1, "subgenus")]
        source.synonyms = [.init(acceptedID: 2, name: "Old name", authorship: nil)]
        source.properties = [.init(taxonID: 4, key: "iucn", value: "LC", unit: nil, referenceID: nil)]
        source.vernacularNames = [.init(taxonID: 5, name: "five", language: "en", preferred: true)]
        let (kept, report) = source.keepingNamedSpecies(alsoKeeping: [6])
        XCTAssertEqual(kept.usages.map(\.id), [1, 4, 5, 6, 7])
        XCTAssertEqual(report, .init(keptSpecies: 3, droppedSpecies: 1, droppedUsages: 2, droppedNames: 1))
        XCTAssertEqual(kept.synonyms, [], "a dropped species' synonyms go with it")
    }
}
