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
/// and columns (``LineageTSV``); and `--format`'s fill, prefixes and rank spellings (``LineageFormat``).
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
        let format = try LineageFormat("{k};{g}")
        XCTAssertEqual(LineageTSV(ids: false, template: nil).columnNames, "query\tid\trank\tname\tlineage")
        XCTAssertEqual(LineageTSV(ids: true, template: nil).columnNames, "query\tid\trank\tname\tlineage")
        XCTAssertEqual(LineageTSV(ids: false, template: format).columnNames, "query\tid\trank\tname\tformat")
        XCTAssertEqual(LineageTSV(ids: false, template: format, keepLineage: true).columnNames,
                       "query\tid\trank\tname\tlineage\tformat")
        XCTAssertEqual(LineageTSV(ids: false, template: nil, keepLineage: true).columnNames, "query\tid\trank\tname\tlineage",
                       "without a template there is nothing to keep the lineage beside")
    }

    func testUnclassified_isIdZeroWithAnEmptyLineage_andTheTemplateFilledWithNothing() throws {
        XCTAssertEqual(LineageTSV(ids: false, template: nil).unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\t")
        XCTAssertEqual(LineageTSV(ids: true, template: nil).unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\t")
        let format = try LineageFormat("{k};{p};{g}")
        XCTAssertEqual(LineageTSV(ids: false, template: format).unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\t;;")
        XCTAssertEqual(LineageTSV(ids: false, template: format, keepLineage: true).unclassifiedLine(query: "0"),
                       "0\t0\tno rank\tunclassified\t\t;;")
        let filled = try LineageFormat("{k};{p};{g}", fillMissing: LineageFormat.defaultFill, prefixRanks: true)
        XCTAssertEqual(LineageTSV(ids: false, template: filled).unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\t;;",
                       "nothing above a missing rank: the default fill leaves it empty, and no prefix on an empty field")
        let na = try LineageFormat("{k};{p}", fillMissing: "NA")
        XCTAssertEqual(LineageTSV(ids: false, template: na).unclassifiedLine(query: "0"), "0\t0\tno rank\tunclassified\tNA;NA")
    }

    func testOnePass_isTheLineageLine_thenTheFormatColumn() throws {
        let format = try LineageFormat("{k};{p};{c};{o};{f};{g};{s}", fillMissing: LineageFormat.defaultFill, prefixRanks: true)
        let results: [Stol_V1_LineageResult] = [
            .with {
                $0.query = "9689"
                $0.taxon = .with { $0.id = 9689; $0.scientificName = "Panthera leo"; $0.rank = .species }
                $0.lineageIds = [2759, 33208, 7711, 40674, 33554, 9681, 9688]
                $0.lineageRanks = ["domain", "kingdom", "phylum", "class", "order", "family", "genus"]
                $0.lineageNames = ["Eukaryota", "Metazoa", "Chordata", "Mammalia", "Carnivora", "Felidae", "Panthera"]
            },
            .with { $0.query = "x"; $0.error = .with { $0.code = .notFound; $0.message = "no taxon x" } },
        ]
        let plain = LineageTSV(ids: false, template: nil), formatted = LineageTSV(ids: false, template: format)
        let both = LineageTSV(ids: false, template: format, keepLineage: true)
        XCTAssertEqual(both.line(results[0]), plain.line(results[0]) + "\t" + formatted.line(results[0]).split(separator: "\t").last!)
        XCTAssertEqual(both.line(results[0]).split(separator: "\t").last,
                       "d__Eukaryota;p__Chordata;c__Mammalia;o__Carnivora;f__Felidae;g__Panthera;s__Panthera leo")
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
        XCTAssertEqual(LineageTSV(ids: false, template: nil).line(result),
                       "Influenza A virus\tINVALID_REQUEST\tline 7: too large to send: 70000 bytes, and a request carries at most "
                       + "65400 besides its envelope (65536 bytes in all)")
        var out: [UInt8] = []
        LineageInputLine.appendJSON(.refused(result), to: &out)
        let decoded = try Stol_V1_LineageResult(jsonUTF8Bytes: out)
        XCTAssertEqual(decoded.query, "Influenza A virus")
        XCTAssertEqual(decoded.error.code, .invalidRequest)
        XCTAssertTrue(decoded.error.message.hasPrefix("line 7: "), decoded.error.message)
    }

    // MARK: --format: fill, prefixes, both rank spellings

    /// The lion's lineage in NCBI's spelling before 2025 (superkingdom) and since (domain).
    static func lion(_ top: String) -> [(rank: String, name: String)] {
        [("no rank", "root"), ("no rank", "cellular organisms"), (top, "Eukaryota"), ("clade", "Opisthokonta"),
         ("kingdom", "Metazoa"), ("phylum", "Chordata"), ("class", "Mammalia"), ("order", "Carnivora"),
         ("family", "Felidae"), ("subfamily", "Pantherinae"), ("genus", "Panthera"), ("species", "Panthera leo")]
    }

    func testEitherSpellingOfTheDomain_fillsEveryPlaceholderOfIt() throws {
        for template in ["{k}", "{d}", "{domain}", "{superkingdom}"] {
            let format = try LineageFormat(template + ";{K};{p}")
            for top in ["superkingdom", "domain"] {
                XCTAssertEqual(format.format(Self.lion(top)), "Eukaryota;Metazoa;Chordata", "\(template) on \(top)")
            }
        }
        XCTAssertEqual(try LineageFormat("{kingdom}|{phylum}|{class}|{order}|{family}|{genus}|{species}").format(Self.lion("domain")),
                       "Metazoa|Chordata|Mammalia|Carnivora|Felidae|Panthera|Panthera leo")
        // Viruses: the top was superkingdom Viruses before 2025, since then it is the acellular root,
        // with realms (formerly clades) under it.
        let old: [(rank: String, name: String)] = [("no rank", "root"), ("superkingdom", "Viruses"), ("clade", "Riboviria"),
                                                   ("kingdom", "Orthornavirae"), ("family", "Coronaviridae")]
        let new: [(rank: String, name: String)] = [("no rank", "root"), ("acellular root", "Viruses"), ("realm", "Riboviria"),
                                                   ("kingdom", "Orthornavirae"), ("family", "Coronaviridae")]
        let format = try LineageFormat("{k};{K};{f}")
        XCTAssertEqual(format.format(old), "Viruses;Orthornavirae;Coronaviridae")
        XCTAssertEqual(format.format(new), format.format(old))
        XCTAssertEqual(try LineageFormat("{r}|{realm}").format(new), "Riboviria|Riboviria")
        XCTAssertThrowsError(try LineageFormat("{subfamily}")) {
            XCTAssertEqual($0 as? LineageFormat.ParseError, .unknownPlaceholder("subfamily"))
        }
    }

    func testFillMissing_namesTheNearestRankAbove_asTaxonkitDoes() throws {
        let noGenus = Self.lion("domain").filter { $0.rank != "genus" && $0.rank != "order" }
        let format = try LineageFormat("{k};{p};{c};{o};{f};{g};{s}", fillMissing: LineageFormat.defaultFill)
        XCTAssertEqual(format.format(noGenus),
                       "Eukaryota;Chordata;Mammalia;unclassified Mammalia order;Felidae;unclassified Felidae genus;Panthera leo")
        // The nearest rank above among all placeholders' ranks, also those the template leaves out.
        XCTAssertEqual(try LineageFormat("{k};{g}", fillMissing: LineageFormat.defaultFill).format(noGenus),
                       "Eukaryota;unclassified Felidae genus")
        XCTAssertEqual(try LineageFormat("{g}", fillMissing: "{higher_rank}:{higher}/{rank}").format(noGenus), "family:Felidae/genus")
        // Ranks below the taxon are filled too (taxonkit without -T).
        let family = Array(Self.lion("superkingdom").prefix(9))
        XCTAssertEqual(try LineageFormat("{f};{g};{s}", fillMissing: LineageFormat.defaultFill).format(family),
                       "Felidae;unclassified Felidae genus;unclassified Felidae species")
        // Nothing above: a fill naming {higher} leaves it empty; one that does not fills it.
        let bare: [(rank: String, name: String)] = [("kingdom", "Metazoa")]
        XCTAssertEqual(try LineageFormat("{k};{K};{p}", fillMissing: LineageFormat.defaultFill).format(bare),
                       ";Metazoa;unclassified Metazoa phylum")
        XCTAssertEqual(try LineageFormat("{k};{K};{p}", fillMissing: "NA").format(bare), "NA;Metazoa;NA")
        XCTAssertThrowsError(try LineageFormat("{k}", fillMissing: "{parent}")) {
            XCTAssertEqual($0 as? LineageFormat.ParseError, .unknownFillVariable("parent"))
        }
        XCTAssertThrowsError(try LineageFormat("{k}", fillMissing: "{higher")) {
            XCTAssertEqual($0 as? LineageFormat.ParseError, .unclosedBrace)
        }
    }

    func testPrefixRanks_markEveryNonEmptyField_filledOnesToo() throws {
        let lion = Self.lion("superkingdom")
        XCTAssertEqual(try LineageFormat("{k};{K};{p};{c};{o};{f};{g};{s}", prefixRanks: true).format(lion),
                       "d__Eukaryota;k__Metazoa;p__Chordata;c__Mammalia;o__Carnivora;f__Felidae;g__Panthera;s__Panthera leo")
        XCTAssertEqual(try LineageFormat("{s};{S};{t};{r}", prefixRanks: true).format(lion), "s__Panthera leo;;;",
                       "an empty field has no prefix")
        XCTAssertEqual(try LineageFormat("{s};{S}", fillMissing: LineageFormat.defaultFill, prefixRanks: true).format(lion),
                       "s__Panthera leo;t__unclassified Panthera leo subspecies")
        XCTAssertEqual(try LineageFormat("{S}|{t}|{r}", prefixRanks: true).format(
            [("realm", "Riboviria"), ("subspecies", "a"), ("strain", "b")]), "t__a|T__b|r__Riboviria")
        XCTAssertEqual(try LineageFormat("k__{k}").format(lion), "k__Eukaryota", "MetaPhlAn's k__ for the domain: write it in the template")
    }

    /// What the whole-tree fast path hands ``LineageFormat/format(names:)``: the same as ``LineageFormat/format(_:)``.
    func testFormatByPlaceholder_isFormatByRank() throws {
        let format = try LineageFormat("{k};{K};{p};{c};{o};{f};{g};{s};{S};{t};{r}", fillMissing: LineageFormat.defaultFill,
                                       prefixRanks: true)
        var random = SplitMix64(for: self)
        let ranks = LineageFormat.rankSlots.map(\.rank) + ["no rank", "clade", "subfamily"]
        for _ in 0..<500 {
            let lineage = (0..<Int.random(in: 0...14, using: &random)).map { position in
                (rank: ranks.randomElement(using: &random)!, name: "n\(position)")
            }
            var names = [String?](repeating: nil, count: LineageFormat.all.count)
            for (rank, name) in lineage { if let slot = LineageFormat.slot(ofRank: rank) { names[slot] = name } }
            XCTAssertEqual(format.format(names: names), format.format(lineage), "\(lineage)")
        }
    }
}
