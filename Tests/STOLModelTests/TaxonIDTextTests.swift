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

    func testKraken2sUseNamesColumn_isTheIdInIt() {
        XCTAssertEqual(TaxonIDText.id("Homo sapiens (taxid 9606)"), 9606)
        XCTAssertEqual(TaxonIDText.id("Escherichia coli O157:H7 (taxid 83334)"), 83334)
        XCTAssertEqual(TaxonIDText.id("Severe acute respiratory syndrome coronavirus 2 (taxid 2697049)"), 2_697_049)
        XCTAssertEqual(TaxonIDText.id("unclassified (taxid 0)"), 0, "Kraken's unclassified, as its 0")
    }

    func testAnythingElse_isAName() {
        for text in ["9606.5", "9606.", ".0", "9606.0.0", "9606,0", "1e3", "9606 .0", "Homo sapiens", "", "0x10", "9606.0a",
                     "99999999999999999999.0", "Homo sapiens (taxid )", "Homo sapiens (taxid 9606", "Homo (taxid -5)",
                     "Homo (taxid 96O6)", "Homo (taxid ٩٦)", "(taxid 99999999999999999999)"] {
            XCTAssertNil(TaxonIDText.id(text), text)
        }
    }
}
