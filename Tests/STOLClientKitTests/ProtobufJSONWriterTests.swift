import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol
import STOLTestFixtures
import SwiftProtobuf
import XCTest

/// The JSON lines of `lineage --jsonl` and `compare --batch --jsonl`, written by
/// ``ProtobufJSONWriter`` straight into bytes, are the bytes swift-protobuf's JSON
/// encoder gives for the same message, escaping included, and parse as the same JSON
/// as what the client printed before (``TextFormatter/json(_:)-(Message)``); and the
/// whole tree's compact lineages are written as the JSON of their taxa form.
///
/// One difference in bytes only: an error's `details` map, which swift-protobuf writes
/// in the order of Swift's (per-process seeded) hashing unless asked for
/// `useDeterministicOrdering`, is written with its keys sorted, as that option does.
final class ProtobufJSONWriterTests: XCTestCase {
    // MARK: Helpers

    private func fast(_ result: Stol_V1_LineageResult) -> String {
        var out: [UInt8] = []
        ProtobufJSONWriter.append(result, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private func fast(_ result: Stol_V1_CompareBatchResult) -> String {
        var out: [UInt8] = []
        ProtobufJSONWriter.append(result, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The encoder's bytes with map keys in order: TextFormatter's options plus `useDeterministicOrdering`.
    private static func deterministic(_ message: some SwiftProtobuf.Message) -> String {
        var options = JSONEncodingOptions()
        options.preserveProtoFieldNames = true
        options.alwaysPrintInt64sAsNumbers = true
        options.useDeterministicOrdering = true
        return (try? message.jsonString(options: options)) ?? "not encodable"
    }

    /// The same bytes as the encoder (map keys in order), and the same value for a JSON
    /// parser as what the client printed before (TextFormatter.json).
    private func assertSameJSON(_ fast: String, _ message: some SwiftProtobuf.Message, _ what: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(fast, Self.deterministic(message), what, file: file, line: line)
        let before = TextFormatter.json(message)
        let parsedFast = try? JSONSerialization.jsonObject(with: Data(fast.utf8)) as? NSDictionary
        let parsedBefore = try? JSONSerialization.jsonObject(with: Data(before.utf8)) as? NSDictionary
        XCTAssertNotNil(parsedFast, "\(what): not JSON: \(fast)", file: file, line: line)
        XCTAssertEqual(parsedFast, parsedBefore, what, file: file, line: line)
    }

    private static func taxon(_ id: Int64, _ name: String, parent: Int64? = nil, rank: Stol_V1_Rank = .unspecified,
                              sourceRank: String = "") -> Stol_V1_Taxon {
        .with {
            $0.id = id
            if let parent { $0.parentID = parent }
            $0.rank = rank
            $0.scientificName = name
            $0.status = .accepted
            $0.sourceRank = sourceRank
        }
    }

    /// Names a source may hold: quotes, backslashes, every kind of control, non-ASCII.
    private static let awkwardNames = [
        "", "Panthera leo", "\"quoted\" name", "back\\slash", "\\\"", "tab\there", "new\nline", "cr\rlf\n",
        "bell\u{07}", "nul\u{00}byte", "esc\u{1B}[0m", "unit\u{1F}sep", "del\u{7F}", "c1\u{80}\u{85}\u{9F}", "nbsp\u{A0}",
        "\u{08}\u{0C}", "Bürger's café", "Ærø", "中华鲟", "𓂀 hieroglyph", "emoji 🦁🐅", "line\u{2028}para\u{2029}",
        "bom\u{FEFF}", "\u{FFFF}", "e\u{301}", "/slash/", "<script>", "a'b", "x\u{0B}y",
    ]

    // MARK: Lineage results

    func testLineageResults_ofEveryForm_areTheProtobufEncodersBytes() {
        let lion = Stol_V1_Taxon.with {
            $0.id = 9689
            $0.parentID = 9688
            $0.rank = .species
            $0.scientificName = "Panthera leo"
            $0.author = "(Linnaeus, 1758)"
            $0.year = 1758
            $0.status = .accepted
            $0.conservation = "VU"
            $0.commonName = "lion"
            $0.childCount = 12
            $0.sourceRank = "species"
        }
        let cases: [(String, Stol_V1_LineageResult)] = [
            ("empty", Stol_V1_LineageResult()),
            ("taxa form", .with {
                $0.query = "9689"
                $0.taxon = lion
                $0.lineage = [Self.taxon(2759, "Eukaryota", rank: .domain), Self.taxon(9688, "Panthera", parent: 2759, rank: .genus)]
            }),
            ("a root: no lineage, parent 0 set", .with {
                $0.query = "1"
                $0.taxon = .with { $0.id = 1; $0.parentID = 0; $0.scientificName = "root"; $0.sourceRank = "no rank" }
            }),
            ("an empty taxon", .with { $0.query = "x"; $0.taxon = Stol_V1_Taxon() }),
            ("a year 0 and negative ids", .with {
                $0.taxon = .with { $0.id = -5; $0.year = 0; $0.status = .doubtful }
                $0.lineageIds = [Int64.min, -1, 0, Int64.max]
            }),
            ("compact form", .with {
                $0.query = "Panthera leo"
                $0.taxon = lion
                $0.lineageIds = [1, 131567, 2759]
                $0.lineageRanks = ["no rank", "no rank", "superkingdom"]
                $0.lineageNames = ["root", "cellular organisms", "Eukaryota"]
                $0.mergedFrom = 12
            }),
            ("not found", .with {
                $0.query = "no such taxon"
                $0.error = .with { $0.code = .notFound; $0.message = "no taxon named \"no such taxon\"" }
            }),
            ("ambiguous, with details in key order", .with {
                $0.query = "Cephalosphaera"
                $0.error = .with {
                    $0.code = .invalidRequest
                    $0.message = "several taxa"
                    $0.details = ["ids": "224850,1692503", "candidates": "2", "Zeta": "z", "ä": "\u{1}"]
                }
            }),
            ("deleted", .with { $0.query = "4"; $0.error = .with { $0.code = .taxonDeleted } }),
            ("an enum value this build does not know", .with {
                $0.taxon = .with { $0.id = 3; $0.rank = .UNRECOGNIZED(42); $0.status = .UNRECOGNIZED(7) }
                $0.error = .with { $0.code = .UNRECOGNIZED(99) }
            }),
        ]
        for (what, result) in cases {
            assertSameJSON(fast(result), result, what)
        }
    }

    func testNames_withQuotesBackslashesControlsAndNonASCII_areEscapedAsSwiftProtobufEscapesThem() {
        var names = Self.awkwardNames
        // Every scalar up to U+02FF alone and between letters, and the edges of UTF-8's lengths.
        let scalars = (0...0x2FF).compactMap(Unicode.Scalar.init) + [0x7FF, 0x800, 0xFFFD, 0x10000, 0x10FFFF].compactMap(Unicode.Scalar.init)
        for scalar in scalars {
            names.append(String(scalar))
            names.append("a\(scalar)b\(scalar)")
        }
        for name in names {
            let result = Stol_V1_LineageResult.with {
                $0.query = name
                $0.taxon = Self.taxon(9689, name, parent: 9688, rank: .species, sourceRank: name)
                $0.lineage = [Self.taxon(9688, name)]
                $0.lineageNames = [name, name]
                $0.error = .with { $0.message = name; $0.details = [name: name] }
            }
            let written = fast(result)
            assertSameJSON(written, result, "name \(name.unicodeScalars.map { String($0.value, radix: 16) })")
            // And the parser gives the name back, whatever it holds.
            let parsed = try? JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: Any]
            XCTAssertEqual((parsed?["taxon"] as? [String: Any])?["scientific_name"] as? String ?? "", name)
        }
        // The escapes themselves, spelt out.
        var out: [UInt8] = []
        ProtobufJSONWriter.appendString("q\"b\\t\tn\nr\rb\u{08}f\u{0C}0\u{00}1f\u{1F}7f\u{7F}80\u{80}9f\u{9F}a0\u{A0}é中🦁", to: &out)
        XCTAssertEqual(String(decoding: out, as: UTF8.self),
                       #""q\"b\\t\tn\nr\rb\bf\f0\u00001f\u001F7f\u007F80\u00809f\u009Fa0"# + "\u{A0}é中🦁\"")
    }

    func testRandomLineageResults_areTheProtobufEncodersBytes() {
        var random = SplitMix64(for: self)
        func name() -> String {
            let pieces = Self.awkwardNames
            return (0..<Int.random(in: 0...3, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
        }
        func maybe(_ chance: Double = 0.5) -> Bool { Double.random(in: 0..<1, using: &random) < chance }
        func randomTaxon() -> Stol_V1_Taxon {
            .with {
                if maybe(0.9) { $0.id = Int64.random(in: -3...3_000_000, using: &random) }
                if maybe() { $0.parentID = Int64.random(in: 0...3_000_000, using: &random) }
                if maybe() { $0.rank = Stol_V1_Rank(rawValue: Int.random(in: 0...10, using: &random)) ?? .unspecified }
                $0.scientificName = name()
                if maybe(0.2) { $0.author = name() }
                if maybe(0.2) { $0.year = Int32.random(in: -10...2100, using: &random) }
                if maybe() { $0.status = Stol_V1_TaxonStatus(rawValue: Int.random(in: 0...4, using: &random)) ?? .unspecified }
                if maybe(0.2) { $0.conservation = name() }
                if maybe(0.3) { $0.commonName = name() }
                if maybe(0.2) { $0.childCount = UInt32.random(in: 0...UInt32.max, using: &random) }
                if maybe() { $0.sourceRank = name() }
            }
        }
        for round in 0..<500 {
            let result = Stol_V1_LineageResult.with {
                if maybe(0.9) { $0.query = name() }
                if maybe(0.8) { $0.taxon = randomTaxon() }
                $0.lineage = (0..<Int.random(in: 0...(maybe() ? 0 : 30), using: &random)).map { _ in randomTaxon() }
                if maybe(0.2) {
                    $0.error = .with {
                        $0.code = Stol_V1_ErrorCode(rawValue: Int.random(in: 0...25, using: &random)) ?? .unspecified
                        $0.message = name()
                        if maybe(0.3) { $0.details = Dictionary([(name(), name()), (name(), name()), (name(), name())]) { a, _ in a } }
                    }
                }
                let count = maybe() ? 0 : Int.random(in: 1...30, using: &random)
                $0.lineageIds = (0..<count).map { _ in Int64.random(in: Int64.min...Int64.max, using: &random) }
                if maybe() { $0.lineageRanks = (0..<count).map { _ in name() } }
                if maybe() { $0.lineageNames = (0..<count).map { _ in name() } }
                if maybe(0.1) { $0.mergedFrom = Int64.random(in: -5...5_000_000, using: &random) }
            }
            assertSameJSON(fast(result), result, "random result \(round)")
        }
    }

    // MARK: The whole tree's compact lineages

    /// The main rank of a source rank, as the server gives it on the whole tree (the wire
    /// rank of `TaxonRank(sourceRank:)`), written out here rather than taken from `LineageTSV.mainRank`.
    private static func mainRank(_ sourceRank: String) -> Stol_V1_Rank {
        TaxonRank(sourceRank: sourceRank).flatMap { Stol_V1_Rank(rawValue: $0.level + 1) } ?? .unspecified
    }

    func testMainRank_isTheServersMapping() {
        for rank in ["superkingdom", "domain", "kingdom", "phylum", "division", "class", "order", "family", "genus",
                     "species", "no rank", "clade", "subspecies", "strain", "", "Species"] {
            XCTAssertEqual(LineageTSV.mainRank(rank), Self.mainRank(rank), rank)
        }
        XCTAssertEqual(LineageTSV.mainRank("superkingdom"), .domain)
        XCTAssertEqual(LineageTSV.mainRank("division"), .phylum)
        XCTAssertEqual(LineageTSV.mainRank("species"), .species)
        XCTAssertEqual(LineageTSV.mainRank("clade"), .unspecified)
    }

    /// The taxa form of a whole-tree lineage as the server builds it (`treeTaxon`: id,
    /// parent, main rank, source rank, name, accepted) from the compact one.
    private static func taxaForm(of compact: Stol_V1_LineageResult) -> Stol_V1_LineageResult {
        var taxa = compact
        taxa.lineage = compact.lineageIds.indices.map { index in
            taxon(compact.lineageIds[index], compact.lineageNames[index],
                  parent: index > 0 ? compact.lineageIds[index - 1] : nil,
                  rank: mainRank(compact.lineageRanks[index]), sourceRank: compact.lineageRanks[index])
        }
        taxa.lineageIds = []
        taxa.lineageRanks = []
        taxa.lineageNames = []
        return taxa
    }

    func testWholeTreeCompactLineages_areWrittenAsTheJSONOfTheirTaxaForm() {
        var random = SplitMix64(for: self)
        let sourceRanks = ["no rank", "clade", "superkingdom", "domain", "kingdom", "subkingdom", "phylum", "division",
                           "class", "order", "suborder", "family", "genus", "species", "subspecies", "strain",
                           "species group", "", "\"odd\\rank\"\t", "rang français"]
        var writer = WholeTreeLineageJSON(mainRank: Self.mainRank)
        for round in 0..<300 {
            let depth = Int.random(in: 0...40, using: &random)
            var compact = Stol_V1_LineageResult.with {
                $0.query = round % 7 == 0 ? Self.awkwardNames.randomElement(using: &random)! : String(round)
                $0.lineageIds = (0..<depth).map { _ in Int64.random(in: 1...3_500_000, using: &random) }
                $0.lineageRanks = (0..<depth).map { _ in sourceRanks.randomElement(using: &random)! }
                $0.lineageNames = (0..<depth).map { _ in Self.awkwardNames.randomElement(using: &random)! }
                $0.taxon = Self.taxon(Int64(round + 1), "taxon \(round)", parent: $0.lineageIds.last,
                                      rank: .species, sourceRank: "species")
                if round % 11 == 0 { $0.mergedFrom = Int64(round + 5_000_000) }
            }
            if round % 13 == 0 {  // not found: no taxon, no lineage
                compact = .with { $0.query = "q\(round)"; $0.error = .with { $0.code = .notFound; $0.message = "no taxon" } }
            }
            let taxa = Self.taxaForm(of: compact)
            var out: [UInt8] = []
            writer.append(compact, to: &out)
            assertSameJSON(String(decoding: out, as: UTF8.self), taxa, "whole-tree lineage \(round)")
            // A server answering the taxa form anyway is printed as it answered.
            out = []
            writer.append(taxa, to: &out)
            assertSameJSON(String(decoding: out, as: UTF8.self), taxa, "taxa form \(round)")
        }
    }

    // MARK: Compare batches

    func testCompareBatchResults_areTheProtobufEncodersBytes() {
        var random = SplitMix64(for: self)
        let cases: [Stol_V1_CompareBatchResult] = [
            Stol_V1_CompareBatchResult(),
            .with {
                $0.a = "9689"; $0.b = "Panthera tigris"; $0.aID = 9689; $0.bID = 9694; $0.lcaID = 9688
                $0.lcaRank = "genus"; $0.lcaName = "Panthera"; $0.distanceMain = 2; $0.distanceAll = 2
            },
            .with { $0.a = "2"; $0.b = "2157"; $0.aID = 2; $0.bID = 2157; $0.unrelated = true; $0.distanceAll = 0 },
            .with { $0.a = "1"; $0.b = "\"x\"\\"; $0.error = .with { $0.code = .notFound; $0.message = "no taxon \"x\"\\" } },
        ]
        for (index, result) in cases.enumerated() {
            assertSameJSON(fast(result), result, "case \(index)")
        }
        for round in 0..<300 {
            let result = Stol_V1_CompareBatchResult.with {
                $0.a = Self.awkwardNames.randomElement(using: &random)!
                $0.b = Self.awkwardNames.randomElement(using: &random)!
                $0.aID = Int64.random(in: -1...3_000_000, using: &random)
                $0.bID = Int64.random(in: 0...3_000_000, using: &random)
                $0.lcaID = Int64.random(in: 0...3, using: &random)
                $0.lcaRank = Self.awkwardNames.randomElement(using: &random)!
                $0.lcaName = Self.awkwardNames.randomElement(using: &random)!
                $0.distanceMain = UInt32.random(in: 0...3, using: &random)
                if Bool.random(using: &random) { $0.distanceAll = UInt32.random(in: 0...UInt32.max, using: &random) }
                $0.unrelated = Bool.random(using: &random)
                if Bool.random(using: &random) { $0.error = .with { $0.code = .notFound; $0.message = $0.message + "m" } }
            }
            assertSameJSON(fast(result), result, "random compare result \(round)")
        }
    }
}
