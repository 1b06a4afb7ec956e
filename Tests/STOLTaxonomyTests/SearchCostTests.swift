import Foundation
import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// A search's work is capped by what it examines (issue 33; docs/design/queries-and-algorithms.md
/// §7.7): repeated words once, at most 16 distinct words, a walk of the full-text
/// matches under a `within` taxon or of a rank at most so many rows, FTS5's own work
/// metered in SQLite steps, the candidates scored bounded, and a small `within` taxon
/// searched by its own nodes. The counters of ``SearchWork`` say what a search
/// examined; the caps are narrowed here so that the fixture reaches them.
final class SearchCostTests: XCTestCase {
    private var harness: ServiceHarness!

    /// 60 "Felis sp. N" (ids 100001…), then 3 "Homo sp. N" and a tautonym under Homo
    /// (ids 200001…): full-text matches come in id order, so a walk under Homo reads
    /// the cats first.
    static let usages = (1...60).map { row("\(100_000 + $0)", "9682", "accepted", "species", "Felis sp. \($0)", "") }
        + (1...3).map { row("\(200_000 + $0)", "9605", "accepted", "species", "Homo sp. \($0)", "") }
        + [row("200010", "9605", "accepted", "species", "Homo homo", ""),
           row("300001", "9681", "accepted", "genus", "Lynx", ""),
           row("300002", "300001", "accepted", "species", "Lynx lynx", "")]

    override func setUpWithError() throws {
        let scratch = try makeTemporaryDirectory(self)
        let source = try FelidaeFixture.write(to: scratch + "/source", creating: true, extraUsages: Self.usages)
        harness = try ServiceHarness(self, bundledSource: source)
    }

    private func engine() async -> SearchEngine {
        await harness.waitForTreeLoaded()
        return SearchEngine(database: harness.provider.current().database)
    }

    private func answer(_ text: String, prefix: Bool = false, phrase: Bool = false, within: String = "",
                        limit: Int = 200, limits: SearchLimits = .standard) async throws -> SearchAnswer {
        try await engine().answer(SearchQuery(text: text, prefix: prefix, phrase: phrase),
                                  options: SearchOptions(limit: limit, within: within, limits: limits))
    }

    // MARK: Words

    func testRepeatedWords_areMatchedOnce_andPhrasesHoldTheirWords() {
        XCTAssertEqual(SearchQuery(text: Array(repeating: "sp", count: 170).joined(separator: " "), prefix: false).matchGroups,
                       [["sp"]])
        let query = SearchQuery(text: "sp \"domestic cat\" cat SP domestic \"domestic cat\" lynx lynx", prefix: false)
        XCTAssertEqual(query.matchGroups, [["sp"], ["domestic", "cat"], ["lynx"]], "words a phrase holds are the phrase's")
        XCTAssertEqual(query.matchWordCount, 4)
        XCTAssertEqual(query.words.count, 10, "what was typed is kept for exact names")
        XCTAssertEqual(SearchQuery(text: "lynx lynx", prefix: true).matchGroups, [["lynx"], ["lynx"]],
                       "the prefix being typed stays last")
        XCTAssertEqual(SearchQuery(text: "sp sp sp", prefix: false, phrase: true).matchWordCount, 3,
                       "a phrase counts each of its words")
    }

    func testAWordRepeated170Times_answersAsTheWordOnce() async throws {
        let once = try await answer("sp")
        let repeated = try await answer(Array(repeating: "sp", count: 170).joined(separator: " "))
        XCTAssertEqual(once.hits.count, 63)
        XCTAssertEqual(repeated.hits, once.hits)
        XCTAssertEqual(repeated.work, once.work, "the same work")
        let within = try await answer(Array(repeating: "sp", count: 170).joined(separator: " "), within: "9606")
        XCTAssertEqual(within.hits, [])
        XCTAssertFalse(within.work.partial)
    }

    func testAPhraseWithARepeatedWord_isMatchedByItsWords_andItsNamesHoldThePhrase() async throws {
        XCTAssertEqual(SearchQuery(text: "sp sp", prefix: false, phrase: true).matchExpression, "\"sp\"",
                       "FTS5 would check the phrase in each of the word's rows")
        XCTAssertEqual(SearchQuery(text: "\"sp 1\" \"sp 2\"", prefix: false).matchExpression, "\"sp\" \"1\" \"2\"")
        XCTAssertEqual(SearchQuery(text: "\"felis sp\" \"domestic cat\"", prefix: false).matchExpression,
                       "\"felis sp\" \"domestic cat\"", "phrases of words used once stay phrases")
        XCTAssertEqual(SearchQuery(text: "\"sp 1\" \"sp 2\"", prefix: true).matchExpression, "\"sp\" \"1\" \"2\"*")
        XCTAssertEqual(SearchQuery(text: "\"sp 1\" \"sp 2", prefix: true).matchExpression, "\"sp 1\" \"2\"*",
                       "an unpaired quote separates words: the lone sp is the phrase's, once")
        let tautonym = try await answer("homo homo", phrase: true)
        XCTAssertEqual(tautonym.hits.map(\.taxon.id), [200010])
        XCTAssertFalse(tautonym.work.partial, "every row of its words was examined")
        let phrases = try await answer("\"homo sp\" \"sp 1\"")
        XCTAssertEqual(phrases.hits.map(\.taxon.id), [200001], "only a name that holds each phrase")
        let reversed = try await answer("\"sp homo\" \"sp 1\"").hits
        XCTAssertEqual(reversed.filter { !$0.fuzzy }, [])
    }

