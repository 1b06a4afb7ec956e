import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol
import STOLTestFixtures
import SwiftProtobuf
import XCTest

/// `stol-client lineage` prints one line per input line (issue 24): what each input
/// line is (``LineageInputLine``; their places among the answers are ``BatchQueue``'s,
/// `BatchQueueTests`), the lines answered without the server, the TSV's extra lines
/// and columns (``LineageTSV``), the server's filled template placed in them. How a
/// template is filled is the server's (`LineageFormatTests` in STOLModelTests,
/// `LineageTemplateTests` in STOLTaxonomyTests).
final class LineageOutputTests: XCTestCase {
    // MARK: Input lines

    func testEachInputLine_isAQuery_aBlank_aComment_orUnclassified() {
        typealias Line = LineageInputLine
        XCTAssertEqual(Line("9606"), .query("9606"))
        XCTAssertEqual(Line(" \tPanthera leo\t "), .query("Panthera leo"), "blanks around a query are trimmed")
        XCTAssertEqual(Line(""), .local(.blank))
        XCTAssertEqual(Line(" \t "), .local(.blank))
        XCTAssertEqual(Line("# sample 1"), .local(.comment("# sample 1")))
        XCTAssertEqual(Line("  # indented"), .local(.comment("  # indented")), "a comment is copied as it was read")
        XCTAssertEqual(Line("0"), .local(.unclassified("0")))
        XCTAssertEqual(Line(" 0\t"), .local(.unclassified("0")))
        XCTAssertEqual(Line("00"), .query("00"), "only Kraken's 0 is unclassified")
        XCTAssertEqual(Line("10"), .query("10"))
    }

    // MARK: TSV

    func testColumnNames_nameTheLineageOrTheFormatOrBoth() throws {
        XCTAssertEqual(LineageTSV(ids: false).columnNames, "query\tid\trank\tname\tlineage")
        XCTAssertEqual(LineageTSV(ids: true).columnNames, "query\tid\trank\tname\tlineage")
        XCTAssertEqual(LineageTSV(ids: false, unclassified: ";").columnNames, "query\tid\trank\tname\tformat")
        XCTAssertEqual(LineageTSV(ids: false, unclassified: ";", keepLineage: true).columnNames,
                       "query\tid\trank\tname\tlineage\tformat")
        XCTAssertEqual(LineageTSV(ids: false, keepLineage: true).columnNames, "query\tid\trank\tname\tlineage",
                       "without a template there is nothing to keep the lineage beside")
    }

    func testUnclassified_isIdZeroWithAnEmptyLineage_andTheServersUnclassifiedText() throws {
        XCTAssertEqual(LineageTSV(ids: false).unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\t")
        XCTAssertEqual(LineageTSV(ids: true).unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\t")
        XCTAssertEqual(LineageTSV(ids: false, unclassified: ";;").unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\t;;")
        XCTAssertEqual(LineageTSV(ids: false, unclassified: ";;", keepLineage: true).unclassifiedLine(query: "0"),
                       "0\t0\tno rank\tunclassified\t\t;;", "the empty lineage, then the template filled from nothing")
        XCTAssertEqual(LineageTSV(ids: false, unclassified: "NA;NA").unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\tNA;NA")
    }

    func testOnePass_isTheLineageLine_thenTheServersFormattedText() throws {
        let text = "d__Eukaryota;p__Chordata;c__Mammalia;o__Carnivora;f__Felidae;g__Panthera;s__Panthera leo"
        let results: [Stol_V1_LineageResult] = [
            .with {
                $0.query = "9689"
                $0.taxon = .with { $0.id = 9689; $0.scientificName = "Panthera leo"; $0.rank = .species }
                $0.lineageIds = [2759, 33208, 7711, 40674, 33554, 9681, 9688]
                $0.lineageRanks = ["domain", "kingdom", "phylum", "class", "order", "family", "genus"]
                $0.lineageNames = ["Eukaryota", "Metazoa", "Chordata", "Mammalia", "Carnivora", "Felidae", "Panthera"]
                $0.formatted = text
            },
            .with { $0.query = "x"; $0.error = .with { $0.code = .notFound; $0.message = "no taxon x" } },
        ]
        let plain = LineageTSV(ids: false), formatted = LineageTSV(ids: false, unclassified: ";;;;;;")
        let both = LineageTSV(ids: false, unclassified: ";;;;;;", keepLineage: true)
        XCTAssertEqual(formatted.line(results[0]), "9689\t9689\tspecies\tPanthera leo\t" + text)
        XCTAssertEqual(both.line(results[0]), plain.line(results[0]) + "\t" + text)
        XCTAssertEqual(both.line(results[1]), "x\tNOT_FOUND\tno taxon x", "an error line stays query, code, message")
    }

    func testPassThroughJSON_isOneObjectPerLine() throws {
        func json(_ slot: LineageInputLine.Local) throws -> [String: Any] {
            var out: [UInt8] = []
            LineageInputLine.appendJSON(slot, to: &out)
            return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(out)) as? [String: Any])
        }
        let blank = try json(.blank)
        XCTAssertEqual(blank["query"] as? String, "")
        XCTAssertEqual(blank["skipped"] as? String, "blank")
        let comment = try json(.comment("# \"quoted\"\tand tab"))
        XCTAssertEqual(comment["query"] as? String, "# \"quoted\"\tand tab")
        XCTAssertEqual(comment["skipped"] as? String, "comment")
        let zero = try json(.unclassified("0"))
        XCTAssertEqual(zero["query"] as? String, "0")
        XCTAssertNil(zero["skipped"])
        let taxon = try XCTUnwrap(zero["taxon"] as? [String: Any])
        XCTAssertEqual(taxon["id"] as? Int, 0)
        XCTAssertEqual(taxon["scientific_name"] as? String, "unclassified")
        XCTAssertEqual(taxon["source_rank"] as? String, "no rank")
        // The unclassified line is a LineageResult as protobuf's JSON reads it.
        var out: [UInt8] = []
        LineageInputLine.appendJSON(.unclassified("0"), to: &out)
        let result = try Stol_V1_LineageResult(jsonUTF8Bytes: out)
        XCTAssertEqual(result.taxon.scientificName, "unclassified")
        XCTAssertEqual(result.taxon.id, 0)
    }

    func testAQueryTooLargeToSend_isAnsweredInPlace_asTheServersInvalidRequest() throws {
        let refusal = BatchRefusal(line: 7, size: 70_000, limit: 65_400)
        let result = LineageInputLine.refusedResult("Influenza A virus", refusal)
        XCTAssertEqual(LineageTSV(ids: false).line(result),
                       "Influenza A virus\tINVALID_REQUEST\tline 7: too large to send: 70000 bytes, and a request carries at most "
                       + "65400 besides its envelope (65536 bytes in all)")
        var out: [UInt8] = []
        LineageInputLine.appendJSON(.refused(result), to: &out)
        let decoded = try Stol_V1_LineageResult(jsonUTF8Bytes: out)
        XCTAssertEqual(decoded.query, "Influenza A virus")
        XCTAssertEqual(decoded.error.code, .invalidRequest)
        XCTAssertTrue(decoded.error.message.hasPrefix("line 7: "), decoded.error.message)
    }
}
