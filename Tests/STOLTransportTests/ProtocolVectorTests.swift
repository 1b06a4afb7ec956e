import Foundation
import NIOCore
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import SwiftProtobuf
import XCTest

/// The example frames in `protocol/vectors/` are what this implementation sends
/// and accepts: encoding the described message gives exactly the bytes, decoding
/// the bytes gives the message, and `vectors.json` describes the same message.
final class ProtocolVectorTests: XCTestCase {
    /// `<repo>/protocol/vectors`.
    private static let vectorsDirectory = URL(fileURLWithPath: Workspace.repositoryRoot).appendingPathComponent("protocol/vectors")

    private static let database = Stol_V1_DatabaseIdentity.with {
        $0.kind = .bundled
        $0.fingerprint = "fd01-1a2b-5000000-65f1c0de"
        $0.schemaVersion = 1
    }

    /// The message each vector file encodes, written out field by field.
    private static let expected: [String: any SwiftProtobuf.Message] = [
        "taxonomy-status-request": Stol_V1_TaxonomyRequest.with { $0.id = 1; $0.status = .init() },
        "taxonomy-get-taxon-request": Stol_V1_TaxonomyRequest.with {
            $0.id = 2
            $0.getTaxon = .with { $0.taxonID = 9689; $0.language = "en" }
        },
        "taxonomy-get-taxon-response": Stol_V1_TaxonomyResponse.with {
            $0.id = 2
            $0.database = database
            $0.taxon = .with {
                $0.id = 9689
                $0.parentID = 9688
                $0.rank = .species
                $0.scientificName = "Panthera leo"
                $0.author = "Linnaeus"
                $0.year = 1758
                $0.status = .accepted
                $0.conservation = "VU"
                $0.commonName = "lion"
            }
        },
        "taxonomy-not-found-response": Stol_V1_TaxonomyResponse.with {
            $0.id = 3
            $0.database = database
            $0.error = ProtocolError(.notFound, "no taxon with id 424242", details: ["taxon_id": "424242"]).proto
        },
        // Exactly what the server answers to a frame that does not decode.
        "taxonomy-malformed-frame-response": Stol_V1_TaxonomyResponse(
            requestID: 0, error: FramingError.undecodableMessage(Stol_V1_TaxonomyRequest.protoMessageName).protocolError),
        "favorites-toggle-request": Stol_V1_FavoritesRequest.with { $0.id = 4; $0.toggle = .with { $0.taxonID = 9689 } },
        "favorites-state-response": Stol_V1_FavoritesResponse.with {
            $0.id = 4
            $0.state = .with { $0.taxonID = 9689; $0.isFavorite = true; $0.changed = true }
        },
        "import-status-request": Stol_V1_ImportRequest.with { $0.id = 5; $0.status = .init() },
        "import-file-request": Stol_V1_ImportRequest.with { $0.id = 6; $0.importFile = .init() },
    ]

    private struct Catalogue: Decodable {
        struct Entry: Decodable {
            let file: String
            let message: String
        }
        let vectors: [Entry]
    }

