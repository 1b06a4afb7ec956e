import Foundation
import STOLContainer
import STOLFormat
import STOLTestFixtures
import XCTest

final class GzipTests: XCTestCase {
    func testRoundTripsSmallAndLargeInputs() throws {
        var generator = SplitMix64(for: self)
        let random = (0..<(3 * 1024 * 1024 + 17)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let text = Array(String(repeating: "Panthera leo (Linnaeus, 1758)\n", count: 50_000).utf8)
        for input in [[], [0x41], text, random] {
            let compressed = Gzip.compress(input)
            XCTAssertEqual(Array(compressed.prefix(3)), [0x1f, 0x8b, 0x08], "gzip magic and deflate")
            XCTAssertEqual(try Gzip.decompress(compressed, limit: UInt64(input.count)), input)
        }
        XCTAssertLessThan(Gzip.compress(text).count, text.count / 50)
    }

    func testStreamingInTinyPiecesGivesTheSameBytes() throws {
        let input = Array(String(repeating: "Homo sapiens; ", count: 20_000).utf8)
        // Compress in uneven pieces.
        let deflater = GzipDeflater(level: 6)
        var compressed: [UInt8] = []
        var offset = 0, step = 1
        while offset < input.count {
            let end = min(input.count, offset + step)
            input[offset..<end].withUnsafeBytes { deflater.update($0) { compressed.append(contentsOf: $0) } }
            offset = end
            step = step * 3 % 4093 + 1
        }
        deflater.finish { compressed.append(contentsOf: $0) }
        // Decompress one byte at a time.
        let inflater = try GzipInflater(limit: UInt64(input.count))
        var output: [UInt8] = []
        for byte in compressed {
            try [byte].withUnsafeBytes { bytes in
                try inflater.update(bytes) { (chunk) throws(StolFormatError) in output.append(contentsOf: chunk) }
            }
        }
        try inflater.finish()
        XCTAssertEqual(output, input)
        XCTAssertEqual(inflater.outputBytes, UInt64(input.count))
        XCTAssertTrue(inflater.isFinished)
    }

    /// A decompression bomb: 64 MiB of zeros in about 64 KiB of gzip, against a 1 MiB limit.
    func testDecompressionBombStopsAtTheLimitWithoutHandingOutMore() throws {
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 64 * 1024 * 1024))
        XCTAssertLessThan(bomb.count, 100 * 1024)
        let limit: UInt64 = 1024 * 1024
        let inflater = try GzipInflater(limit: limit)
        var received: UInt64 = 0
        XCTAssertThrowsError(try bomb.withUnsafeBytes { bytes in
            try inflater.update(bytes) { (chunk) throws(StolFormatError) in received += UInt64(chunk.count) }
        }) { XCTAssertEqual($0 as? StolFormatError, .decompressionLimit(limit: limit)) }
        XCTAssertLessThanOrEqual(received, limit)
        XCTAssertEqual(StolFormatError.decompressionLimit(limit: limit).code.rawValue, "DECOMPRESSION_LIMIT")
    }

    func testTheLimitIsInclusive() throws {
        let input = [UInt8](repeating: 7, count: 100_000)
        let compressed = Gzip.compress(input)
        XCTAssertEqual(try Gzip.decompress(compressed, limit: 100_000), input)
        XCTAssertThrowsError(try Gzip.decompress(compressed, limit: 99_999)) {
            XCTAssertEqual($0 as? StolFormatError, .decompressionLimit(limit: 99_999))
        }
        XCTAssertThrowsError(try Gzip.decompress(Gzip.compress([1]), limit: 0)) {
            XCTAssertEqual($0 as? StolFormatError, .decompressionLimit(limit: 0))
        }
        XCTAssertEqual(try Gzip.decompress(Gzip.compress([]), limit: 0), [])
    }

    /// Exactly one gzip member, nothing after it (STOL-FORMAT.md §4).
    func testOnlyOneCompleteGzipMemberIsAccepted() throws {
        let member = Gzip.compress(Array("one member".utf8))
        XCTAssertEqual(try Gzip.decompress(member, limit: 100), Array("one member".utf8))
        assertCorrupt(member + [0])
        assertCorrupt(member + Gzip.compress(Array("a second member".utf8)))
        assertCorrupt(member + member)
        assertCorrupt([])
        for length in 0..<member.count { assertCorrupt(Array(member.prefix(length)), "prefix \(length)") }
    }

    func testCorruptionIsDetected() throws {
        let input = Array(String(repeating: "Quercus robur ", count: 200).utf8)
        let member = Gzip.compress(input)
        var crc = member
        crc[crc.count - 8] ^= 0x01
        assertCorrupt(crc, "CRC-32 of the data")
        var isize = member
        isize[isize.count - 4] ^= 0x01
        assertCorrupt(isize, "ISIZE")
        var method = member
        method[2] = 0x07
        assertCorrupt(method, "compression method")
        var reservedFlag = member
        reservedFlag[3] = 0x20
        assertCorrupt(reservedFlag, "reserved FLG bit")
        assertCorrupt(input, "not compressed")
        // zlib (RFC 1950) and raw deflate (RFC 1951) streams are not gzip.
        assertCorrupt(hexBytes("789c4b4c4a0600024d0127"), "zlib wrapper")
        assertCorrupt(Array(member.dropFirst(10)), "raw deflate")
    }

    /// RFC 1952 optional header fields (here FNAME) are allowed; the signer's zlib writes none.
    func testOptionalHeaderFieldsAreAccepted() throws {
        let body = Array("named".utf8)
        let member = Gzip.compress(body)
        var named = Array(member.prefix(10))
        named[3] |= 0x08  // FNAME
        named += Array("reference.sqlite".utf8) + [0]
        named += member.dropFirst(10)
        XCTAssertEqual(try Gzip.decompress(named, limit: 100), body)
    }

    /// The payload of the test vector was made by the independent Python implementation.
    func testDecompressesThePythonVectorPayload() throws {
        let payload = hexBytes(try String(contentsOfFile: StolVectors.directory + "/payload.gz.hex", encoding: .utf8))
        let body = Array(try Data(contentsOf: URL(fileURLWithPath: StolVectors.directory + "/body.txt")))
        XCTAssertEqual(try Gzip.decompress(payload, limit: UInt64(body.count)), body)
    }

    private func assertCorrupt(_ bytes: [UInt8], _ what: String = "", line: UInt = #line) {
        XCTAssertThrowsError(try Gzip.decompress(bytes, limit: 1 << 20), what, line: line) { error in
            guard case .corruptPayload = error as? StolFormatError else {
                return XCTFail("\(what): \(error)", line: line)
            }
            XCTAssertEqual((error as? StolFormatError)?.code, .databaseCorrupt, line: line)
        }
    }
}

