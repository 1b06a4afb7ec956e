import STOLModel
import STOLPipeline
import STOLTestFixtures
import XCTest

/// The stable-id policy for text ids (``StableTaxonIDMap``), pinned against values
/// computed independently of the Swift code, with Python's hashlib:
///
/// ```sh
/// python3 -c 'import hashlib, sys; t = sys.argv[1].encode(); print(2**40 + int.from_bytes(
///     hashlib.sha256(b"coldp:" + t).digest()[:8], "big") % (2**53 - 2**40))' x36P
/// ```
final class StableTaxonIDMapTests: XCTestCase {
    private func coldp(_ id: String) -> TaxonID { StableTaxonIDMap.taxonID(for: id, namespace: "coldp") }

    func testTaxonID_ofCatalogueOfLifeTextIDs_matchesAnIndependentSHA256Computation() {
        XCTAssertEqual(coldp("x36P"), 4_389_133_603_328_958)
        XCTAssertEqual(coldp("4QHKG"), 8_768_906_487_905_225)
        XCTAssertEqual(coldp("3LXR"), 1_387_253_644_761_110)
    }

    func testTaxonID_whenIDIsACanonicalIntegerBelow2To40_keepsIt() {
        XCTAssertEqual(coldp("1"), 1)
        XCTAssertEqual(coldp("9689"), 9689)
        XCTAssertEqual(coldp("1099511627775"), (1 << 40) - 1)
    }

    func testTaxonID_whenAnIntegerIsNotCanonicalOrTooLarge_hashesItLikeText() {
        // `007` and `7` are different source ids, so they must not share an id.
        XCTAssertEqual(coldp("007"), 2_307_719_245_814_019)
        XCTAssertEqual(coldp("+7"), 8_890_340_505_925_966)
        XCTAssertEqual(coldp("0"), 23_100_137_511_920)
        XCTAssertEqual(coldp("1099511627776"), 2_742_861_143_056_188)
        XCTAssertEqual(coldp("9999999999999"), 4_241_425_708_642_504)
    }

    func testTaxonID_isCaseSensitiveAndDependsOnTheNamespace() {
        XCTAssertEqual(coldp("x36p"), 6_783_090_668_213_930)
        XCTAssertEqual(StableTaxonIDMap.taxonID(for: "x36P", namespace: "ott"), 7_161_830_072_746_827)
    }

    func testTaxonID_ofAnyTextID_liesInTheHashedRangeAboveEveryKeptInteger() {
        var generator = SplitMix64(for: self)
        let alphabet = Array("0123456789ABCDEFGHJKLMNPQRSTVWXYZabcxé-_:")
        for _ in 0..<5_000 {
            let length = Int.random(in: 1...12, using: &generator)
            let id = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            let taxonID = coldp(id)
            if StableTaxonIDMap.hashedRange.contains(taxonID) { continue }
            // Only canonical integers may land below the range, and only on themselves.
            XCTAssertEqual(String(taxonID), id, "'\(id)' mapped to \(taxonID), outside the hashed range")
        }
        XCTAssertLessThanOrEqual(StableTaxonIDMap.hashedRange.upperBound, 1 << 53, "JSON clients read ids as doubles")
        XCTAssertEqual(StableTaxonIDMap.hashedRange.lowerBound, StableTaxonIDMap.integerLimit)
    }

    func testMap_givesTheSameIDAsThePurePolicyAndAcceptsARepeatedID() throws {
        var map = StableTaxonIDMap(namespace: "coldp")
        XCTAssertEqual(try map.map("x36P"), coldp("x36P"))
        XCTAssertEqual(try map.map("x36P"), coldp("x36P"))
        XCTAssertEqual(try map.map("10002"), 10002)
        XCTAssertEqual(map.hashedCount, 1, "integers are not registered; a repeated text id is one id")
    }

    /// `c14463178` and `c59775577` really collide under the policy: found by a
    /// birthday search over `c0` … `c268435455` (2^28 SHA-256 hashes, sorted),
    /// and checked with the Python line above: both give 3700373707059085.
    func testMap_whenTwoTextIDsCollide_throwsACollisionNamingBoth() throws {
        XCTAssertEqual(coldp("c14463178"), 3_700_373_707_059_085)
        XCTAssertEqual(coldp("c59775577"), 3_700_373_707_059_085)
        var map = StableTaxonIDMap(namespace: "coldp")
        _ = try map.map("c14463178")
        XCTAssertThrowsError(try map.map("c59775577")) { error in
            XCTAssertEqual(error as? StableTaxonIDMap.Collision,
                           .init(firstSourceID: "c14463178", secondSourceID: "c59775577", taxonID: 3_700_373_707_059_085))
            let message = String(describing: error)
            XCTAssertTrue(message.contains("'c14463178'") && message.contains("'c59775577'"), message)
        }
    }
}
