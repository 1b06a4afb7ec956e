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

    func testSearch_exactWord_findsTheTaxonByCommonName() throws {
        let found = try hits(harness.search("lion"))
        XCTAssertEqual(found.map(\.taxon.id), [9689])
        XCTAssertEqual(found.first?.matchedName, "lion")
        XCTAssertEqual(found.first?.matchType, .common)
        XCTAssertEqual(found.first?.taxon.scientificName, "Panthera leo")
        XCTAssertGreaterThan(found.first?.score ?? 0, 0)
    }

    func testSearch_exactWord_doesNotMatchAPrefix() throws {
        XCTAssertEqual(try hits(harness.search("panth")).count, 0)
        XCTAssertEqual(try hits(harness.search("cat")).map(\.taxon.id), [9685], "`cats` and `catus` are other words")
    }

    func testSearch_withPrefix_matchesTheLastWordAsAPrefix() throws {
        let panth = try hits(harness.search("panth", prefix: true))
        XCTAssertEqual(Set(panth.map(\.taxon.id)), [9688, 9689, 9690, 9691, 9694])
        XCTAssertTrue(panth.allSatisfy { $0.matchType == .scientific })
        let leo = Set(try hits(harness.search("leo", prefix: true)).map(\.taxon.id))
        XCTAssertEqual(leo, [9689, 9691], "`leo`, `león` and `leopard`")
        // Only the last word is a prefix.
        XCTAssertEqual(try hits(harness.search("pan leo", prefix: true)).count, 0)
    }

    func testSearch_multipleWords_mustAllMatch() throws {
        XCTAssertEqual(try hits(harness.search("Panthera leo")).map(\.taxon.id), [9689])
        XCTAssertEqual(try hits(harness.search("panthera tiger")).map(\.taxon.id), [9694], "words may match different columns")
        XCTAssertEqual(try hits(harness.search("lion tiger")).count, 0)
        let oak = try hits(harness.search("oak pedunculate"))
        XCTAssertEqual(oak.map(\.taxon.id), [38942])
        XCTAssertEqual(oak.first?.matchedName, "pedunculate oak")
    }

    func testSearch_commonNamesInOtherLanguages_matchWithDiacriticsFolded() throws {
        for query in ["leon", "león", "LEÓN", "Leon"] {
            let found = try hits(harness.search(query))
            XCTAssertEqual(found.map(\.taxon.id), [9689], query)
            XCTAssertEqual(found.first?.matchedName, "león", query)
            XCTAssertEqual(found.first?.matchType, .common, query)
        }
        XCTAssertEqual(try hits(harness.search("lowe")).first?.matchedName, "Löwe")
        XCTAssertEqual(try hits(harness.search("狮")).map(\.taxon.id), [9689])
        XCTAssertEqual(try hits(harness.search("roble")).map(\.taxon.id), [38942])
    }

    func testSearch_reportsTheCommonNameInTheRequestedLanguage() throws {
        let found = try hits(harness.search("leon", language: "es"))
        XCTAssertEqual(found.first?.taxon.commonName, "león")
        XCTAssertEqual(try hits(harness.search("leon")).first?.taxon.commonName, "lion")
    }

    func testSearch_whenCommonNamesInSeveralLanguagesMatch_reportsTheOneInTheRequestedLanguage() throws {
        // `huma` is a prefix of both `human` (en, preferred) and `humano` (es); `Homo sapiens` does not match.
        let english = try hits(harness.search("huma", prefix: true))
        XCTAssertEqual(english.map(\.taxon.id), [9606])
        XCTAssertEqual(english.first?.matchedName, "human")
        let spanish = try hits(harness.search("huma", prefix: true, language: "es"))
        XCTAssertEqual(spanish.map(\.taxon.id), [9606])
        XCTAssertEqual(spanish.first?.matchedName, "humano")
        XCTAssertEqual(spanish.first?.matchType, .common)
        XCTAssertEqual(spanish.first?.taxon.commonName, "humano")
    }

    func testSearch_synonymMatch_isReportedAsSynonymWithTheSynonymAsMatchedName() throws {
        let felisLeo = try hits(harness.search("Felis leo"))
        XCTAssertEqual(felisLeo.map(\.taxon.id), [9689])
        XCTAssertEqual(felisLeo.first?.matchType, .synonym)
        XCTAssertEqual(felisLeo.first?.matchedName, "Felis leo")
        XCTAssertEqual(felisLeo.first?.taxon.scientificName, "Panthera leo", "the hit is the accepted taxon")
        let uncia = try hits(harness.search("uncia"))
        XCTAssertEqual(uncia.map(\.taxon.id), [9688])
        XCTAssertEqual(uncia.first?.matchType, .synonym)
        XCTAssertEqual(uncia.first?.matchedName, "Uncia")
    }

    func testSearch_rankFilter_keepsOnlyThatRank() throws {
        let felis = Set(try hits(harness.search("felis")).map(\.taxon.id))
        XCTAssertEqual(felis, [9682, 9685, 9689, 9694], "the genus, the cat, and two synonyms")
        XCTAssertEqual(try hits(harness.search("felis", rank: .genus)).map(\.taxon.id), [9682])
        XCTAssertEqual(Set(try hits(harness.search("felis", rank: .species)).map(\.taxon.id)), [9685, 9689, 9694])
        XCTAssertEqual(try hits(harness.search("felis", rank: .family)).count, 0)
        XCTAssertTrue(try hits(harness.search("panth", prefix: true, rank: .species)).allSatisfy { $0.taxon.rank == .species })
    }

    func testSearch_unknownRank_answersInvalidRequest() {
        XCTAssertEqual(errorCode(harness.search("panthera", rank: .UNRECOGNIZED(42))), .invalidRequest)
    }

    func testSearch_limit_capsTheHitsAndAbove200IsInvalid() throws {
        XCTAssertEqual(try hits(harness.search("panthera", limit: 2)).count, 2)
        XCTAssertEqual(try hits(harness.search("panthera")).count, 5)
        XCTAssertEqual(try hits(harness.search("panthera", limit: 200)).count, 5)
        XCTAssertEqual(errorCode(harness.search("panthera", limit: 201)), .invalidRequest)
    }

    func testSearch_scientificNameMatchRanksTheExactTaxonFirst() throws {
        let found = try hits(harness.search("quercus robur"))
        XCTAssertEqual(found.first?.taxon.id, 38942)
        XCTAssertEqual(found.first?.matchType, .scientific)
        XCTAssertEqual(found.first?.matchedName, "Quercus robur")
    }

    // MARK: Hostile and empty input

    func testSearch_fts5SyntaxInUserText_neverAnswersInternal() throws {
        let queries = [
            "\"", "lion\"", "\"lion", "*", "lion*", "*lion", "(", "(lion", "lion)", "NEAR(lion tiger)", "NEAR(a b)",
            "-lion", "-x", "col:lion", "col:x", "scientific_name:leo", "{scientific_name}: leo", "lion AND tiger",
            "AND", "OR", "NOT", "lion OR", "NOT lion", "^lion", "lion + tiger", "'lion'", "lion:", ":", "\"\"\"",
            "a\"b*c(d)e:f-g^h", "NEAR", "near(lion, 2)", "lion NEAR/2 tiger", "\\", "%", "_", "lion;DROP TABLE taxa",
            String(repeating: "(", count: 300), "leó*n", "\u{0}lion", "ﬁsh", "Ｌｉｏｎ",
        ]
        for query in queries {
            let response = harness.search(query)
            XCTAssertNotEqual(errorCode(response), .internal, "query \(query.debugDescription)")
            let prefixed = harness.search(query, prefix: true)
            XCTAssertNotEqual(errorCode(prefixed), .internal, "prefix query \(query.debugDescription)")
        }
    }

    func testSearch_fts5OperatorsInUserText_areTreatedAsPlainWords() throws {
        XCTAssertEqual(hitIDs(harness.search("-lion")), [9689])
        XCTAssertEqual(hitIDs(harness.search("\"lion")), [9689])
        XCTAssertEqual(hitIDs(harness.search("(lion)")), [9689])
        XCTAssertEqual(hitIDs(harness.search("lion*")), [9689])
        XCTAssertEqual(hitIDs(harness.search("scientific_name:robur")), [], "a column filter is two plain words")
        XCTAssertEqual(hitIDs(harness.search("lion OR tiger")), [], "OR is a word, so all three must match")
        XCTAssertEqual(hitIDs(harness.search("Ｌｉｏｎ")), [9689], "full-width letters fold")
        XCTAssertEqual(errorCode(harness.search("lion AND tiger")), nil)
    }

    func testSearch_textWithoutLettersOrDigits_answersInvalidRequest() {
        for query in ["", " ", "\"", "*", "()", "-", ":", "\"*\"", "— …", "🦁"] {
            XCTAssertEqual(errorCode(harness.search(query)), .invalidRequest, "query \(query.debugDescription)")
        }
    }

    func testSearch_queryLongerThan512Bytes_answersInvalidRequest() {
        XCTAssertEqual(errorCode(harness.search(String(repeating: "a", count: 513))), .invalidRequest)
        XCTAssertEqual(errorCode(harness.search(String(repeating: "a", count: 512))), nil)
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
