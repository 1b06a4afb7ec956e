import Foundation
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

final class SearchTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
    }

    // MARK: Matching

    func testSearch_exactWord_findsTheTaxonByCommonName() async throws {
        let found = try await hits(harness.search("lion"))
        XCTAssertEqual(found.map(\.taxon.id), [9689])
        XCTAssertEqual(found.first?.matchedName, "lion")
        XCTAssertEqual(found.first?.matchType, .common)
        XCTAssertEqual(found.first?.taxon.scientificName, "Panthera leo")
        XCTAssertGreaterThan(found.first?.score ?? 0, 0)
    }

    /// A whole word is matched as a word ("cat" is not "catus"); a last word that is no word of
    /// any name is a fragment, completed before it is read as a misspelling (issue 34: "panth"
    /// answered the Formicidae "ants", edit distance 2, and not Panthera, which begins with it).
    func testSearch_aWholeWord_isNotAPrefix_butAFragmentIsCompletedBeforeFuzzyMatches() async throws {
        let search1 = try hits(await harness.search("panth"))
        XCTAssertEqual(search1.first?.taxon.scientificName, "Panthera", "\(search1.map(\.taxon.scientificName))")
        XCTAssertFalse(search1.first?.fuzzy ?? true)
        if let firstFuzzy = search1.firstIndex(where: \.fuzzy) {
            XCTAssertFalse(search1[firstFuzzy...].contains { !$0.fuzzy }, "completions before misspellings")
        }
        let misspelt = try hits(await harness.search("pantera"))
        XCTAssertEqual(misspelt.first?.taxon.scientificName, "Panthera", "a misspelling still finds it")
        let search2 = await harness.search("cat")
        let cat = try hits(search2).map(\.taxon.id)
        XCTAssertTrue(cat.contains(9685) && Set(cat).isSubset(of: [9685, 9681]),
                      "`catus` is another word (`cats`, the English plural, may name Felidae once the name index is loaded)")
    }

    func testSearch_withPrefix_matchesTheLastWordAsAPrefix() async throws {
        let panth = try await hits(harness.search("panth", prefix: true))
        XCTAssertEqual(Set(panth.map(\.taxon.id)), [9688, 9689, 9690, 9691, 9694, 338153], "Pantherinae too: every node")
        XCTAssertTrue(panth.allSatisfy { $0.matchType == .scientific })
        let leo = await Set(try hits(harness.search("leo", prefix: true)).map(\.taxon.id))
        XCTAssertEqual(leo, [9689, 9691], "`leo`, `león` and `leopard`")
        // Only the last word is a prefix.
        let search3 = await harness.search("pan leo", prefix: true)
        XCTAssertEqual(try hits(search3).count, 0)
    }

    func testSearch_multipleWords_mustAllMatch() async throws {
        let search4 = await harness.search("Panthera leo")
        XCTAssertEqual(try hits(search4).map(\.taxon.id), [9689])
        let search5 = await harness.search("panthera tiger")
        XCTAssertEqual(try hits(search5).map(\.taxon.id), [9694], "words may match different columns")
        let search6 = await harness.search("lion tiger")
        XCTAssertEqual(try hits(search6).count, 0)
        let oak = try await hits(harness.search("oak pedunculate"))
        XCTAssertEqual(oak.map(\.taxon.id), [38942])
        XCTAssertEqual(oak.first?.matchedName, "pedunculate oak")
    }

    func testSearch_commonNamesInOtherLanguages_matchWithDiacriticsFolded() async throws {
        for query in ["leon", "león", "LEÓN", "Leon"] {
            let found = try await hits(harness.search(query))
            XCTAssertEqual(found.map(\.taxon.id), [9689], query)
            XCTAssertEqual(found.first?.matchedName, "león", query)
            XCTAssertEqual(found.first?.matchType, .common, query)
        }
        let search7 = await harness.search("lowe")
        XCTAssertEqual(try hits(search7).first?.matchedName, "Löwe")
        let search8 = await harness.search("狮")
        XCTAssertEqual(try hits(search8).map(\.taxon.id), [9689])
        let search9 = await harness.search("roble")
        XCTAssertEqual(try hits(search9).map(\.taxon.id), [38942])
    }

    func testSearch_reportsTheCommonNameInTheRequestedLanguage() async throws {
        let found = try await hits(harness.search("leon", language: "es"))
        XCTAssertEqual(found.first?.taxon.commonName, "león")
        let search10 = await harness.search("leon")
        XCTAssertEqual(try hits(search10).first?.taxon.commonName, "lion")
    }

    func testSearch_whenCommonNamesInSeveralLanguagesMatch_reportsTheOneInTheRequestedLanguage() async throws {
        // `huma` is a prefix of both `human` (en, preferred) and `humano` (es); `Homo sapiens` does not match.
        let english = try await hits(harness.search("huma", prefix: true))
        XCTAssertEqual(english.map(\.taxon.id), [9606])
        XCTAssertEqual(english.first?.matchedName, "human")
        let spanish = try await hits(harness.search("huma", prefix: true, language: "es"))
        XCTAssertEqual(spanish.map(\.taxon.id), [9606])
        XCTAssertEqual(spanish.first?.matchedName, "humano")
        XCTAssertEqual(spanish.first?.matchType, .common)
        XCTAssertEqual(spanish.first?.taxon.commonName, "humano")
    }

    func testSearch_synonymMatch_isReportedAsSynonymWithTheSynonymAsMatchedName() async throws {
        let felisLeo = try await hits(harness.search("Felis leo"))
        XCTAssertEqual(felisLeo.map(\.taxon.id), [9689])
        XCTAssertEqual(felisLeo.first?.matchType, .synonym)
        XCTAssertEqual(felisLeo.first?.matchedName, "Felis leo")
        XCTAssertEqual(felisLeo.first?.taxon.scientificName, "Panthera leo", "the hit is the accepted taxon")
        let uncia = try await hits(harness.search("uncia"))
        XCTAssertEqual(uncia.map(\.taxon.id), [9688])
        XCTAssertEqual(uncia.first?.matchType, .synonym)
        XCTAssertEqual(uncia.first?.matchedName, "Uncia")
    }

    func testSearch_rankFilter_keepsOnlyThatRank() async throws {
        let felis = await Set(try hits(harness.search("felis")).map(\.taxon.id))
        XCTAssertEqual(felis, [9682, 9685, 9689, 9694], "the genus, the cat, and two synonyms")
        let search11 = await harness.search("felis", rank: .genus)
        XCTAssertEqual(try hits(search11).map(\.taxon.id), [9682])
        let search12 = await harness.search("felis", rank: .species)
        XCTAssertEqual(Set(try hits(search12).map(\.taxon.id)), [9685, 9689, 9694])
        let search13 = await harness.search("felis", rank: .family)
        XCTAssertEqual(try hits(search13).count, 0)
        let search14 = await harness.search("panth", prefix: true, rank: .species)
        XCTAssertTrue(try hits(search14).allSatisfy { $0.taxon.rank == .species })
    }

    func testSearch_unknownRank_answersInvalidRequest() async {
        let search15 = await harness.search("panthera", rank: .UNRECOGNIZED(42))
        XCTAssertEqual(errorCode(search15), .invalidRequest)
    }

    func testSearch_limit_capsTheHitsAndAbove200IsInvalid() async throws {
        let search16 = await harness.search("panthera", limit: 2)
        XCTAssertEqual(try hits(search16).count, 2)
        let search17 = await harness.search("panthera")
        XCTAssertEqual(try hits(search17).count, 5)
        let search18 = await harness.search("panthera", limit: 200)
        XCTAssertEqual(try hits(search18).count, 5)
        let search19 = await harness.search("panthera", limit: 201)
        XCTAssertEqual(errorCode(search19), .invalidRequest)
    }

    func testSearch_scientificNameMatchRanksTheExactTaxonFirst() async throws {
        let found = try await hits(harness.search("quercus robur"))
        XCTAssertEqual(found.first?.taxon.id, 38942)
        XCTAssertEqual(found.first?.matchType, .scientific)
        XCTAssertEqual(found.first?.matchedName, "Quercus robur")
    }

    // MARK: Hostile and empty input

    func testSearch_fts5SyntaxInUserText_neverAnswersInternal() async throws {
        let queries = [
            "\"", "lion\"", "\"lion", "*", "lion*", "*lion", "(", "(lion", "lion)", "NEAR(lion tiger)", "NEAR(a b)",
            "-lion", "-x", "col:lion", "col:x", "scientific_name:leo", "{scientific_name}: leo", "lion AND tiger",
            "AND", "OR", "NOT", "lion OR", "NOT lion", "^lion", "lion + tiger", "'lion'", "lion:", ":", "\"\"\"",
            "a\"b*c(d)e:f-g^h", "NEAR", "near(lion, 2)", "lion NEAR/2 tiger", "\\", "%", "_", "lion;DROP TABLE taxa",
            String(repeating: "(", count: 300), "leó*n", "\u{0}lion", "ﬁsh", "Ｌｉｏｎ",
        ]
        for query in queries {
            let response = await harness.search(query)
            XCTAssertNotEqual(errorCode(response), .internal, "query \(query.debugDescription)")
            let prefixed = await harness.search(query, prefix: true)
            XCTAssertNotEqual(errorCode(prefixed), .internal, "prefix query \(query.debugDescription)")
        }
    }

    func testSearch_fts5OperatorsInUserText_areTreatedAsPlainWords() async throws {
        let search20 = await harness.search("-lion")
        XCTAssertEqual(hitIDs(search20), [9689])
        let search21 = await harness.search("\"lion")
        XCTAssertEqual(hitIDs(search21), [9689])
        let search22 = await harness.search("(lion)")
        XCTAssertEqual(hitIDs(search22), [9689])
        let search23 = await harness.search("lion*")
        XCTAssertEqual(hitIDs(search23), [9689])
        let search24 = await harness.search("scientific_name:robur")
        XCTAssertEqual(hitIDs(search24), [], "a column filter is two plain words")
        let search25 = await harness.search("lion OR tiger")
        XCTAssertEqual(hitIDs(search25), [], "OR is a word, so all three must match")
        let search26 = await harness.search("Ｌｉｏｎ")
        XCTAssertEqual(hitIDs(search26), [9689], "full-width letters fold")
        let search27 = await harness.search("lion AND tiger")
        XCTAssertEqual(errorCode(search27), nil)
    }

    func testSearch_textWithoutLettersOrDigits_answersInvalidRequest() async {
        for query in ["", " ", "\"", "*", "()", "-", ":", "\"*\"", "— …", "🦁"] {
            let search28 = await harness.search(query)
            XCTAssertEqual(errorCode(search28), .invalidRequest, "query \(query.debugDescription)")
        }
    }

    func testSearch_queryLongerThan512Bytes_answersInvalidRequest() async {
        let search29 = await harness.search(String(repeating: "a", count: 513))
        XCTAssertEqual(errorCode(search29), .invalidRequest)
        let search30 = await harness.search(String(repeating: "a", count: 512))
        XCTAssertEqual(errorCode(search30), nil)
    }

    // MARK: SearchQuery

    func testSearchQuery_matchExpression_quotesEveryWord() {
        XCTAssertEqual(SearchQuery(text: "Panthera leo", prefix: false).matchExpression, "\"panthera\" \"leo\"")
        XCTAssertEqual(SearchQuery(text: "Panthera leo", prefix: true).matchExpression, "\"panthera\" \"leo\"*")
        XCTAssertEqual(SearchQuery(text: "NEAR(a b)", prefix: false).matchExpression, "\"near\" \"a\" \"b\"")
        XCTAssertEqual(SearchQuery(text: "col:x -y \"z* AND", prefix: false).matchExpression,
                       "\"col\" \"x\" \"y\" \"z\" \"and\"")
        XCTAssertEqual(SearchQuery(text: "León", prefix: false).words, ["leon"])
        for text in ["a\"b", "NEAR(lion tiger)", "x OR y NOT z", "{a b}: c", "^x + y"] {
            let query = SearchQuery(text: text, prefix: true)
            XCTAssertFalse(query.isEmpty)
            for word in query.words {
                XCTAssertTrue(word.allSatisfy { $0.isLetter || $0.isNumber }, "word \(word) of \(text)")
            }
            // Every token of the expression is a quoted word; only the last may carry `*`.
            let tokens = query.matchExpression.split(separator: " ")
            XCTAssertEqual(tokens.count, query.words.count)
            for (index, token) in tokens.enumerated() {
                let isLast = index == tokens.count - 1
                let body = isLast ? (token.hasSuffix("*") ? token.dropLast() : token) : token
                XCTAssertTrue(body.hasPrefix("\"") && body.hasSuffix("\"") && body.count >= 3, "token \(token) of \(text)")
                XCTAssertFalse(body.dropFirst().dropLast().contains("\""), "token \(token) of \(text)")
            }
        }
        XCTAssertTrue(SearchQuery(text: "\"*()-:", prefix: true).isEmpty)
    }

    func testSearchQuery_matches_usesWholeWordsAndAPrefixForTheLastOnly() {
        XCTAssertTrue(SearchQuery(text: "leon", prefix: false).matches("León"))
        XCTAssertFalse(SearchQuery(text: "leo", prefix: false).matches("leopard"))
        XCTAssertTrue(SearchQuery(text: "leo", prefix: true).matches("leopard"))
        XCTAssertTrue(SearchQuery(text: "snow leo", prefix: true).matches("Snow Leopard"))
        XCTAssertFalse(SearchQuery(text: "sno leopard", prefix: true).matches("Snow Leopard"))
    }
}
