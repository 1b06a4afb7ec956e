import STOLFormat
import XCTest

final class StolFormatTests: XCTestCase {
    func testHeader_roundTripsAndPutsFieldsAtTheSpecifiedOffsets() throws {
        let header = StolHeader(schemaVersion: 0x0102_0304, payloadSHA256: Array(0..<32), signature: Array(100..<164))
        let bytes = header.serialized()
        XCTAssertEqual(bytes.count, 108)
        XCTAssertEqual(Array(bytes[0..<8]), [0x53, 0x54, 0x4f, 0x4c, 0x00, 0x44, 0x42, 0x01])
        XCTAssertEqual(Array(bytes[8..<12]), [0x04, 0x03, 0x02, 0x01], "schema version is little-endian")
        XCTAssertEqual(Array(bytes[12..<44]), Array(0..<32))
        XCTAssertEqual(try StolHeader(parsing: bytes + [0xff]), header)
    }

    func testHeader_rejectsWrongMagicAndShortInput() {
        var bytes = StolHeader(schemaVersion: 1, payloadSHA256: .init(repeating: 0, count: 32),
                               signature: .init(repeating: 0, count: 64)).serialized()
        XCTAssertThrowsError(try StolHeader(parsing: Array(bytes.prefix(107)))) {
            XCTAssertEqual($0 as? StolFormatError, .truncatedHeader(bytes: 107))
        }
        bytes[7] = 0x02  // a version 2 magic: its header is 288 bytes
        XCTAssertThrowsError(try StolHeader(parsing: bytes)) { XCTAssertEqual($0 as? StolFormatError, .truncatedHeader(bytes: 108)) }
        bytes[7] = 0x03  // no such format version
        XCTAssertThrowsError(try StolHeader(parsing: bytes)) { XCTAssertEqual($0 as? StolFormatError, .badMagic) }
    }

    /// FIPS 180-2 test vectors, through libsodium.
    func testSHA256_matchesTheStandardVectors() {
        XCTAssertEqual(SHA256.hash([]).hexString, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hash(Array("abc".utf8)).hexString,
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        var incremental = SHA256()
        incremental.update(Array("ab".utf8))
        incremental.update(Array("c".utf8))
        XCTAssertEqual(incremental.finalize(), SHA256.hash(Array("abc".utf8)))
    }
}
