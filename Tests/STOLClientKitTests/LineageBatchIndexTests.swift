import Foundation
import STOLClientKit
import STOLModel
import STOLProtocol
import STOLTestFixtures
import SwiftProtobuf
import XCTest

/// `stol-client lineage` reads compact and ids-form batch answers in place
/// (``LineageBatchIndex``) and writes its TSV and JSON lines from the answer's bytes:
/// every line is the one the same writers give for the result swift-protobuf decodes,
/// whatever the answer holds (errors, the taxa form, merged ids, awkward names,
/// fields out of order, repeated or unknown), and bytes swift-protobuf refuses are
/// refused.
final class LineageBatchIndexTests: XCTestCase {
    private static let names = [
        "", "root", "cellular organisms", "Panthera leo", "\"quoted\"", "back\\slash", "tab\tin", "new\nline",
        "nul\u{0}", "c1\u{85}", "Bürger's café", "中华鲟", "🦁", "x;y", "a long name of more than sixteen bytes",
    ]
    private static let ranks = ["no rank", "clade", "superkingdom", "kingdom", "phylum", "division", "class", "order",
                                "family", "genus", "species", "subspecies", "strain", "species subgroup",
                                "a rank of more than sixteen bytes", "", "realm", "domain",
                                "acellular root"]

    /// Each result's lines, written from the bytes and from swift-protobuf's decoding.
    private func assertSameLines(_ batch: [UInt8], _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let decoded = try Stol_V1_LineageBatchResponse(serializedBytes: batch)
        var index = LineageBatchIndex()
        try batch.withUnsafeBufferPointer { bytes in
            try index.read(bytes, 0..<bytes.count)
            XCTAssertEqual(index.results.count, decoded.results.count, what, file: file, line: line)
            var fromBytes = WholeTreeLineageJSON(mainRank: LineageTSV.mainRank)
            var fromMessage = WholeTreeLineageJSON(mainRank: LineageTSV.mainRank)
            for (result, message) in zip(index.results, decoded.results) {
                var raw: [UInt8] = [], reference: [UInt8] = []
                try fromBytes.append(result, of: index, in: bytes, to: &raw)
                fromMessage.append(message, to: &reference)
                XCTAssertEqual(String(decoding: raw, as: UTF8.self), String(decoding: reference, as: UTF8.self),
                               "\(what): JSON", file: file, line: line)
                // With a template the server's `formatted` text is the last column.
                for tsv in [LineageTSV(ids: false), LineageTSV(ids: true), LineageTSV(ids: false, unclassified: ";;"),
                            LineageTSV(ids: false, unclassified: ";;", keepLineage: true)] {
                    raw = []
                    try tsv.append(result, of: index, in: bytes, to: &raw)
                    XCTAssertEqual(String(decoding: raw, as: UTF8.self), tsv.line(message),
                                   "\(what): TSV ids \(tsv.ids) template \(tsv.hasTemplate) keep \(tsv.keepLineage)",
                                   file: file, line: line)
                }
                if result.plain {
                    var taxon = message.taxon
                    taxon.unknownFields = UnknownStorage()
                    XCTAssertEqual(result.taxon ?? Stol_V1_Taxon(), message.hasTaxon ? taxon : Stol_V1_Taxon(), what,
                                   file: file, line: line)
                    XCTAssertEqual(Array(index.ids[result.ids]), message.lineageIds, what, file: file, line: line)
                    XCTAssertEqual(result.mergedFrom, message.mergedFrom, what, file: file, line: line)
                }
            }
        }
    }

    // Wire bytes, written by hand for what swift-protobuf never writes (order, repetition, unknown fields).
    private static func varint(_ value: UInt64) -> [UInt8] {
        var value = value, bytes: [UInt8] = []
        while value >= 0x80 { bytes.append(UInt8(value & 0x7F) | 0x80); value >>= 7 }
        return bytes + [UInt8(value)]
    }
    private static func field(_ number: Int, _ bytes: [UInt8]) -> [UInt8] {
        varint(UInt64(number) << 3 | 2) + varint(UInt64(bytes.count)) + bytes
    }
    private static func field(_ number: Int, varint value: UInt64) -> [UInt8] { varint(UInt64(number) << 3) + varint(value) }
    private static func bytes(_ message: some SwiftProtobuf.Message) -> [UInt8] { try! message.serializedBytes() }

