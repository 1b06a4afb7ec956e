import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

final class TaxonomyNormalizerTests: XCTestCase {
    private func normalizedFixture() throws -> NormalizedTaxonomy {
        let directory = try FelidaeFixture.write(to: try makeTemporaryDirectory(self))
        return TaxonomyNormalizer().normalize(try ColDPReader().read(directory: directory))
    }

    private func taxon(_ id: TaxonID, in taxonomy: NormalizedTaxonomy,
                       file: StaticString = #filePath, line: UInt = #line) throws -> NormalizedTaxonomy.Taxon {
        try XCTUnwrap(taxonomy.taxa.first { $0.id == id }, "taxon \(id)", file: file, line: line)
    }

    func testNormalizer_whenIntermediateRanksPresent_dropsThemAndCountsThem() throws {
        let taxonomy = try normalizedFixture()
        XCTAssertEqual(taxonomy.droppedIntermediate, FelidaeFixture.intermediateIDs.count)
        XCTAssertEqual(taxonomy.taxa.count, FelidaeFixture.acceptedUsageCount - FelidaeFixture.intermediateIDs.count)
        XCTAssertTrue(Set(taxonomy.taxa.map(\.id)).isDisjoint(with: FelidaeFixture.intermediateIDs))
    }

    func testNormalizer_whenIntermediateRanksPresent_attachesToNearestKeptAncestor() throws {
        let taxonomy = try normalizedFixture()
        let expectedParents: [TaxonID: TaxonID?] = [
            2759: nil,
            33208: 2759,   // kingdom under the domain, across the `clade` Opisthokonta
            40674: 7711,   // class under the phylum, across the subphylum Craniata
            9681: 33554,   // family under the order, across the suborder Feliformia
            9688: 9681,    // genus under the family, across the subfamily Pantherinae
            9682: 9681,    // genus under the family, across the subfamily Felinae
            9608: 33554,
            9689: 9688,
            3502: 3398,    // order under the class, across the `clade` eudicotyledons
            1224: 2,       // a phylum straight under its domain (no kingdom in between)
        ]
        for (id, parent) in expectedParents {
            XCTAssertEqual(try taxon(id, in: taxonomy).parentID, parent, "parent of \(id)")
        }
        // Every kept taxon's parent is kept and of a strictly higher rank.
        let rankByID = Dictionary(uniqueKeysWithValues: taxonomy.taxa.map { ($0.id, $0.rank) })
        for taxon in taxonomy.taxa {
            guard let parent = taxon.parentID else { continue }
            let parentRank = try XCTUnwrap(rankByID[parent], "parent \(parent) of \(taxon.id) was not kept")
            XCTAssertLessThan(parentRank, taxon.rank)
        }
        XCTAssertNoThrow(try TaxonomyTree(testNodes: taxonomy.taxa.map {
            .init(id: $0.id, parentID: $0.parentID, rank: $0.rank, scientificName: $0.scientificName)
        }))
    }

