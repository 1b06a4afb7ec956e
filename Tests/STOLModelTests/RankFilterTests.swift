import STOLModel
import XCTest

/// ``RankFilter`` and ``RankOrder``: taxonkit's `filter` rules on NCBI's ranks of every
/// kind (strains, serotypes, no rank, clade, the 2025 spellings of Viruses and the
/// domains), written out by hand here as taxonkit's `isPassed` decides them.
final class RankFilterTests: XCTestCase {
    private func keeps(_ filter: RankFilter, _ rank: String, above: [String] = []) -> Bool {
        filter.keeps(rank: rank, ancestorRanks: above)
    }

    func testLowerThan_keepsStrictlyLowerRanks_andNoranksUnlessDiscarded() throws {
        let filter = try RankFilter(lowerThan: "genus")
        XCTAssertTrue(keeps(filter, "species"))
        XCTAssertTrue(keeps(filter, "subgenus"))
        XCTAssertTrue(keeps(filter, "strain"))
        XCTAssertTrue(keeps(filter, "serotype"))
        XCTAssertFalse(keeps(filter, "genus"), "the rank itself is excluded")
        XCTAssertFalse(keeps(filter, "family"))
        XCTAssertFalse(keeps(filter, "superkingdom"))
        XCTAssertTrue(keeps(filter, "no rank"), "taxonkit keeps taxa without an ordered rank by default")
        XCTAssertTrue(keeps(filter, "clade"))
        XCTAssertTrue(keeps(filter, "a rank nobody has heard of"))
        let discarding = try RankFilter(lowerThan: "genus", discardNoranks: true)
        XCTAssertFalse(keeps(discarding, "no rank"))
        XCTAssertFalse(keeps(discarding, "clade"))
        XCTAssertTrue(keeps(discarding, "species"))
    }

    func testHigherThan_andEqualTo_combineAsLowerOrEqual() throws {
        let higher = try RankFilter(higherThan: "family")
        XCTAssertTrue(keeps(higher, "order"))
        XCTAssertTrue(keeps(higher, "superfamily"))
        XCTAssertFalse(keeps(higher, "family"))
        XCTAssertFalse(keeps(higher, "genus"))
        let orEqual = try RankFilter(higherThan: "family", equalTo: ["family"])
        XCTAssertTrue(keeps(orEqual, "family"))
        XCTAssertFalse(keeps(orEqual, "subfamily"))
        let only = try RankFilter(equalTo: ["species", "Strain "])
        XCTAssertTrue(keeps(only, "species"))
        XCTAssertTrue(keeps(only, "strain"), "case and blanks in the option do not matter")
        XCTAssertFalse(keeps(only, "subspecies"))
        XCTAssertFalse(keeps(only, "genus"))
        XCTAssertTrue(keeps(only, "no rank"), "no-rank taxa pass any range unless discarded, as in taxonkit")
        let none = try RankFilter()
        XCTAssertTrue(keeps(none, "phylum"))
    }

    func testSpellingsOfOneLevel_areOneRank_acrossNCBIs2025Renaming() throws {
        let domains = try RankFilter(equalTo: ["superkingdom"])
        XCTAssertTrue(keeps(domains, "superkingdom"))
        XCTAssertTrue(keeps(domains, "domain"), "a 2025 database spells it domain")
        XCTAssertTrue(keeps(domains, "realm"), "the top of virus taxonomy, on the domains' level as in taxonkit")
        XCTAssertFalse(keeps(domains, "acellular root"), "Viruses since 2025: above the domains, as taxonkit orders it")
        let belowDomain = try RankFilter(lowerThan: "domain")
        XCTAssertFalse(keeps(belowDomain, "superkingdom"))
        XCTAssertTrue(keeps(belowDomain, "kingdom"))
        XCTAssertEqual(RankOrder.level(of: "Division"), RankOrder.level(of: "phylum"))
        XCTAssertEqual(RankOrder.level(of: "varietas"), RankOrder.level(of: "variety"))
        XCTAssertLessThan(RankOrder.level(of: "cellular root")!, RankOrder.level(of: "domain")!)
        XCTAssertLessThan(RankOrder.level(of: "species")!, RankOrder.level(of: "strain")!)
        XCTAssertNil(RankOrder.level(of: "no rank"))
        XCTAssertNil(RankOrder.level(of: "clade"))
    }

    func testSavePredictableNoranks_judgesANorankByItsNearestRankedAncestor() throws {
        let filter = try RankFilter(lowerThan: "genus", savePredictableNoranks: true)
        XCTAssertTrue(filter.discardNoranks, "saving predictable no-rank taxa implies discarding the others")
        // SARS-CoV-2 (no rank) under its species: below genus.
        XCTAssertTrue(keeps(filter, "no rank", above: ["species", "subgenus", "genus", "family"]))
        // A no-rank group directly under a genus: at the genus, which taxonkit counts as below (<=).
        XCTAssertTrue(keeps(filter, "no rank", above: ["genus", "family"]))
        // Under a clade under a family: the family is above genus.
        XCTAssertFalse(keeps(filter, "clade", above: ["clade", "family", "order"]))
        // Nothing ranked above but the root: not predictable.
        XCTAssertFalse(keeps(filter, "no rank", above: ["no rank"]))
        XCTAssertFalse(keeps(filter, "no rank", above: []))
        XCTAssertTrue(keeps(filter, "strain"), "ranked taxa follow the range as before")
        XCTAssertFalse(keeps(filter, "family"))
    }

    func testBadConfigurations_areTypedErrors() {
        XCTAssertThrowsError(try RankFilter(lowerThan: "genus", higherThan: "family")) { error in
            XCTAssertEqual(error as? RankFilter.ConfigurationError, .bothBounds)
        }
        XCTAssertThrowsError(try RankFilter(lowerThan: "genius")) { error in
            XCTAssertEqual(error as? RankFilter.ConfigurationError, .unknownRank("genius"))
        }
        XCTAssertThrowsError(try RankFilter(equalTo: ["no rank"]), "no rank has no order to compare") { error in
            XCTAssertEqual(error as? RankFilter.ConfigurationError, .unknownRank("no rank"))
        }
        XCTAssertThrowsError(try RankFilter(higherThan: "genus", savePredictableNoranks: true)) { error in
            XCTAssertEqual(error as? RankFilter.ConfigurationError, .predictableNeedsLowerThan)
        }
    }

    func testEveryRankOfTheOrder_hasOneLevel() {
        var seen: [String: Int] = [:]
        for (level, spellings) in RankOrder.levels.enumerated() {
            for spelling in spellings {
                XCTAssertNil(seen[spelling], "\(spelling) listed twice")
                seen[spelling] = level
                XCTAssertEqual(RankOrder.level(of: spelling.uppercased()), level)
            }
        }
        for rank in RankOrder.unordered { XCTAssertNil(seen[rank]) }
    }
}