    func testRandomBatches_ofEveryForm_writeTheLinesOfTheDecodedResults() throws {
        var random = SplitMix64(for: self)
        func pick<T>(_ values: [T]) -> T { values.randomElement(using: &random)! }
        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
        for round in 0..<300 {
            let batch = Stol_V1_LineageBatchResponse.with {
                $0.results = (0..<Int.random(in: 0...40, using: &random)).map { position in
                    let depth = Int.random(in: 0...35, using: &random)
                    let form = Int.random(in: 0...3, using: &random)  // compact, ids, taxa, error
                    return Stol_V1_LineageResult.with {
                        if chance(0.95) { $0.query = chance(0.8) ? String(position) : pick(Self.names) }
                        if form == 3 {
                            $0.error = .with { $0.code = .notFound; $0.message = pick(Self.names) }
                            return
                        }
                        $0.taxon = .with {
                            $0.id = Int64.random(in: 1...3_000_000, using: &random)
                            if chance(0.9) { $0.parentID = Int64.random(in: 1...3_000_000, using: &random) }
                            $0.rank = Stol_V1_Rank(rawValue: Int.random(in: 0...8, using: &random)) ?? .unspecified
                            $0.scientificName = pick(Self.names)
                            $0.status = .accepted
                            if chance(0.5) { $0.sourceRank = pick(Self.ranks) }
                            if chance(0.1) { $0.commonName = pick(Self.names); $0.author = pick(Self.names); $0.year = 1758 }
                            if chance(0.05) { $0.childCount = 3; $0.conservation = "VU" }
                        }
                        let ids = (0..<depth).map { _ in Int64.random(in: 1...3_000_000, using: &random) }
                        switch form {
                        case 0:
                            $0.lineageIds = ids
                            $0.lineageRanks = ids.map { _ in pick(Self.ranks) }
                            $0.lineageNames = ids.map { _ in pick(Self.names) }
                        case 1: $0.lineageIds = ids
                        default: $0.lineage = ids.map { id in .with { $0.id = id; $0.scientificName = pick(Self.names) } }
                        }
                        if chance(0.1) { $0.mergedFrom = Int64.random(in: 1...9_000_000, using: &random) }
                        if chance(0.7) { $0.formatted = pick(Self.names) }
                    }
                }
            }
            try assertSameLines(Self.bytes(batch), "random batch \(round)")
        }
    }

    func testFieldsOutOfOrder_repeated_unpackedOrUnknown_areReadAsSwiftProtobufReadsThem() throws {
        let taxon = Self.bytes(Stol_V1_Taxon.with { $0.id = 9606; $0.scientificName = "Homo sapiens"; $0.sourceRank = "species" })
        let cases: [(String, [UInt8])] = [
            ("names, ranks, ids and query in reverse order", Self.field(7, Array("root".utf8)) + Self.field(7, Array("Homo".utf8))
                + Self.field(6, Array("no rank".utf8)) + Self.field(6, Array("genus".utf8))
                + Self.field(5, Self.varint(1) + Self.varint(9605)) + Self.field(2, taxon) + Self.field(1, Array("9606".utf8))),
            ("unpacked ids, split packed ids", Self.field(5, varint: 1) + Self.field(5, Self.varint(131567))
                + Self.field(5, varint: 9605) + Self.field(2, taxon)),
            ("unknown fields of every wire type", Self.field(2, taxon + Self.field(99, varint: 7) + Self.field(98, [1, 2]))
                + Self.field(42, varint: 5) + [0x59] + Array(repeating: 0, count: 8) + [0x65, 0, 0, 0, 0]
                + Self.field(1, Array("q".utf8))),
            ("the taxon given twice: swift-protobuf merges", Self.field(2, taxon) + Self.field(2, Self.bytes(Stol_V1_Taxon.with {
                $0.commonName = "human" }))),
            ("the query given twice: the last counts", Self.field(1, Array("a".utf8)) + Self.field(1, Array("b".utf8)) + Self.field(2, taxon)),
            ("negative ids as ten-byte varints", Self.field(5, Self.varint(UInt64(bitPattern: -5))) + Self.field(2, Self.bytes(
                Stol_V1_Taxon.with { $0.id = -1; $0.parentID = -2; $0.year = -3 }))),
            ("an error and a lineage", Self.field(4, Self.bytes(Stol_V1_Error.with { $0.code = .invalidRequest; $0.details = ["taxon_ids": "1,2"] }))
                + Self.field(3, taxon)),
            ("an empty result", []),
        ]
        for (what, result) in cases {
            try assertSameLines(Self.field(1, result) + Self.field(1, result) + Self.field(77, varint: 1), what)
        }
    }

