import Foundation
import GRDB
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

final class BuilderOptionsTests: XCTestCase {
    private func build(_ configure: (inout TaxonomyBuilder.Options) -> Void) throws -> (TaxonomyBuilder.Summary, String) {
        let directory = try TaxdumpFixture.write(to: try makeTemporaryDirectory(self))
        let output = try makeTemporaryDirectory(self) + "/out.sqlite"
        var options = TaxonomyBuilder.Options()
        options.format = .ncbi
        configure(&options)
        let summary = try TaxonomyBuilder(options: options, logger: quietLogger).buildWithSummary(source: directory,
                                                                                                  output: output)
        return (summary, output)
    }

    /// The ids of the eight-rank view (schema 3: the rows with a main rank).
    private func taxonIDs(_ path: String) throws -> Set<TaxonID> {
        try DatabaseQueue(path: path).read { Set(try TaxonID.fetchAll($0, sql: "SELECT id FROM taxa WHERE main_rank IS NOT NULL")) }
    }

    /// Every node of the database.
    private func nodeIDs(_ path: String) throws -> Set<TaxonID> {
        try DatabaseQueue(path: path).read { Set(try TaxonID.fetchAll($0, sql: "SELECT id FROM taxa")) }
    }

    func testSourceFormat_hasTheFourSources() {
        XCTAssertEqual(Set(TaxonomyBuilder.SourceFormat.allCases.map(\.rawValue)), ["coldp", "ncbi", "gbif", "ott"])
        XCTAssertEqual(TaxonomyBuilder.Options().format, .coldp)
        XCTAssertFalse(TaxonomyBuilder.Options().dropPlaceholders)
        XCTAssertEqual(TaxonomyBuilder.Options().subsetRoots, [])
    }

    // MARK: Subset

    func testSubset_keepsTheRootsSubtreeAndItsAncestorsOnly() throws {
        let (summary, output) = try build { $0.subsetRoots = [9688] }  // Panthera
        XCTAssertEqual(try taxonIDs(output), [2759, 33208, 7711, 40674, 33554, 9681, 9688, 9689, 9694, 9690, 1383299])
        XCTAssertEqual(summary.subset?.unknownRoots, [])
        // root, cellular organisms, Eukaryota … Pantherinae, Panthera and its four species.
        XCTAssertEqual(summary.subset?.keptUsages, 14)
        XCTAssertEqual(summary.subset?.droppedUsages, TaxdumpFixture.nodes.count - 14)
        XCTAssertEqual(try nodeIDs(output).count, 14, "every kept usage is a node")
        try DatabaseQueue(path: output).read { db in
            XCTAssertEqual(try TaxonID.fetchOne(db, sql: "SELECT main_parent_id FROM taxa WHERE id = 9688"), 9681)
            XCTAssertEqual(try TaxonID.fetchOne(db, sql: "SELECT parent_id FROM taxa WHERE id = 9688"), 338153)
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM taxa WHERE parent_id IS NULL"), 1)
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT count(*) FROM names WHERE taxon_id = 9685"), 0)
        }
    }

    func testSubset_withSeveralRoots_oneInsideAnother_andAnUnknownOne() throws {
        let (summary, output) = try build { $0.subsetRoots = [9682, 9689, 9681, 424242] }
        let ids = try taxonIDs(output)
        XCTAssertTrue(ids.isSuperset(of: [9681, 9682, 9685, 9688, 9689, 9694]), "all of Felidae")
        XCTAssertEqual(summary.subset?.unknownRoots, [424242])
    }

    func testSubset_ofALeaf_keepsTheLeafAndItsLineage() throws {
        let (_, output) = try build { $0.subsetRoots = [9689] }
        XCTAssertEqual(try taxonIDs(output), [2759, 33208, 7711, 40674, 33554, 9681, 9688, 9689])
    }

    // MARK: Placeholders

    func testDropPlaceholders_throughTheBuilder_reportsAndRemoves() throws {
        let (kept, keptOutput) = try build { _ in }
        XCTAssertNil(kept.placeholders)
        XCTAssertTrue(try taxonIDs(keptOutput).contains(1383299))

        let (summary, output) = try build { $0.dropPlaceholders = true }
        let ids = try taxonIDs(output)
        XCTAssertFalse(ids.contains(1383299), "Panthera sp.")
        XCTAssertTrue(ids.contains(9689))
        XCTAssertEqual(summary.placeholders?.placeholders, 1)
        XCTAssertEqual(summary.placeholders?.droppedSpecies, 1)
        XCTAssertEqual(summary.species, kept.species - 1)
        XCTAssertEqual(summary.phases.map(\.name), ["read", "placeholders", "normalise", "write"])
    }

