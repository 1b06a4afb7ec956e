import Foundation
import GRDB
import STOLContainer
import STOLFormat
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// Row deltas (kind 3, protocol/STOL-FORMAT.md §10.2), in-process: made by the writer the
/// pipeline's `delta` command uses and applied by the verifier's own `StolFile.verify`.
final class RowDeltaTests: XCTestCase {
    private var directory = ""
    private let key = Ed25519.PrivateKey.generate()

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self, prefix: "stolrows")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Two builds by the real pipeline, the second from a source with two species more and
    /// one renamed (as NCBI's next release would be), each with its own build id and time.
    private func twoReleases() throws -> (base: String, next: String) {
        let base = directory + "/2023.11.4.sqlite", next = directory + "/2024.9.7.sqlite"
        _ = try FelidaeFixture.write(to: directory + "/source-1", creating: true)
        _ = try TaxonomyBuilder(logger: quietLogger).build(source: directory + "/source-1", output: base)
        let added = ["9696\t9688\taccepted\tspecies\tPanthera spelaea\t(Goldfuss, 1810)",
                     "9683\t9682\taccepted\tspecies\tFelis silvestris\tSchreber, 1777"]
        _ = try FelidaeFixture.write(to: directory + "/source-2", creating: true, extraUsages: added)
        let usages = directory + "/source-2/NameUsage.tsv"
        let renamed = try String(contentsOfFile: usages, encoding: .utf8).replacingOccurrences(of: "Panthera onca", with: "Panthera onca mesembrina")
        try renamed.write(toFile: usages, atomically: true, encoding: .utf8)
        _ = try TaxonomyBuilder(logger: quietLogger).build(source: directory + "/source-2", output: next)
        return (base, next)
    }

    private func write(_ kind: StolHeader.Kind, base: String, next: String, to output: String) throws -> StolFile.Written {
        try StolFile.writeDelta(base: base, baseRelease: "2023.11.4", input: next, to: output, schemaVersion: 3, signingKey: key,
                                labels: .init(release: "2024.9.7", idNamespace: "ncbi-taxid"), level: 3, kind: kind)
    }

    func testARowDeltaBetweenTwoPipelineBuilds_yieldsTheSecondByteForByte() throws {
        let (base, next) = try twoReleases()
        let rows = try write(.rowDelta, base: base, next: next, to: directory + "/rows.stol")
        XCTAssertEqual(rows.header.kind, .rowDelta)
        XCTAssertEqual(rows.header.baseSHA256, SHA256.hash(try bytes(base)))
        let out = directory + "/out.sqlite"
        let verified = try StolFile.verify(path: directory + "/rows.stol", trust: .trusting(key.publicKey),
                                           options: .init(supportedSchemaVersions: 1...3), basePath: base, extractTo: out)
        XCTAssertEqual(try bytes(out), try bytes(next), "the base's rows changed and laid out again are the new build byte for byte")
        XCTAssertEqual(verified.sqliteSHA256, SHA256.hash(try bytes(next)))
    }

    func testARowDeltaWhoseRowsDoNotFitItsBase_isACorruptPayload_andYieldsNothing() throws {
        let (base, next) = try twoReleases()
        // Rows taken against another build of the base release (one taxon missing), framed and
        // signed for the base: that taxon is inserted, and the base already has it.
        let other = directory + "/other.sqlite"
        try FileManager.default.copyItem(atPath: base, toPath: other)
        let queue = try DatabaseQueue(path: other)
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA foreign_keys = OFF; DELETE FROM taxa WHERE id = 9689") }
        try queue.close()
        let file = try StolCorpus.signRowDelta(base: try bytes(base), to: try bytes(next), key: key, rowsBase: try bytes(other))
        try Data(file).write(to: URL(fileURLWithPath: directory + "/bad.stol"))
        XCTAssertThrowsError(try StolFile.verify(path: directory + "/bad.stol", trust: .trusting(key.publicKey),
                                                 options: .init(supportedSchemaVersions: 1...3), basePath: base,
                                                 extractTo: directory + "/never.sqlite")) { error in
            guard case .corruptPayload(let reason) = error as? StolFormatError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("does not apply to its base: an inserted row is already in the base"), reason)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/never.sqlite"))
    }

    func testNoRowDelta_whenTheSchemasDiffer_orATableHasNoPrimaryKey() throws {
        let (base, next) = try twoReleases()
        let altered = directory + "/altered.sqlite"
        try FileManager.default.copyItem(atPath: next, toPath: altered)
        let queue = try DatabaseQueue(path: altered)
        try queue.write { try $0.execute(sql: "CREATE TABLE notes (body TEXT)") }
        XCTAssertThrowsError(try RowDelta.patchset(base: base, target: altered)) { error in
            guard case .outputFailed(let reason) = error as? StolFormatError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("schemas differ") && reason.contains("notes"), reason)
        }
        let baseCopy = directory + "/base-notes.sqlite"
        try FileManager.default.copyItem(atPath: base, toPath: baseCopy)
        let baseQueue = try DatabaseQueue(path: baseCopy)
        try baseQueue.write { try $0.execute(sql: "CREATE TABLE notes (body TEXT)") }
        try queue.close(); try baseQueue.close()
        XCTAssertThrowsError(try RowDelta.patchset(base: baseCopy, target: altered)) { error in
            guard case .outputFailed(let reason) = error as? StolFormatError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("table notes has no primary key"), reason)
        }
    }

    private func bytes(_ path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }
}
