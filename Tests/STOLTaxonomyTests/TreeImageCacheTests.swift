import Foundation
import Glibc
import STOLModel
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The taxonomy server's tree images (``TreeImageCache``): the first open of a
/// database builds its tree and writes the image, the next one reads it and
/// answers the same; a database changed under its path, or an image damaged,
/// is built again; the images of databases that are gone are removed.
final class TreeImageCacheTests: XCTestCase {
    private var harness: ServiceHarness!
    private var cache: TreeImageCache!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
        cache = TreeImageCache(directory: harness.directory + "/cache/taxonomy")
    }

    /// Opens the bundled fixture with the cache and waits for everything its build
    /// does (the image is written after the indexes are handed out).
    private func open() throws -> TaxonomyDatabase {
        let database = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled, treeImages: cache)
        database.waitForBackgroundWork()
        return database
    }

    /// The image's file for the bundled database as it is now (its fingerprint as the server takes it).
    private var imagePath: String {
        get throws {
            let fingerprint = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled, loadIndexes: false).fingerprint
            return cache.entry(databasePath: harness.bundledPath, fingerprint: fingerprint).path
        }
    }

    func testTheFirstOpen_buildsAndWritesTheImage_theNextReadsIt_andAnswersTheSame() throws {
        let first = try open()
        XCTAssertEqual(first.treeSource, .rows(imageMiss: .absent))
        var info = stat()
        XCTAssertEqual(stat(try imagePath, &info), 0, "the image was written")
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(cache.directory, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700, "the cache directory is the server's alone")

        let second = try open()
        XCTAssertEqual(second.treeSource, .image)
        XCTAssertEqual(try treeImageBytes(second.memoryIndexes?.tree), try treeImageBytes(first.memoryIndexes?.tree))
        // The indexes built beside the tree (search's words, the taxa above species by
        // rank, the statuses) are those of a build from the rows.
        let hits = { (database: TaxonomyDatabase) in
            try SearchEngine(database: database).search(SearchQuery(text: "pan", prefix: true), options: SearchOptions(limit: 50))
                .map(\.taxon.id)
        }
        XCTAssertEqual(try hits(second), try hits(first))
        let filtered = { (database: TaxonomyDatabase) in
            try SearchEngine(database: database).search(SearchQuery(text: "panthera", prefix: true),
                                                        options: SearchOptions(rank: .genus, limit: 50)).map(\.taxon.id)
        }
        XCTAssertEqual(try filtered(second), try filtered(first))
        XCTAssertFalse(try filtered(second).isEmpty)
        let lineages = { (database: TaxonomyDatabase) in
            try LineageQueries(database: database).lineageBatch(["9689", "lion", "Felidae"], language: "en", ranks: .all)
        }
        XCTAssertEqual(try lineages(second), try lineages(first))
    }

    func testADatabaseReplacedUnderItsPath_isBuiltAgain_notAnsweredFromTheOldImage() throws {
        _ = try open()
        // Another database at the same path (a release installed again): another fingerprint.
        try buildFixtureDatabase(at: harness.bundledPath + ".new", extraUsages: referenceOnlyUsages, in: harness.directory)
        XCTAssertEqual(rename(harness.bundledPath + ".new", harness.bundledPath), 0)
        let reopened = try open()
        XCTAssertEqual(reopened.treeSource, .rows(imageMiss: .refused(.otherDatabase)))
        XCTAssertNotNil(reopened.memoryIndexes?.tree?.index(of: 29064), "the new database's own taxon is in its tree")
        XCTAssertEqual(try open().treeSource, .image, "and its image was written for the next start")
    }

    func testADamagedImage_isRefused_andWrittenAgain() throws {
        _ = try open()
        // Ids out of order (the header is a few hundred bytes; then the ids, 8 bytes a node).
        let descriptor = Glibc.open(try imagePath, O_RDWR)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        var junk = [UInt8](repeating: 0xff, count: 64)
        XCTAssertEqual(pwrite(descriptor, &junk, junk.count, 256), 64)
        close(descriptor)
        let reopened = try open()
        guard case .rows(imageMiss: .refused(let reason)?) = reopened.treeSource else {
            return XCTFail("a damaged image was not refused: \(String(describing: reopened.treeSource))")
        }
        XCTAssertNotEqual(reason, .otherDatabase)
        XCTAssertEqual(try open().treeSource, .image)
    }

    func testTheImagesOfDatabasesThatAreGone_andUnfinishedWrites_areRemovedWhenAnImageIsWritten() throws {
        try FileManager.default.createDirectory(atPath: cache.directory, withIntermediateDirectories: true)
        let gone = cache.entry(databasePath: harness.directory + "/deleted-release.sqlite", fingerprint: "1-2-3-4")
        let kept = cache.entry(databasePath: harness.referencePath, fingerprint: "1-2-3-4")
        try buildFixtureDatabase(at: harness.referencePath, in: harness.directory)
        // What a server killed while writing the bundled database's image left behind.
        let fingerprint = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled, loadIndexes: false).fingerprint
        let ownName = cache.entry(databasePath: harness.bundledPath, fingerprint: fingerprint).path.split(separator: "/").last!
        let unfinished = cache.directory + "/.\(ownName).tmp-AbC123"
        XCTAssertTrue(FileManager.default.createFile(atPath: unfinished, contents: Data(repeating: 7, count: 4096)))
        let small = try TaxonomyTree(testNodes: randomTaxonomy(count: 20, seed: 1))
        for entry in [gone, kept] {
            var bytes: [UInt8] = []
            try small.writeImage(key: entry.key) { bytes += $0 }
            XCTAssertTrue(FileManager.default.createFile(atPath: entry.path, contents: Data(bytes)))
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: gone.path))
        _ = try open()
        XCTAssertFalse(FileManager.default.fileExists(atPath: gone.path), "its database is gone: removed")
        XCTAssertTrue(FileManager.default.fileExists(atPath: kept.path), "its database is there: kept")
        XCTAssertFalse(FileManager.default.fileExists(atPath: unfinished), "an unfinished write of the image: removed")
        XCTAssertTrue(FileManager.default.fileExists(atPath: try imagePath))
    }

    /// A stop waits for an image being written (``TreeImageWrites/finish(within:)``,
    /// the taxonomy daemon's drain): a tree of NCBI's size takes a few hundred ms to write.
    func testFinish_returnsOnceAnImageBeingWrittenIsComplete() async throws {
        let writes = TreeImageWrites()
        let entry = cache.entry(databasePath: harness.bundledPath, fingerprint: "f")
        let tree = try TaxonomyTree(testNodes: randomTaxonomy(count: 200_000, seed: 7))
        writes.start(entry, tree, logger: quietLogger)
        await writes.finish(within: .seconds(60))
        let descriptor = Glibc.open(entry.path, O_RDONLY)
        XCTAssertGreaterThanOrEqual(descriptor, 0, "no image once finish returned")
        defer { close(descriptor) }
        XCTAssertEqual(try TaxonomyTree.readImage(from: descriptor, expectedKey: entry.key).count, 200_000)
    }

    /// Between the tree and the names' indexes: what needs only the tree answers,
    /// what needs the names waits (``TaxonomyError/memoryIndexesLoading``), never
    /// a wrong "not found" from names not yet read.
    func testWithTheTreeAlone_idsAndScientificNamesAnswer_commonNamesAndSearchWait() async throws {
        let built = try TaxonomyDatabase(path: harness.bundledPath, kind: .bundled)
        let loaded = await built.loadedMemoryIndexes()
        let tree = try XCTUnwrap(loaded.tree)
        let (service, database) = try harness.serviceHoldingTheIndexes(self)
        database.publishTreeOnly(tree)
        XCTAssertEqual(database.memoryIndexes?.namesLoaded, false)

        let lineages = LineageQueries(database: database)
        let byID = try lineages.lineageBatch(["9689", "Panthera leo"], language: "en", ranks: .all)
        XCTAssertEqual(byID.results.map { $0.taxon.id }, [9689, 9689])
        XCTAssertEqual(try lineages.lineageBatch(["9689"], language: "en", ranks: .main).results.first?.taxon.id, 9689)
        XCTAssertThrowsError(try lineages.lineageBatch(["9689", "lion"], language: "en", ranks: .all)) {
            XCTAssertEqual($0 as? TaxonomyError, .memoryIndexesLoading, "a common name waits; the batch is not answered without it")
        }
        let pairs = [Stol_V1_TaxonPair.with { $0.a = "9689"; $0.b = "9690" }]
        XCTAssertEqual(try ComparisonQueries(database: database).compareBatch(pairs, ranks: .all).results.first?.hasError, false)
        XCTAssertThrowsError(try ComparisonQueries(database: database).compareBatch(
            [.with { $0.a = "lion"; $0.b = "9690" }], ranks: .all)) { XCTAssertEqual($0 as? TaxonomyError, .memoryIndexesLoading) }
        XCTAssertThrowsError(try SearchEngine(database: database).search(SearchQuery(text: "lion", prefix: false), options: SearchOptions())) {
            XCTAssertEqual($0 as? TaxonomyError, .memoryIndexesLoading)
        }
        XCTAssertThrowsError(try NameQueries(database: database).lookUpNames(["lion"])) {
            XCTAssertEqual($0 as? TaxonomyError, .memoryIndexesLoading)
        }
        // Through the service: answered now, not when the names are built (the test never builds them here).
        var request = Stol_V1_LineageBatchRequest()
        request.queries = ["9689"]
        request.ranks = .all
        let response = await service.respond(to: .with { $0.id = 1; $0.body = .lineageBatch(request) }, context: ServiceHarness.context)
        XCTAssertEqual(response.lineageBatch.results.first?.taxon.id, 9689)
        let status = await service.respond(to: .with { $0.id = 2; $0.body = .status(.init()) }, context: ServiceHarness.context)
        XCTAssertTrue(status.status.fullTreeLoaded)
        XCTAssertFalse(database.indexesBuildRaised, "answered from the tree, nobody waited for the names: their build stays background work")
        // A search waits for the names, and so raises their build (BackgroundThread): it is no
        // longer work nobody waits for, to be done at nice +10 behind whatever else the machine runs.
        let search = Task { @Sendable in
            await service.respond(to: .with { $0.id = 3; $0.body = .search(.with { $0.query = "lion" }) }, context: ServiceHarness.context)
        }
        XCTAssertTrue(waitUntil(seconds: 60) { database.indexesBuildRaised }, "a search waiting for the names did not raise their build")
        database.startLoadingMemoryIndexes()
        let answer = await search.value
        XCTAssertTrue(answer.search.hits.contains { $0.taxon.id == 9689 }, "\(answer)")
    }
}