    func testATautonym_isStillAnExactNameOfTwoWords() async throws {
        let hits = try await answer("lynx lynx").hits
        XCTAssertEqual(hits.first?.taxon.id, 300002, "Lynx lynx, not the genus Lynx")
        let homo = try await answer("homo homo").hits
        XCTAssertEqual(homo.first?.taxon.id, 200010)
    }

    func testAQueryOverSixteenDistinctWords_isRefusedNamingTheLimit() async throws {
        let words = (1...17).map { "word\($0)" }
        let over = await harness.search(words.joined(separator: " "))
        guard case .error(let error)? = over.result else { return XCTFail("expected a refusal, got \(over)") }
        XCTAssertEqual(error.code, .invalidRequest)
        XCTAssertEqual(error.details["limit"], "16")
        XCTAssertTrue(error.message.contains("16 distinct words"), error.message)
        let phrase = await harness.search(Array(repeating: "sp", count: 17).joined(separator: " "), phrase: true)
        XCTAssertEqual(errorCode(phrase), .invalidRequest, "a phrase counts each of its words")
        let sixteen = await harness.search(words.prefix(16).joined(separator: " "))
        XCTAssertNil(errorCode(sixteen), "16 are answered")
        let repeated = await harness.search(Array(repeating: words[0], count: 80).joined(separator: " "))
        XCTAssertNil(errorCode(repeated), "a word typed 80 times (479 bytes) is one word")
    }

    // MARK: Within

    func testWithinASmallTaxon_itsNodesAreSearched_andAnswerAsTheWalkOfTheMatches() async throws {
        let walk = SearchLimits(cladeNodes: 0)  // every `within` through the full-text matches
        for (query, within) in [("sp", "9605"), ("sp", "Homo"), ("homo", "9605"), ("lion", "9688"), ("panthera", "9681"),
                                ("cat", "9681"), ("felis sp", "9682"), ("\"felis sp\"", "9682"), ("lion man", "40674"),
                                ("homo sp 2", "9604"), ("sapiens", "2"), ("sp", "2759"), ("lynx", "9681")] {
            let nodes = try await answer(query, within: within)
            let matches = try await answer(query, within: within, limits: walk)
            // The same hits; approximate ones the walk's corrections find, the nodes' names find too
            // (and any other within the edit bound: every name under the taxon is compared).
            let exact = nodes.hits.filter { !$0.fuzzy }, walked = matches.hits.filter { !$0.fuzzy }
            XCTAssertEqual(exact.map(\.taxon.id), walked.map(\.taxon.id), "\(query) within \(within)")
            XCTAssertEqual(exact.map(\.matchedName), walked.map(\.matchedName), "\(query) within \(within)")
            XCTAssertTrue(Set(matches.hits.filter(\.fuzzy).map(\.taxon.id)).isSubset(of: Set(nodes.hits.map(\.taxon.id))),
                          "\(query) within \(within)")
            XCTAssertGreaterThan(nodes.work.cladeNodes, 0, "\(query) within \(within): its nodes were searched")
            XCTAssertEqual(nodes.work.rowsRead, 0, "no walk of the words' matches")
            XCTAssertEqual(matches.work.cladeNodes, 0)
        }
        let homo = try await answer("sp", within: "9605").hits
        XCTAssertEqual(homo.map(\.taxon.id), [200001, 200002, 200003])
    }

    func testAWalkUnderATaxon_stopsAtItsRowCap_andSaysTheAnswerIsPartial() async throws {
        let capped = SearchLimits(rowsPerWalk: 5, cladeNodes: 0)
        let answer = try await answer("sp", within: "9605", limits: capped)
        XCTAssertEqual(answer.work.rowsRead, 5, "the 60 cats come first: five read, then the cap")
        XCTAssertTrue(answer.work.partial)
        XCTAssertEqual(answer.hits, [], "none of the five is under Homo")
        let uncapped = try await self.answer("sp", within: "9605", limits: SearchLimits(cladeNodes: 0))
        XCTAssertFalse(uncapped.work.partial)
        XCTAssertEqual(uncapped.work.rowsRead, 63)
        XCTAssertEqual(uncapped.hits.count, 3)
        let total = try await self.answer("sp", within: "9605", limits: SearchLimits(rowsPerWalk: 100, rows: 7, cladeNodes: 0))
        XCTAssertLessThanOrEqual(total.work.rowsRead, 7, "the search's rows in all")
        XCTAssertTrue(total.work.partial)
    }

    // MARK: Full-text work and candidates

    func testFullTextStatements_stopAtTheirStepCap_andTheNextSearchIsWhole() async throws {
        let capped = try await answer("sp", limits: SearchLimits(sqlSteps: 1))
        XCTAssertTrue(capped.work.partial)
        XCTAssertLessThanOrEqual(capped.work.sqlSteps, 1 + 64, "stopped at the first count past the cap")
        XCTAssertLessThan(capped.hits.count, 63)
        let whole = try await answer("sp")
        XCTAssertFalse(whole.work.partial, "the connection the statement was stopped on still answers")
        XCTAssertEqual(whole.hits.count, 63)
        XCTAssertGreaterThan(whole.work.sqlSteps, 0, "full-text work is counted")
    }

    func testCandidatesScored_areCapped() async throws {
        let answer = try await answer("sp", limits: SearchLimits(candidates: 10))
        XCTAssertTrue(answer.work.partial)
        XCTAssertEqual(answer.work.candidates, 10)
        XCTAssertEqual(answer.hits.count, 10)
        let whole = try await self.answer("sp")
        XCTAssertEqual(whole.work.candidates, 63)
        XCTAssertFalse(whole.work.partial)
    }
}
