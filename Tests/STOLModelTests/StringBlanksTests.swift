import STOLModel
import STOLTestFixtures
import XCTest

/// ``Swift/String/trimmingBlanks``, how every query of a batch is trimmed on both
/// sides of the socket: spaces and tabs only, as Foundation would trim them.
final class StringBlanksTests: XCTestCase {
    func testSpacesAndTabs_areTrimmed_nothingElse() {
        XCTAssertEqual(" \tPanthera leo\t ".trimmingBlanks, "Panthera leo")
        XCTAssertEqual("Panthera  leo".trimmingBlanks, "Panthera  leo", "blanks inside stay")
        XCTAssertEqual(" \t \t".trimmingBlanks, "")
        XCTAssertEqual("".trimmingBlanks, "")
        XCTAssertEqual("\n9606\r".trimmingBlanks, "\n9606\r", "line ends are not blanks")
        XCTAssertEqual("\u{A0}lion\u{3000}".trimmingBlanks, "\u{A0}lion\u{3000}", "only ASCII blanks")
        XCTAssertEqual(" léon ".trimmingBlanks, "léon")
    }

    func testRandomText_isTrimmedAsFoundationTrimsSpacesAndTabs() {
        var random = SplitMix64(for: self)
        let pieces = [" ", "\t", "a", "é", "0", "\n", "#", "\u{301}"]
        for _ in 0..<2000 {
            let text = (0..<Int.random(in: 0...12, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            var expected = Substring(text)
            while let first = expected.unicodeScalars.first, first == " " || first == "\t" { expected.unicodeScalars.removeFirst() }
            while let last = expected.unicodeScalars.last, last == " " || last == "\t" { expected.unicodeScalars.removeLast() }
            XCTAssertEqual(Array(text.trimmingBlanks.utf8), Array(expected.utf8), text.debugDescription)
        }
    }
}
