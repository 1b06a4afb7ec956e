import Foundation
import Glibc
import GRDB
import STOLModel
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The tree's image the pipeline writes beside a database (``ShippedTreeImage``):
/// read at a database's very first start (no image in the server's cache yet),
/// wherever the pair is copied; refused for another build or a database changed
/// after its build, which is then built from its rows (and the server writes its own).
final class ShippedTreeImageTests: XCTestCase {
    private var directory = ""
    private var database = ""

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        database = directory + "/felidae.sqlite"
        try buildFixtureDatabase(at: database, in: directory)
    }

    private func open(_ path: String, cache: TreeImageCache? = nil) throws -> TaxonomyDatabase {
        let opened = try TaxonomyDatabase(path: path, kind: .bundled, treeImages: cache)
        opened.waitForBackgroundWork()
        return opened
    }

    private func lineages(_ opened: TaxonomyDatabase) throws -> Stol_V1_LineageBatchResponse {
        try LineageQueries(database: opened).lineageBatch(["9689", "lion", "Felidae", "9606", "0"], language: "en", ranks: .all)
    }

    func testEveryBuild_namesItself_withABuildIDOfItsOwn() throws {
        let other = directory + "/again.sqlite"
        try buildFixtureDatabase(at: other, in: directory)
        let first = try XCTUnwrap(try open(database).provenance?.buildID)
        let second = try XCTUnwrap(try open(other).provenance?.buildID)
        XCTAssertEqual(first.count, 32)
        XCTAssertTrue(first.allSatisfy(\.isHexDigit), first)
        XCTAssertNotEqual(first, second, "two builds of one source are two databases")
    }

    func testTheFirstStart_readsTheShippedImage_answersAsTheRowsDo_andWritesNoImageOfItsOwn() throws {
        let fromRows = try open(database)
        XCTAssertEqual(fromRows.treeSource, .rows(imageMiss: .absent))

        let written = try ShippedTreeImage.write(databasePath: database)
        XCTAssertEqual(written.path, database + ".tree")
        XCTAssertEqual(written.nodes, fromRows.memoryIndexes?.tree?.count)
        var info = stat()
        XCTAssertEqual(stat(written.path, &info), 0)
        XCTAssertEqual(Int(info.st_size), written.bytes)
        XCTAssertEqual(info.st_mode & 0o022, 0, "nobody but its writer may change it")

        let cache = TreeImageCache(directory: directory + "/cache/taxonomy")
        let shipped = try open(database, cache: cache)
        XCTAssertEqual(shipped.treeSource, .shippedImage)
        XCTAssertEqual(try treeImageBytes(shipped.memoryIndexes?.tree), try treeImageBytes(fromRows.memoryIndexes?.tree))
        XCTAssertEqual(try lineages(shipped), try lineages(fromRows))
        let hits = { (opened: TaxonomyDatabase) in
            try SearchEngine(database: opened).search(SearchQuery(text: "panthera", prefix: true),
                                                      options: SearchOptions(rank: .genus, limit: 50)).map(\.taxon.id)
        }
        XCTAssertEqual(try hits(shipped), try hits(fromRows))
        XCTAssertFalse(try hits(shipped).isEmpty)
        let cached = (try? FileManager.default.contentsOfDirectory(atPath: cache.directory)) ?? []
        XCTAssertEqual(cached.filter { $0.hasSuffix(".tree") }, [], "the shipped image served: the server wrote none")
        let report = DiagnosticsReport.describe(.shippedImage, of: database)
        XCTAssertTrue(report.contains(database + ".tree"), report)
    }

    func testTheDatabaseAndItsImage_copiedElsewhere_stillGoTogether() throws {
        _ = try ShippedTreeImage.write(databasePath: database)
        let elsewhere = directory + "/shared/fs"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: database, toPath: elsewhere + "/taxonomy.sqlite")
        try FileManager.default.copyItem(atPath: database + ".tree", toPath: elsewhere + "/taxonomy.sqlite.tree")
        XCTAssertEqual(try open(elsewhere + "/taxonomy.sqlite").treeSource, .shippedImage,
                       "its key names the build and the content, not the path")
    }

    func testAnotherBuildsImage_isRefused_andTheTreeBuiltFromTheRows() throws {
        _ = try ShippedTreeImage.write(databasePath: database)
        // The same source built again (another build id), with the first build's image beside it.
        let other = directory + "/other.sqlite"
        try buildFixtureDatabase(at: other, extraUsages: referenceOnlyUsages, in: directory)
        try FileManager.default.copyItem(atPath: database + ".tree", toPath: other + ".tree")
        let opened = try open(other)
        XCTAssertEqual(opened.treeSource, .rows(imageMiss: .refused(.otherDatabase)))
        XCTAssertNotNil(opened.memoryIndexes?.tree?.index(of: 29064), "its own taxon is in its tree")
    }

    func testADatabaseChangedAfterItsBuild_isBuiltFromItsRows_andTheServerImagesItself() throws {
        _ = try ShippedTreeImage.write(databasePath: database)
        // A row edited in place (as with sqlite3): the build id stays, the header's change counter moves.
        let queue = try DatabaseQueue(path: database)
        try queue.write { try $0.execute(sql: "UPDATE taxa SET scientific_name = 'Panthera leo edited' WHERE id = 9689") }
        try queue.close()
        let cache = TreeImageCache(directory: directory + "/cache/taxonomy")
        let reopened = try open(database, cache: cache)
        XCTAssertEqual(reopened.treeSource, .rows(imageMiss: .refused(.otherDatabase)))
        let tree = try XCTUnwrap(reopened.memoryIndexes?.tree)
        XCTAssertEqual(tree.name(of: try XCTUnwrap(tree.index(of: 9689))), "Panthera leo edited",
                       "the edited row answers, not the image of the build")
        XCTAssertEqual(try open(database, cache: cache).treeSource, .image, "the server's own image, from then on")
    }

    func testWrite_refusesADatabaseWithoutABuildID_anOlderSchema_orAFileThatIsNoDatabase() throws {
        let queue = try DatabaseQueue(path: database)
        try queue.write { try $0.execute(sql: "DELETE FROM provenance WHERE key = 'build_id'") }
        try queue.close()
        XCTAssertNil(try open(database).provenance?.buildID)
        XCTAssertThrowsError(try ShippedTreeImage.write(databasePath: database)) { error in
            guard case ShippedTreeImage.WriteError.noBuildID = error else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".contains("stol-pipeline build"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: database + ".tree"))
        let older = directory + "/schema2.sqlite"
        try buildFixtureDatabase(at: older, in: directory)
        try LegacySchema.downgrade(older, to: 2, keepingWholeTree: true)
        XCTAssertThrowsError(try ShippedTreeImage.write(databasePath: older)) { error in
            guard case ShippedTreeImage.WriteError.noWholeTree(schemaVersion: 2) = error else { return XCTFail("\(error)") }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: older + ".tree"))
        let text = directory + "/notes.txt"
        XCTAssertTrue(FileManager.default.createFile(atPath: text, contents: Data("not a database\n".utf8)))
        XCTAssertThrowsError(try ShippedTreeImage.write(databasePath: text)) { error in
            guard case ShippedTreeImage.WriteError.unreadable = error else { return XCTFail("\(error)") }
        }
    }
}