    func testBytesSwiftProtobufRefuses_areRefused_andWhatTheReaderDoesNotTakeOn_isLeftToSwiftProtobuf() throws {
        let taxon = Self.bytes(Stol_V1_Taxon.with { $0.id = 1 })
        let refused: [(String, [UInt8])] = [
            ("a name that is not UTF-8", Self.field(1, Self.field(7, [0x41, 0xFF, 0x42]) + Self.field(2, taxon))),
            ("a query that is not UTF-8", Self.field(1, Self.field(1, [0xC3]))),
            ("a taxon name that is not UTF-8", Self.field(1, Self.field(2, Self.field(4, [0xED, 0xA0, 0x80])))),
            ("a length past the end", Self.field(1, Self.field(2, taxon)).dropLast()),
            ("a varint past the end", [0x08, 0xFF]),
        ]
        for (what, batch) in refused {
            XCTAssertThrowsError(try Stol_V1_LineageBatchResponse(serializedBytes: Array(batch)), "swift-protobuf: \(what)")
            var index = LineageBatchIndex()
            XCTAssertThrowsError(try Array(batch).withUnsafeBufferPointer { try index.read($0, 0..<$0.count) }, what)
        }
        // swift-protobuf keeps these as unknown fields; the reader declines them (stol-client then
        // decodes the answer with swift-protobuf, as it did before).
        let declined: [(String, [UInt8])] = [
            ("a group", [0x0B, 0x0C]),
            ("a known field of another wire type", Self.field(1, Self.field(5, varint: 1) + Self.field(8, [1]))),
        ]
        for (what, batch) in declined {
            XCTAssertNoThrow(try Stol_V1_LineageBatchResponse(serializedBytes: batch), "swift-protobuf: \(what)")
            var index = LineageBatchIndex()
            XCTAssertThrowsError(try batch.withUnsafeBufferPointer { try index.read($0, 0..<$0.count) }, what)
        }
    }

    func testSplit_leavesTheEnvelopeWithoutTheResult_andFindsTheResult() throws {
        let batch = Stol_V1_LineageBatchResponse.with {
            $0.results = [.with { $0.query = "9606"; $0.taxon = .with { $0.id = 9606 }; $0.lineageIds = [1, 9605] }]
        }
        let envelope = Stol_V1_TaxonomyResponse.with {
            $0.id = 7
            $0.database = .with { $0.kind = .reference; $0.fingerprint = "f"; $0.schemaVersion = 3 }
            $0.merged = [.with { $0.oldID = 12; $0.newID = 74109 }]
            $0.lineageBatch = batch
        }
        let bytes = Self.bytes(envelope)
        let (rest, value) = try bytes.withUnsafeBufferPointer { try ProtobufWire.split($0, field: 24) }
        var expected = envelope
        expected.result = nil
        XCTAssertEqual(try Stol_V1_TaxonomyResponse(serializedBytes: rest), expected)
        XCTAssertEqual(try Stol_V1_LineageBatchResponse(serializedBytes: Array(bytes[try XCTUnwrap(value)])), batch)
        // No such field: nothing taken; twice: refused (swift-protobuf would merge the two).
        XCTAssertNil(try bytes.withUnsafeBufferPointer { try ProtobufWire.split($0, field: 25) }.value)
        let twice = bytes + Self.field(24, Self.bytes(batch))
        XCTAssertThrowsError(try twice.withUnsafeBufferPointer { try ProtobufWire.split($0, field: 24) })
    }
}