    func testNormalizer_whenSourceRankIsSubgenusOrSpeciesGroup_attachesSpeciesToTheGenus() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "NameUsage.tsv", [
            row("ID", "parentID", "status", "rank", "scientificName"),
            row("10", "", "accepted", "genus", "Mus"),
            row("11", "10", "accepted", "subgenus", "Mus"),
            row("12", "11", "accepted", "species group", "Mus musculus group"),
            row("13", "12", "accepted", "species", "Mus musculus"),
            row("14", "13", "accepted", "subspecies", "Mus musculus domesticus"),
        ])
        let taxonomy = TaxonomyNormalizer().normalize(try ColDPReader().read(directory: directory))
        XCTAssertEqual(taxonomy.taxa.map(\.id), [10, 13])
        XCTAssertEqual(try taxon(13, in: taxonomy).parentID, 10)
        XCTAssertEqual(taxonomy.droppedIntermediate, 3)
    }

    func testNormalizer_mapsSuperkingdomToDomain() throws {
        let taxonomy = try normalizedFixture()
        XCTAssertEqual(try taxon(2759, in: taxonomy).rank, .domain)
        XCTAssertEqual(try taxon(2, in: taxonomy).rank, .domain)
        XCTAssertEqual(TaxonRank(sourceRank: " SuperKingdom "), .domain)
        XCTAssertEqual(TaxonRank(sourceRank: "acellular root"), .domain, "NCBI's Viruses since 2025")
        XCTAssertNil(TaxonRank(sourceRank: "cellular root"), "cellular organisms is no domain")
        XCTAssertNil(TaxonRank(sourceRank: "realm"))
        XCTAssertEqual(TaxonRank(sourceRank: "division"), .phylum)
        XCTAssertNil(TaxonRank(sourceRank: "subfamily"))
        XCTAssertNil(TaxonRank(sourceRank: "realm"))
    }

    func testNormalizer_keepsExactlyOnePreferredNamePerTaxonAndLanguage() throws {
        let taxonomy = try normalizedFixture()
        let common = taxonomy.names.filter { $0.type == .common }
        let groups = Dictionary(grouping: common) { "\($0.taxonID)|\($0.language)" }
        XCTAssertFalse(groups.isEmpty)
        for (key, names) in groups {
            XCTAssertEqual(names.filter(\.preferred).count, 1, "preferred names of \(key)")
        }
        func preferred(_ id: TaxonID, _ language: String) -> String? {
            common.first { $0.taxonID == id && $0.language == language && $0.preferred }?.name
        }
        XCTAssertEqual(preferred(9606, "en"), "human", "the first of two marked names wins")
        XCTAssertEqual(preferred(9612, "en"), "gray wolf", "none marked: the first one is preferred")
        XCTAssertEqual(preferred(38942, "en"), "pedunculate oak", "a marked name wins over an earlier unmarked one")
        XCTAssertEqual(preferred(38942, "es"), "roble")
        XCTAssertEqual(preferred(9689, "es"), "león")
        XCTAssertEqual(preferred(9689, "zh"), "狮")
        XCTAssertEqual(preferred(9689, "de"), "Löwe")
        XCTAssertFalse(taxonomy.names.contains { $0.type == .synonym && $0.preferred })
    }

    func testNormalizer_attachesSynonymsAsSynonymNamesOfTheAcceptedTaxon() throws {
        let taxonomy = try normalizedFixture()
        let synonyms = taxonomy.names.filter { $0.type == .synonym }
        XCTAssertEqual(Set(synonyms.map { "\($0.taxonID):\($0.name)" }),
                       ["9689:Felis leo", "9688:Uncia", "9694:Felis tigris", "338153:Pantherini"])
        XCTAssertTrue(synonyms.allSatisfy { $0.language == "und" })
    }

    func testNormalizer_namesOfANodeOutsideTheEightRanks_stayOnThatNode() throws {
        let taxonomy = try normalizedFixture()
        // The vernacular `pantherines` and the synonym `Pantherini` both belong to the subfamily:
        // a node (schema 3), outside the eight-rank view.
        XCTAssertEqual(taxonomy.droppedNames, 0)
        XCTAssertEqual(Set(taxonomy.names.filter { $0.taxonID == 338153 }.map(\.name)), ["pantherines", "Pantherini"])
        XCTAssertTrue(taxonomy.nodes.contains { $0.id == 338153 && $0.mainRank == nil && $0.rank == "subfamily" })
        XCTAssertFalse(taxonomy.taxa.contains { $0.id == 338153 })
    }

    func testNormalizer_whenNamesBelongToNoNode_countsThemInDroppedNames() throws {
        var source = try ColDPReader().read(directory: try FelidaeFixture.write(to: try makeTemporaryDirectory(self)))
        source.vernacularNames.append(.init(taxonID: 424242, name: "nobody", language: "en", preferred: true))
        source.synonyms.append(.init(acceptedID: 424243, name: "Nullus nemo", authorship: nil))
        source.otherNames.append(.init(taxonID: 424244, name: "NN", type: .acronym, nameClass: "acronym"))
        let taxonomy = TaxonomyNormalizer().normalize(source)
        XCTAssertEqual(taxonomy.droppedNames, 3)
        XCTAssertFalse(taxonomy.names.contains { [424242, 424243, 424244].contains($0.taxonID) })
    }

    func testNormalizer_namesOfASourceWithoutClasses_areVernacularNameOrSynonym() throws {
        let taxonomy = try normalizedFixture()
        XCTAssertFalse(taxonomy.names.isEmpty)
        for name in taxonomy.names {
            XCTAssertEqual(name.nameClass, name.type == .synonym ? "synonym" : "vernacular name", "\(name)")
        }
    }

    func testNormalizer_otherNames_becomeNamesOfTheirTypeAndClass_inNoLanguage_neverPreferred() throws {
        var source = try ColDPReader().read(directory: try FelidaeFixture.write(to: try makeTemporaryDirectory(self)))
        source.vernacularNames.append(.init(taxonID: 9694, name: "Amur tiger", language: "en", preferred: false,
                                            nameClass: "genbank common name"))
        source.otherNames = [.init(taxonID: 9689, name: "Pantera leo", type: .misspelling, nameClass: "misspelling"),
                             .init(taxonID: 338153, name: "Pantherini", type: .includes, nameClass: "in-part")]
        let taxonomy = TaxonomyNormalizer().normalize(source)
        let misspelling = try XCTUnwrap(taxonomy.names.first { $0.name == "Pantera leo" })
        XCTAssertEqual(misspelling.taxonID, 9689)
        XCTAssertEqual(misspelling.type, .misspelling)
        XCTAssertEqual(misspelling.nameClass, "misspelling")
        XCTAssertEqual(misspelling.language, "und")
        XCTAssertFalse(misspelling.preferred)
        XCTAssertTrue(taxonomy.names.contains { $0.taxonID == 338153 && $0.type == .includes && $0.nameClass == "in-part" },
                      "on a node outside the eight ranks too")
        XCTAssertEqual(taxonomy.names.first { $0.name == "Amur tiger" }?.nameClass, "genbank common name",
                       "a source's own class is kept")
        XCTAssertEqual(taxonomy.droppedNames, 0)
    }

    func testNormalizer_fillsConservationFromIUCNPropertyOnly() throws {
        let taxonomy = try normalizedFixture()
        XCTAssertEqual(try taxon(9689, in: taxonomy).conservation, "VU")
        XCTAssertEqual(try taxon(9694, in: taxonomy).conservation, "EN", "categories are upper-cased")
        XCTAssertNil(try taxon(9685, in: taxonomy).conservation, "XX is no IUCN category")
        XCTAssertNil(try taxon(9606, in: taxonomy).conservation)
        // IUCN rows are not traits; other properties are, with units and references kept.
        XCTAssertFalse(taxonomy.traits.contains { $0.key == "iucn" })
        let lionTraits = taxonomy.traits.filter { $0.taxonID == 9689 }
        XCTAssertEqual(Set(lionTraits.map { "\($0.key)=\($0.value)" }), ["habitat=savanna", "body_length=2.0"])
        XCTAssertEqual(lionTraits.first { $0.key == "body_length" }?.unit, "m")
        XCTAssertEqual(taxonomy.traits.filter { $0.taxonID == 338153 }.map(\.key), ["habitat"],
                       "a property of a node outside the eight ranks stays on it")
        XCTAssertEqual(Set(taxonomy.references.map(\.taxonID)), [9689, 9694])
        XCTAssertTrue(taxonomy.references.allSatisfy { $0.type == "conservation" && $0.url == "https://www.iucnredlist.org" })
    }

    func testNormalizer_parsesYearFromAuthorship() throws {
        let taxonomy = try normalizedFixture()
        XCTAssertEqual(try taxon(9689, in: taxonomy).year, 1758)
        XCTAssertEqual(try taxon(9689, in: taxonomy).author, "(Linnaeus, 1758)")
        XCTAssertEqual(try taxon(9685, in: taxonomy).year, 1758)
        XCTAssertEqual(try taxon(9681, in: taxonomy).year, 1817)
        XCTAssertEqual(try taxon(562, in: taxonomy).year, 1895,
                       "the parenthesised original description, not the 1919 combination")
        XCTAssertNil(try taxon(38942, in: taxonomy).year, "`L.` carries no year")
        XCTAssertNil(try taxon(9606 - 1, in: taxonomy).year, "no authorship, no year")
    }

    func testNormalizer_curatedSource_keepsLionUnderPantheraAsSpecies() throws {
        let source = try ColDPReader().read(directory: curatedSourceDirectory)
        let taxonomy = TaxonomyNormalizer().normalize(source)
        let lion = try taxon(9689, in: taxonomy)
        XCTAssertEqual(lion.rank, .species)
        XCTAssertEqual(lion.parentID, 9688)
        XCTAssertEqual(lion.year, 1758)
        XCTAssertEqual(lion.conservation, "VU")
        XCTAssertEqual(try taxon(210, in: taxonomy).year, 1985, "(Marshall et al., 1985) Goodwin et al., 1989")
        XCTAssertEqual(try taxon(9688, in: taxonomy).rank, .genus)
        XCTAssertEqual(try taxon(38942, in: taxonomy).scientificName, "Quercus robur")
        XCTAssertEqual(taxonomy.taxa.filter { $0.parentID == nil }.map(\.rank), [.domain, .domain, .domain])
        XCTAssertGreaterThan(taxonomy.droppedIntermediate, 0)
    }
}
