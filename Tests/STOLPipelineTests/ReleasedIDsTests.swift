import Foundation
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// The stable-id promise: a released id never disappears or changes meaning.
final class ReleasedIDsTests: XCTestCase {
    private func build(_ usages: [String], in directory: String, name: String) throws -> String {
        let source = directory + "/" + name
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try writeTSV(source, "NameUsage.tsv", usages)
        let output = directory + "/" + name + ".sqlite"
        _ = try TaxonomyBuilder().build(source: source, output: output)
        return output
    }

    private var baseUsages: [String] { FelidaeFixture.nameUsage }

    private func released(_ directory: String) throws -> ReleasedIDs {
        let record = directory + "/released.tsv"
        try ReleasedIDs(database: try build(baseUsages, in: directory, name: "v1")).write(to: record)
        return try ReleasedIDs(recordFile: record)
    }

    func testRecord_roundTripsThroughTheTSVFileSortedByID() throws {
        let directory = try makeTemporaryDirectory(self)
        let database = try build(baseUsages, in: directory, name: "v1")
        let fromDatabase = try ReleasedIDs(database: database)
        try fromDatabase.write(to: directory + "/record.tsv")
        XCTAssertEqual(try ReleasedIDs(recordFile: directory + "/record.tsv"), fromDatabase)
        let lines = try String(contentsOfFile: directory + "/record.tsv", encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.first, "id\trank\tscientific_name")
        let ids = lines.dropFirst().compactMap { Int64($0.split(separator: "\t")[0]) }
        XCTAssertEqual(ids, ids.sorted())
        XCTAssertTrue(lines.contains("9689\tspecies\tPanthera leo"))
    }

    func testCheck_whenBuildOnlyAddsTaxa_passes() throws {
        let directory = try makeTemporaryDirectory(self)
        let record = try released(directory)
        let grown = try build(baseUsages + [row("9696", "9681", "accepted", "species", "Puma concolor", "")],
                              in: directory, name: "v2")
        XCTAssertEqual(record.violations(in: try ReleasedIDs(database: grown)), [])
    }

    func testCheck_whenAReleasedIDDisappears_failsNamingIt() throws {
        let directory = try makeTemporaryDirectory(self)
        let record = try released(directory)
        let shrunk = try build(baseUsages.filter { !$0.hasPrefix("9694\t") }, in: directory, name: "v2")
        let violations = record.violations(in: try ReleasedIDs(database: shrunk))
        XCTAssertEqual(violations.count, 1)
        guard case .disappeared(9694, let entry) = violations.first else { return XCTFail("\(violations)") }
        XCTAssertEqual(entry.scientificName, "Panthera tigris")
    }

    func testCheck_whenAReleasedIDChangesNameOrRank_fails() throws {
        let directory = try makeTemporaryDirectory(self)
        let record = try released(directory)
        let changed = baseUsages.map { line -> String in
            if line.hasPrefix("9689\t") { return line.replacingOccurrences(of: "Panthera leo", with: "Felis leo") }
            if line.hasPrefix("9681\t") { return line.replacingOccurrences(of: "\tfamily\t", with: "\torder\t") }
            return line
        }
        let violations = record.violations(in: try ReleasedIDs(database: try build(changed, in: directory, name: "v2")))
        XCTAssertTrue(violations.contains(.renamed(9689, from: "Panthera leo", to: "Felis leo")), "\(violations)")
        XCTAssertTrue(violations.contains { if case .reranked(9681, "family", _) = $0 { true } else { false } }, "\(violations)")
    }

    func testRecordFile_withABadLine_isATypedErrorNamingTheLine() throws {
        let directory = try makeTemporaryDirectory(self)
        try writeTSV(directory, "bad.tsv", ["id\trank\tscientific_name", "9689\tspecies\tPanthera leo", "x9\tgenus\tPanthera"])
        XCTAssertThrowsError(try ReleasedIDs(recordFile: directory + "/bad.tsv")) { error in
            XCTAssertEqual(error as? SourceError, .badValue(file: directory + "/bad.tsv", line: 3, column: "id", value: "x9"))
        }
    }

    /// A record edited on Windows, or by a spreadsheet, must keep every promise it holds.
    func testRecordFile_withCRLFBlankLinesAndAByteOrderMark_readsTheSameAsAPlainOne() throws {
        let directory = try makeTemporaryDirectory(self)
        let lines = ["id\trank\tscientific_name", "9689\tspecies\tPanthera leo", "", "9688\tgenus\tPanthera", ""]
        try writeTSV(directory, "plain.tsv", lines)
        try Data([0xEF, 0xBB, 0xBF] + Array((lines.joined(separator: "\r\n") + "\r\n").utf8))
            .write(to: URL(fileURLWithPath: directory + "/windows.tsv"))
        let plain = try ReleasedIDs(recordFile: directory + "/plain.tsv")
        XCTAssertEqual(plain.entries[9689]?.scientificName, "Panthera leo")
        XCTAssertEqual(plain.entries[9689]?.rank, "species")
        XCTAssertEqual(plain.entries[9688]?.scientificName, "Panthera")
        XCTAssertEqual(plain.entries.count, 2)
        XCTAssertEqual(try ReleasedIDs(recordFile: directory + "/windows.tsv"), plain)
    }

    func testRecordFile_whenEmpty_isATypedError() throws {
        let directory = try makeTemporaryDirectory(self)
        try Data().write(to: URL(fileURLWithPath: directory + "/empty.tsv"))
        XCTAssertThrowsError(try ReleasedIDs(recordFile: directory + "/empty.tsv")) { error in
            XCTAssertEqual(error as? SourceError, .unreadable(file: directory + "/empty.tsv", detail: "empty file"))
        }
    }
}

/// The committed data keeps the committed promises: CI fails on a curated-data
/// change that drops or redefines a released id.
final class CommittedReleasedIDsTests: XCTestCase {
    func testCommittedCuratedSource_keepsEveryReleasedID() throws {
        let directory = try makeTemporaryDirectory(self)
        let database = directory + "/curated.sqlite"
        _ = try TaxonomyBuilder().build(source: curatedSourceDirectory, output: database)
        let build = try ReleasedIDs(database: database)
        let recordsDirectory = URL(fileURLWithPath: curatedSourceDirectory).deletingLastPathComponent()
            .appendingPathComponent("released-ids").path
        let records = try FileManager.default.contentsOfDirectory(atPath: recordsDirectory).filter { $0.hasSuffix(".tsv") }
        XCTAssertFalse(records.isEmpty, "no records in \(recordsDirectory)")
        for record in records {
            let released = try ReleasedIDs(recordFile: recordsDirectory + "/" + record)
            XCTAssertGreaterThan(released.entries.count, 0)
            XCTAssertEqual(released.violations(in: build), [], record)
        }
    }
}