    func testSubsetAndPlaceholders_together() throws {
        let (summary, output) = try build {
            $0.subsetRoots = [9688]
            $0.dropPlaceholders = true
        }
        XCTAssertEqual(try taxonIDs(output), [2759, 33208, 7711, 40674, 33554, 9681, 9688, 9689, 9694, 9690])
        XCTAssertEqual(summary.phases.map(\.name), ["read", "subset", "placeholders", "normalise", "write"])
    }

    // MARK: Named species and overlay (the bundled database's rules)

    func testOnlyNamedSpecies_dropsSpeciesWithoutANameAndKeepsEveryHigherTaxon() throws {
        let (summary, output) = try build { $0.onlyNamedSpecies = true }
        let ids = try taxonIDs(output)
        XCTAssertFalse(ids.contains(1383299), "Panthera sp. has no common name")
        XCTAssertTrue(ids.isSuperset(of: [9689, 9694, 9690, 9685, 9688, 9682, 9681, 2759]))
        XCTAssertEqual(summary.namedSpecies?.keptSpecies, 4)
        XCTAssertEqual(summary.namedSpecies?.droppedSpecies, 1)
        XCTAssertEqual(summary.phases.map(\.name), ["read", "named species", "normalise", "write"])
    }

    func testOnlyNamedSpecies_keepsAReleasedIDEvenWithoutAName() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "released.tsv", ["id\trank\tscientific_name", row("1383299", "species", "Panthera sp.")])
        let (summary, output) = try build {
            $0.onlyNamedSpecies = true
            $0.releasedRecords = [directory + "/released.tsv"]
        }
        XCTAssertTrue(try taxonIDs(output).contains(1383299))
        XCTAssertEqual(summary.namedSpecies?.droppedSpecies, 0)
    }

    /// Prominence counts what the source has under a taxon, not what a cut keeps
    /// (docs/design/queries-and-algorithms.md §8): the bundled database ranks its
    /// taxa as the uncut reference does.
    func testProminence_ofACutBuild_isThatOfTheWholeSource() throws {
        func prominence(_ path: String) throws -> [TaxonID: Double] {
            try DatabaseQueue(path: path).read { db in
                Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT taxon_id, score FROM prominence")
                    .map { ($0[0] as TaxonID, $0[1] as Double) })
            }
        }
        let whole = try prominence(try build { _ in }.1)
        for (what, cut) in [("named species", try build { $0.onlyNamedSpecies = true }.1),
                            ("no placeholders", try build { $0.dropPlaceholders = true }.1),
                            ("subset", try build { $0.subsetRoots = [9688] }.1)] {
            let scores = try prominence(cut)
            XCTAssertEqual(scores[9688], whole[9688], "\(what): Panthera counts Panthera sp., which the cut dropped")
            for (id, score) in scores { XCTAssertEqual(score, whole[id], "\(what): taxon \(id)") }
        }
        XCTAssertNotNil(whole[9688])
    }

    func testOverlay_throughTheBuilder_addsCuratedNamesToTheSourcesTaxa() throws {
        let (plain, plainOutput) = try build { _ in }
        XCTAssertNil(plain.overlay)
        let (summary, output) = try build { $0.overlayDirectory = curatedSourceDirectory }
        let report = try XCTUnwrap(summary.overlay)
        XCTAssertGreaterThan(report.vernacularNames, 0)
        XCTAssertGreaterThan(report.unmatched, 0, "the curated overlay covers species the small fixture lacks")
        XCTAssertEqual(try taxonIDs(output), try taxonIDs(plainOutput), "the overlay never adds taxa")
        try DatabaseQueue(path: output).read { db in
            XCTAssertEqual(try String.fetchOne(db, sql: """
                SELECT name FROM names WHERE taxon_id = 9689 AND lang = 'es' AND is_preferred = 1
                """), "león")
            XCTAssertNotNil(try String.fetchOne(db, sql: "SELECT conservation FROM taxa WHERE id = 9689"))
        }
    }

    /// The curated overlay's acronyms (`OtherName.tsv`) keep their taxa in a cut to named
    /// species, and reach the database as acronyms of NCBI's class: an unnamed species
    /// (here Panthera sp.) a lab names by an acronym stays.
    func testOverlayAcronyms_keepTheirTaxaInTheNamedSpeciesCut_asNamesOfTheirClass() throws {
        let overlay = try makeTemporaryDirectory(self)
        try writeTSV(overlay, "NameUsage.tsv", [row("ID", "parentID", "status", "rank", "scientificName"),
                                                row("9688", "", "accepted", "genus", "Panthera")])
        try writeTSV(overlay, "OtherName.tsv", [row("taxonID", "name", "class", "source"),
                                                row("1383299", "PSP-1", "genbank acronym", "a test"),
                                                row("1383299", "Panthera spec.", "equivalent name", "a test")])
        let (_, without) = try build { $0.onlyNamedSpecies = true }
        XCTAssertFalse(try nodeIDs(without).contains(1383299))
        let (summary, output) = try build {
            $0.onlyNamedSpecies = true
            $0.overlayDirectory = overlay
        }
        XCTAssertEqual(summary.overlay?.otherNames, 1)
        XCTAssertEqual(summary.overlay?.synonyms, 1)
        XCTAssertTrue(try nodeIDs(output).contains(1383299), "named by an acronym of the overlay: kept")
        try DatabaseQueue(path: output).read { db in
            let names = try Row.fetchAll(db, sql: "SELECT name, name_type, name_class FROM names WHERE taxon_id = 1383299 ORDER BY name")
            XCTAssertEqual(names.map { [$0[0], $0[1], $0[2]] as [String] }, [["PSP-1", "acronym", "genbank acronym"],
                                                                             ["Panthera spec.", "synonym", "equivalent name"]])
        }
    }

    func testOverlay_whenDirectoryIsMissing_failsWithATypedSourceError() {
        XCTAssertThrowsError(try build { $0.overlayDirectory = "/nonexistent/overlay" }) { error in
            guard case .missingFile = error as? SourceError else { return XCTFail("\(error)") }
        }
    }

    // MARK: The write path the big builds rely on

    func testBuild_ncbiDatabase_passesIntegrityAndForeignKeyChecksAndLeavesNoPartials() throws {
        let (summary, output) = try build { $0.topN = 3 }
        XCTAssertGreaterThan(summary.database.topNRelatives, 0)
        try DatabaseQueue(path: output).read { db in
            XCTAssertEqual(try String.fetchOne(db, sql: "PRAGMA integrity_check"), "ok")
            XCTAssertEqual(try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count, 0)
            XCTAssertEqual(try String.fetchOne(db, sql: "PRAGMA journal_mode"), "delete")
            let indexes = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'"))
            XCTAssertTrue(indexes.isSuperset(of: ["idx_taxa_parent", "idx_taxa_main_parent", "idx_taxa_name", "idx_names_taxon"]))
            XCTAssertEqual(try TaxonID.fetchAll(db, sql: "SELECT rowid FROM fts_taxa WHERE fts_taxa MATCH 'lion'"), [9689])
        }
        let siblings = try FileManager.default.contentsOfDirectory(atPath: URL(fileURLWithPath: output)
            .deletingLastPathComponent().path)
        XCTAssertEqual(siblings, ["out.sqlite"])
    }

    /// The pipeline's index answers exactly what the tree's own search answers.
    func testRelativesIndex_equalsClosestRelativesForEverySpecies() throws {
        var seeds = SplitMix64(for: self)
        for count in [400, 1500, 60] {
            let seed = seeds.next()
            let tree = try TaxonomyTree(testNodes: randomTaxonomy(count: count, extraRoots: 2, seed: seed))
            let index = TaxonomyTree.RelativesIndex(tree, view: .main)
            for node in 0..<tree.count where tree.isSpecies(node, in: .main) {
                for n in [1, 3, 10, 50] {
                    XCTAssertEqual(index.closestRelatives(of: node, n: n), tree.closestSpecies(of: node, n: n, in: .main).relatives,
                                   "seed \(seed), node \(tree.id(at: node)), n \(n)")
                }
            }
        }
    }

    func testRelativesIndex_inALargeGenusWithTiedNames_breaksTiesByNameThenID() throws {
        var nodes = [TreeNode(id: 1, parentID: nil, rank: .domain, scientificName: "D"),
                     TreeNode(id: 2, parentID: 1, rank: .family, scientificName: "F"),
                     TreeNode(id: 3, parentID: 2, rank: .genus, scientificName: "G"),
                     TreeNode(id: 4, parentID: 2, rank: .species, scientificName: "G orphan")]
        for id in TaxonID(100)..<TaxonID(2100) {
            nodes.append(.init(id: id, parentID: 3, rank: .species, scientificName: "G s\(id % 7)"))
        }
        let tree = try TaxonomyTree(testNodes: nodes)
        let index = TaxonomyTree.RelativesIndex(tree, view: .main)
        for id: TaxonID in [4, 100, 101, 1500, 2099] {
            let node = try XCTUnwrap(tree.index(of: id))
            XCTAssertEqual(index.closestRelatives(of: node, n: 10), tree.closestSpecies(of: node, n: 10, in: .main).relatives, "\(id)")
        }
    }
}
