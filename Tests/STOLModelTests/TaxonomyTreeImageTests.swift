import Foundation
import Glibc
import STOLModel
import STOLTestFixtures
import XCTest

/// ``TaxonomyTree``'s image (the file a start reads instead of building the tree):
/// it gives back the same tree, names the database it was made for, and a damaged
/// one is refused or harmless, never a trap or an endless walk.
final class TaxonomyTreeImageTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
    }

    /// A tree whose view differs from the source's: every fifth node has a rank
    /// outside the eight (`no rank`, `strain`, `clade`), so it is outside the view.
    private func tree(seed: UInt64, count: Int = 400) throws -> TaxonomyTree {
        let nodes = randomTaxonomy(count: count, extraRoots: 2, seed: seed).sorted { $0.id < $1.id }
        var builder = TaxonomyTree.Builder(capacity: nodes.count)
        let others = ["no rank", "strain", "clade"]
        for (index, node) in nodes.enumerated() {
            let rank = index % 5 == 4 && node.parentID != nil ? others[index % 3] : node.rank.rawValue
            try builder.append(id: node.id, parentID: node.parentID, rank: rank, name: Array(node.scientificName.utf8))
        }
        return try builder.build()
    }

    private func image(of tree: TaxonomyTree, key: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try tree.writeImage(key: key) { bytes += $0 }
        return bytes
    }

    private func read(_ bytes: [UInt8], key: String) throws(TaxonomyTree.ImageError) -> TaxonomyTree {
        let path = directory + "/image-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor); unlink(path) }
        return try TaxonomyTree.readImage(from: descriptor, expectedKey: key)
    }

    func testAnImageReadBack_isTheSameTree_everyArrayAndEveryAnswer() throws {
        let original = try tree(seed: TestSeed.make(for: self))
        let bytes = try image(of: original, key: "/db\nfingerprint")
        let copy = try read(bytes, key: "/db\nfingerprint")
        // Written again, byte for byte the same: every array came back.
        XCTAssertEqual(try image(of: copy, key: "/db\nfingerprint"), bytes)
        XCTAssertEqual(copy.count, original.count)
        XCTAssertEqual(copy.rankNames, original.rankNames)
        for node in 0..<original.count {
            XCTAssertEqual(copy.id(at: node), original.id(at: node))
            XCTAssertEqual(copy.name(of: node), original.name(of: node))
            XCTAssertEqual(copy.rank(of: node), original.rank(of: node))
            for view in [TaxonomyTree.View.main, .all] {
                XCTAssertEqual(copy.ancestors(of: node, in: view), original.ancestors(of: node, in: view))
                XCTAssertEqual(copy.children(of: node, in: view), original.children(of: node, in: view))
            }
            XCTAssertEqual(copy.nodes(named: original.name(of: node), limit: 16).nodes,
                           original.nodes(named: original.name(of: node), limit: 16).nodes)
            XCTAssertEqual(copy.descendants(of: node, ranks: nil, offset: 0, limit: 1000).page,
                           original.descendants(of: node, ranks: nil, offset: 0, limit: 1000).page)
        }
    }

    /// The image's file is mapped, not copied: its pages are the tree's arrays while the
    /// tree lives (after its descriptor is closed, and after the file is replaced by a
    /// rename, as the server writes its images), and unmapped when the last copy goes.
    func testAnImagesTree_readsTheMappedFile_untilTheLastCopyOfTheTreeGoes() throws {
        let original = try tree(seed: TestSeed.make(for: self), count: 300)
        let path = directory + "/mapped-\(UUID().uuidString).tree"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(try image(of: original, key: "k"))))
        /// This process's mappings, read to their end (a /proc file has no size to read by).
        func mappings() throws -> String {
            let handle = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/self/maps"))
            defer { try? handle.close() }
            return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        }
        func mapped() throws -> Bool { try mappings().contains(path) }
        var copies: [TaxonomyTree] = []
        do {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            XCTAssertGreaterThanOrEqual(descriptor, 0)
            defer { close(descriptor) }
            copies.append(try TaxonomyTree.readImage(from: descriptor, expectedKey: "k"))
        }
        XCTAssertTrue(try mapped(), "the tree's arrays are the file's pages")
        // Replaced by a rename: the mapped file is the old one, whole.
        XCTAssertTrue(FileManager.default.createFile(atPath: path + ".new", contents: Data("other".utf8)))
        XCTAssertEqual(rename(path + ".new", path), 0)
        copies.append(copies[0])
        copies.removeFirst()
        for node in 0..<original.count {
            XCTAssertEqual(copies[0].id(at: node), original.id(at: node))
            XCTAssertEqual(copies[0].name(of: node), original.name(of: node))
            XCTAssertEqual(copies[0].ancestors(of: node, in: .all), original.ancestors(of: node, in: .all))
        }
        XCTAssertTrue(try mappings().contains(path + " (deleted)"), "the replaced file stays mapped")
        copies.removeAll()
        XCTAssertFalse(try mapped(), "unmapped with the last copy of the tree")
    }

    func testAnImage_ofAnotherDatabase_orOfAnotherFormat_isRefused() throws {
        let bytes = try image(of: try tree(seed: TestSeed.make(for: self), count: 50), key: "/db\nfingerprint-1")
        XCTAssertThrowsError(try read(bytes, key: "/db\nfingerprint-2")) { XCTAssertEqual($0 as? TaxonomyTree.ImageError, .otherDatabase) }
        var otherVersion = bytes
        otherVersion[8] &+= 1
        XCTAssertThrowsError(try read(otherVersion, key: "/db\nfingerprint-1")) { XCTAssertEqual($0 as? TaxonomyTree.ImageError, .notAnImage) }
        XCTAssertThrowsError(try read(Array("SQLite format 3\0".utf8) + bytes, key: "/db\nfingerprint-1")) {
            XCTAssertEqual($0 as? TaxonomyTree.ImageError, .notAnImage)
        }
    }

    /// Cut anywhere, an image is refused (a write killed midway never leaves one
    /// behind, ``AtomicFile``; this is a file damaged later).
    func testATruncatedImage_isRefused_whereverItIsCut() throws {
        let bytes = try image(of: try tree(seed: TestSeed.make(for: self), count: 60), key: "k")
        for length in Array(stride(from: 0, to: bytes.count, by: 7)) + Array(bytes.count - 8..<bytes.count) {
            XCTAssertThrowsError(try read(Array(bytes.prefix(length)), key: "k"), "cut at \(length) of \(bytes.count)")
        }
        XCTAssertThrowsError(try read(bytes + [0], key: "k"), "a byte after the end")
    }

    /// A byte changed anywhere: the image is refused as inconsistent, or the tree it
    /// gives is one whose walks end (parents form a forest, children lists list
    /// children): a damaged image may at worst misname, never hang or trap the server.
    func testAnImageWithAByteChanged_isRefused_orGivesATreeWhoseWalksEnd() throws {
        var random = SplitMix64(seed: TestSeed.make(for: self))
        let original = try tree(seed: random.next(), count: 120)
        let bytes = try image(of: original, key: "k")
        var refused = 0, accepted = 0
        for _ in 0..<1500 {
            var damaged = bytes
            let position = Int.random(in: 0..<bytes.count, using: &random)
            damaged[position] ^= UInt8.random(in: 1...255, using: &random)
            let tree: TaxonomyTree
            do {
                tree = try read(damaged, key: "k")
            } catch {
                refused += 1
                continue
            }
            accepted += 1
            XCTAssertEqual(tree.count, original.count)
            for node in 0..<tree.count {
                for view in [TaxonomyTree.View.main, .all] {
                    XCTAssertEqual(tree.ancestors(of: node, in: view).count, tree.depth(of: node, in: view))
                    for child in tree.children(of: node, in: view) { XCTAssertEqual(tree.parent(of: child, in: view), node) }
                }
                _ = tree.name(of: node)
                _ = tree.rank(of: node)
                _ = tree.descendants(of: node, ranks: nil, offset: 0, limit: 10)
            }
        }
        XCTAssertGreaterThan(refused, 500, "the checks refuse most damage to the arrays that walks follow")
        XCTAssertGreaterThan(accepted, 0, "some damage (a letter of a name) is harmless and accepted")
    }
}
