import STOLModel
import XCTest

/// What is read as a taxon id and what as a name, for every reader of ids (TaxonIDText).
final class TaxonIDTextTests: XCTestCase {
    func testDigits_andAZeroFraction_areAnID_asPandasWritesAFloatIDColumn() {
        XCTAssertEqual(TaxonIDText.id("9606"), 9606)
        XCTAssertEqual(TaxonIDText.id("9606.0"), 9606)
        XCTAssertEqual(TaxonIDText.id("9606.000"), 9606)
        XCTAssertEqual(TaxonIDText.id("+9606"), 9606)
        XCTAssertEqual(TaxonIDText.id("-5"), -5, "a sign is read: the callers refuse ids that are not positive, saying so")
        XCTAssertEqual(TaxonIDText.id("2697049"[...]), 2_697_049, "a substring reads the same")
    }

    func testAnythingElse_isAName() {
        for text in ["9606.5", "9606.", ".0", "9606.0.0", "9606,0", "1e3", "9606 .0", "Homo sapiens", "", "0x10", "9606.0a",
                     "99999999999999999999.0"] {
            XCTAssertNil(TaxonIDText.id(text), text)
        }
    }
}