    private func frameBytes(ofVector name: String) throws -> [UInt8] {
        let url = Self.vectorsDirectory.appendingPathComponent(name + ".hex")
        let text = try String(contentsOf: url, encoding: .utf8)
        let hex = text.filter { !$0.isWhitespace }
        XCTAssertEqual(hex, hex.lowercased(), "\(name): hex must be lowercase")
        XCTAssertEqual(hex.count % 2, 0, "\(name): odd number of hex digits")
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(try XCTUnwrap(UInt8(hex[index..<next], radix: 16), "\(name): not hex: \(hex[index..<next])"))
            index = next
        }
        return bytes
    }

    /// Checks one vector for message type `M`.
    private func check<M: SwiftProtobuf.Message & Equatable>(_ name: String, as type: M.Type, limit: Int) throws {
        let message = try XCTUnwrap(Self.expected[name] as? M, "\(name): no expected \(M.self)")
        let bytes = try frameBytes(ofVector: name)

        let encoded = try FrameEncoding.frame(message, maximumFrameBytes: limit)
        XCTAssertEqual(Array(encoded.readableBytesView), bytes, "\(name): encoding differs from the vector")

        var buffer = ByteBufferAllocator().buffer(bytes: bytes)
        let frame = try XCTUnwrap(try LengthPrefixedFrameDecoder.nextFrame(in: &buffer, maximumFrameBytes: limit),
                                  "\(name): not one complete frame")
        XCTAssertEqual(buffer.readableBytes, 0, "\(name): bytes after the frame")
        XCTAssertEqual(try FrameEncoding.decode(M.self, from: frame), message, "\(name): decoding differs")
    }

    func testEveryVectorEncodesAndDecodesExactly() throws {
        for name in Self.expected.keys.sorted() {
            switch Self.expected[name] {
            case is Stol_V1_TaxonomyRequest:
                try check(name, as: Stol_V1_TaxonomyRequest.self, limit: ProtocolLimits.maximumRequestFrameBytes)
            case is Stol_V1_TaxonomyResponse:
                try check(name, as: Stol_V1_TaxonomyResponse.self, limit: ProtocolLimits.maximumResponseFrameBytes)
            case is Stol_V1_FavoritesRequest:
                try check(name, as: Stol_V1_FavoritesRequest.self, limit: ProtocolLimits.maximumRequestFrameBytes)
            case is Stol_V1_FavoritesResponse:
                try check(name, as: Stol_V1_FavoritesResponse.self, limit: ProtocolLimits.maximumResponseFrameBytes)
            case is Stol_V1_ImportRequest:
                try check(name, as: Stol_V1_ImportRequest.self, limit: ProtocolLimits.maximumRequestFrameBytes)
            default:
                XCTFail("\(name): no check for this message type")
            }
        }
    }

    func testGetTaxonRequestVectorIsTheWorkedExampleOfProtocolMD() throws {
        // The bytes spelled out in PROTOCOL.md, "Worked example".
        XCTAssertEqual(try frameBytes(ofVector: "taxonomy-get-taxon-request"),
                       [0x00, 0x00, 0x00, 0x0b, 0x08, 0x02, 0x5a, 0x07, 0x08, 0xd9, 0x4b, 0x12, 0x02, 0x65, 0x6e])
    }

    /// `vectors.json` lists exactly the `.hex` files, with the right message type and
    /// (in proto3 JSON) the same field values the tests encode.
    func testCatalogueDescribesEveryVectorWithTheSameFieldValues() throws {
        let data = try Data(contentsOf: Self.vectorsDirectory.appendingPathComponent("vectors.json"))
        let catalogue = try JSONDecoder().decode(Catalogue.self, from: data)
        let raw = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let rawVectors = try XCTUnwrap(raw["vectors"] as? [[String: Any]])

        let hexFiles = try FileManager.default.contentsOfDirectory(atPath: Self.vectorsDirectory.path)
            .filter { $0.hasSuffix(".hex") }
        XCTAssertEqual(Set(catalogue.vectors.map(\.file)), Set(hexFiles), "vectors.json and the .hex files disagree")
        XCTAssertEqual(Set(hexFiles.map { String($0.dropLast(4)) }), Set(Self.expected.keys),
                       "a vector without an expected message in this test, or the reverse")

        for (entry, rawEntry) in zip(catalogue.vectors, rawVectors) {
            let name = String(entry.file.dropLast(4))
            guard let message = Self.expected[name] else { continue }
            XCTAssertEqual(entry.message, type(of: message).protoMessageName, "\(name): message type")
            let fields = try XCTUnwrap(rawEntry["fields"], "\(name): no fields")
            let json = String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
            let described = try type(of: message).init(jsonString: json)
            XCTAssertTrue(described.isEqualTo(message: message), "\(name): vectors.json describes \(described)")
        }
    }
}
