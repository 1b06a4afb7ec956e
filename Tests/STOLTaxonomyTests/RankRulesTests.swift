import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// The rank tables (`rank_order`) and taxonkit's filter (`rank_filter`), answered by
/// the service in-process over ``DomainRulesFixture``: each option of taxonkit's
/// `filter` on nodes of every kind, the 2024 and 2025 spellings, ranks without order,
/// predictable no-rank taxa, typed refusals of bad options and per-query errors.
final class RankRulesTests: XCTestCase {
    // MARK: - The one table

    func testRankOrder_answersTheLevelsUnorderedRanksMainSpellingsAndPlaceholders() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        guard case .rankOrder(let order)? = await harness.send(.rankOrder(.init())).result else { return XCTFail("no rank order") }
        XCTAssertEqual(order.levels.map(\.spellings), RankOrder.levels)
        XCTAssertEqual(order.levels.first?.spellings, ["acellular root", "cellular root"])
        XCTAssertEqual(order.levels[1].spellings, ["domain", "superkingdom", "realm", "empire"])
        XCTAssertEqual(order.levels.last?.spellings, ["isolate"])
        XCTAssertEqual(order.unordered, ["no rank", "clade"])
        XCTAssertEqual(order.mainRanks.map(\.rank), [.domain, .kingdom, .phylum, .class, .order, .family, .genus, .species])
        XCTAssertEqual(order.mainRanks[0].spellings, ["domain", "superkingdom", "acellular root"])
        XCTAssertEqual(order.mainRanks[2].spellings, ["phylum", "division"])
        XCTAssertEqual(order.placeholders.map(\.letter), ["k", "r", "K", "p", "c", "o", "f", "g", "s", "S", "t"])
        XCTAssertEqual(order.placeholders.map(\.prefix), ["d__", "r__", "k__", "p__", "c__", "o__", "f__", "g__", "s__", "t__", "T__"])
        XCTAssertEqual(order.placeholders[0].spellings, order.mainRanks[0].spellings, "{k} fills from every spelling of the domain")
        XCTAssertEqual(order.placeholders[0].aliases, ["d", "domain", "superkingdom"])
        XCTAssertEqual(order.defaultFill, "unclassified {higher} {rank}")
    }

    // MARK: - taxonkit's filter

    /// Every query of the fixture that names a taxon, by kind.
    static let queries = ["1", "131567", "2759", "33208", "9681", "338153", "9688", "9689", "9695", "339610", "9999901",
                          "9999902", "2", "562", "83333", "511145", "83334", "9999903", "10239", "2559587", "694002",
                          "2509511", "694009", "2697049"]
    static let noRanks: Set<Int64> = [1, 131567, 339610, 9999901, 9999902, 9999903, 2697049]
    static let belowGenus: Set<Int64> = [9689, 9695, 562, 83333, 511145, 83334, 2509511, 694009]
    static let everyTaxon = Set(queries.map { Int64($0)! })

    private func filter(_ harness: ServiceHarness, _ queries: [String] = RankRulesTests.queries,
                        _ configure: (inout Stol_V1_RankFilterRequest) -> Void) async throws -> Stol_V1_RankFilterResponse {
        var request = Stol_V1_RankFilterRequest()
        request.queries = queries
        configure(&request)
        let response = await harness.send(.rankFilter(request))
        guard case .rankFilter(let answer)? = response.result else { throw TestSupportError("expected a filter, got \(response)") }
        XCTAssertEqual(answer.results.map(\.query), queries, "one result per query, in order")
        return answer
    }

    private func kept(_ answer: Stol_V1_RankFilterResponse) -> Set<Int64> {
        Set(answer.results.filter(\.kept).map(\.taxonID))
    }

    func testEachOptionOfTaxonkitsFilter_keepsWhatTaxonkitKeeps() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let domainLevel: Set<Int64> = [2759, 2, 2559587]
        let cases: [(String, (inout Stol_V1_RankFilterRequest) -> Void, Set<Int64>)] = [
            ("lower than genus: strictly below, no-rank taxa kept", { $0.lowerThan = "genus" }, Self.belowGenus.union(Self.noRanks)),
            ("lower than or equal to genus", { $0.lowerThan = "genus"; $0.equalTo = [" genus "] },
             Self.belowGenus.union(Self.noRanks).union([9688, 694002])),
            ("lower than genus, no-rank taxa discarded", { $0.lowerThan = "genus"; $0.discardNoranks = true }, Self.belowGenus),
            ("predictable no-rank taxa: under a species, directly under a genus; not under a family, a clade or nothing",
             { $0.lowerThan = "genus"; $0.savePredictableNoranks = true }, Self.belowGenus.union([2697049, 9999903])),
            ("predictable below species: the genus is above the bound", { $0.lowerThan = "species"; $0.savePredictableNoranks = true },
             [9695, 83333, 511145, 83334, 2697049]),
            ("higher than family: acellular root and realm too", { $0.higherThan = "family" },
             Set([2759, 33208, 2, 10239, 2559587]).union(Self.noRanks)),
            ("higher than or equal to family, no ranks discarded",
             { $0.higherThan = "Family"; $0.equalTo = ["family"]; $0.discardNoranks = true }, [2759, 33208, 2, 10239, 2559587, 9681]),
            ("superkingdom: every spelling of its level, 2024's and 2025's", { $0.equalTo = ["superkingdom"] },
             domainLevel.union(Self.noRanks)),
            ("domain: the same level", { $0.equalTo = ["DOMAIN"]; $0.discardNoranks = true }, domainLevel),
            ("cellular root: acellular root's level", { $0.equalTo = ["cellular root"]; $0.discardNoranks = true }, [10239]),
            ("several ranks, comma-separated and repeated", { $0.equalTo = ["species, strain", "Subspecies ", ""]; $0.discardNoranks = true },
             [9689, 562, 694009, 83333, 511145, 9695]),
            ("no option: every taxon", { _ in }, Self.everyTaxon),
            ("only discard no-rank taxa", { $0.discardNoranks = true }, Self.everyTaxon.subtracting(Self.noRanks)),
        ]
        for (name, configure, expected) in cases {
            let answer = try await filter(harness, Self.queries, configure)
            XCTAssertEqual(kept(answer), expected, name)
            XCTAssertTrue(answer.results.allSatisfy { !$0.hasError && $0.taxonID != 0 }, name)
        }
    }

    func testResults_carryTheTaxonsRankAndName_asTheWholeTreeHasThem() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let answer = try await filter(harness, ["511145", "Escherichia coli", "10239"]) { $0.lowerThan = "genus" }
        XCTAssertEqual(answer.results.map(\.taxonID), [511145, 562, 10239])
        XCTAssertEqual(answer.results.map(\.rank), ["strain", "species", "acellular root"])
        XCTAssertEqual(answer.results.map(\.name), ["Escherichia coli str. K-12 substr. MG1655", "Escherichia coli", "Viruses"])
        XCTAssertEqual(answer.results.map(\.kept), [true, true, false])
    }

    func testQueriesThatNameNothing_getTheirOwnErrors_mergedIdsAreJudgedAsTheirNewTaxon() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let answer = try await filter(harness, ["424242", "99999", "12345", "0", "no such taxon", "9689"]) { $0.lowerThan = "genus" }
        XCTAssertEqual(answer.results.map { $0.hasError ? $0.error.code : nil },
                       [.notFound, .taxonDeleted, nil, .invalidRequest, .notFound, nil])
        XCTAssertEqual(answer.results[2].taxonID, 9689)
        XCTAssertEqual(answer.results[2].mergedFrom, 12345)
        XCTAssertTrue(answer.results[2].kept)
        XCTAssertEqual(answer.results.filter(\.kept).count, 2)
        XCTAssertFalse(answer.results[0].kept)
    }

    func testBadOptions_failTheWholeRequest_typed_andNamingTheRank() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let cases: [((inout Stol_V1_RankFilterRequest) -> Void, String, [String: String])] = [
            ({ $0.lowerThan = "genius" }, "unknown rank 'genius'", ["rank": "genius"]),
            ({ $0.equalTo = ["species", "no rank"] }, "unknown rank 'no rank'", ["rank": "no rank"]),
            ({ $0.higherThan = "clade" }, "unknown rank 'clade'", ["rank": "clade"]),
            ({ $0.lowerThan = "genus"; $0.higherThan = "family" }, "lower_than and higher_than cannot be used together", [:]),
            ({ $0.savePredictableNoranks = true }, "save_predictable_noranks goes with lower_than", [:]),
            ({ $0.higherThan = "genus"; $0.savePredictableNoranks = true }, "save_predictable_noranks goes with lower_than", [:]),
        ]
        for (configure, message, details) in cases {
            for queries in [Self.queries, []] {
                var request = Stol_V1_RankFilterRequest()
                request.queries = queries
                configure(&request)
                guard case .error(let error)? = await harness.send(.rankFilter(request)).result else {
                    XCTFail("\(message): answered"); continue
                }
                XCTAssertEqual(error.code, .invalidRequest, message)
                XCTAssertTrue(error.message.contains(message), error.message)
                XCTAssertEqual(error.details, details, message)
                if message.hasPrefix("unknown rank") {
                    // The valid ranks are listed, not only pointed to (issue 34).
                    XCTAssertTrue(error.message.contains("domain=superkingdom") && error.message.contains(", genus, ")
                                  && error.message.contains(", strain, isolate"), error.message)
                }
            }
        }
        // Good options and no queries: checked, nothing answered.
        let checked = try await filter(harness, []) { $0.lowerThan = "genus"; $0.savePredictableNoranks = true }
        XCTAssertTrue(checked.results.isEmpty)
    }

    func testLimits_moreThan1000Queries_andADatabaseWithoutTheWholeTree_areRefused() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        var many = Stol_V1_RankFilterRequest()
        many.queries = Array(repeating: "9689", count: 1001)
        let refusedMany = await harness.send(.rankFilter(many))
        XCTAssertEqual(errorCode(refusedMany), .invalidRequest)
        let mainOnly = try await DomainRulesFixture.harness(self, fullTree: false)
        var request = Stol_V1_RankFilterRequest()
        request.queries = ["9689"]
        let refused = await mainOnly.send(.rankFilter(request))
        guard case .error(let error)? = refused.result else { return XCTFail("\(refused)") }
        XCTAssertEqual(error.code, .invalidRequest)
        XCTAssertEqual(error.details["ranks"], "main")
    }
}
