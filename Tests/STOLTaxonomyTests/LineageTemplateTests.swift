import STOLModel
import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Lineage templates on the server (`lineage_batch`'s `template`, taxonkit's
/// `reformat`): placeholders and their 2024 and 2025 spellings, the lowest node of a
/// rank, fill (the default and one's own, with and without `{higher}`), prefixes, the
/// empty lineage of Kraken's 0, every form and both views, and typed refusals of bad
/// templates, over ``DomainRulesFixture``.
final class LineageTemplateTests: XCTestCase {
    static let seven = "{k};{p};{c};{o};{f};{g};{s}"
    static let every = "{k}|{r}|{K}|{p}|{c}|{o}|{f}|{g}|{s}|{S}|{t}"

    private func batch(_ harness: ServiceHarness, _ queries: [String], _ format: String, fill: String? = nil,
                       fillMissing: Bool = false, prefix: Bool = false, ranks: Stol_V1_RankView = .all,
                       form: Stol_V1_LineageForm = .compact) async throws -> Stol_V1_LineageBatchResponse {
        var request = Stol_V1_LineageBatchRequest()
        request.queries = queries
        request.ranks = ranks
        request.form = form
        request.template.format = format
        request.template.fillMissing = fillMissing
        if let fill { request.template.fill = fill }
        request.template.prefixRanks = prefix
        let response = await harness.send(.lineageBatch(request))
        guard case .lineageBatch(let answer)? = response.result else { throw TestSupportError("expected a batch, got \(response)") }
        return answer
    }

    private func texts(_ harness: ServiceHarness, _ queries: [String], _ format: String, fill: String? = nil,
                       fillMissing: Bool = false, prefix: Bool = false, ranks: Stol_V1_RankView = .all) async throws -> [String] {
        try await batch(harness, queries, format, fill: fill, fillMissing: fillMissing, prefix: prefix, ranks: ranks).results.map(\.formatted)
    }

    func testPlaceholders_takeTheirRanksNames_in2024And2025Spellings_theLowestNodeOfARankCounts() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let seven = try await texts(harness, ["9689", "562", "Escherichia coli"], Self.seven)
        XCTAssertEqual(seven, ["Eukaryota;Chordata;Mammalia;Carnivora;Felidae;Panthera;Panthera leo",
                               "Bacteria;Pseudomonadota;Gammaproteobacteria;Enterobacterales;Enterobacteriaceae;Escherichia;Escherichia coli",
                               "Bacteria;Pseudomonadota;Gammaproteobacteria;Enterobacterales;Enterobacteriaceae;Escherichia;Escherichia coli"])
        let virus = try await texts(harness, ["2697049"], Self.every)
        XCTAssertEqual(virus, ["Viruses|Riboviria|Orthornavirae|Pisuviricota|Pisoniviricetes|Nidovirales|Coronaviridae|"
                               + "Betacoronavirus|Betacoronavirus pandemicum||"], "acellular root is the domain; the realm its own")
        let strains = try await texts(harness, ["511145"], "{s}|{t}")
        XCTAssertEqual(strains, ["Escherichia coli|Escherichia coli str. K-12 substr. MG1655"], "the lower of two strains")
        let names = try await texts(harness, ["9695"], "{domain}/{superkingdom}/{d}/{kingdom}/{division}/{phylum}/{genus}/{subspecies}/<{S}> } x")
        XCTAssertEqual(names, ["Eukaryota/Eukaryota/Eukaryota/Metazoa/Chordata/Chordata/Panthera/Panthera leo persica/<Panthera leo persica> } x"])
        let empty = try await texts(harness, ["9689"], "")
        XCTAssertEqual(empty, [""])
    }

    func testFill_defaultNamesTheNearestPlaceholderAbove_ownTemplates_andNothingAboveTheTop() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let defaults = try await texts(harness, ["511145"], "{K};{c};{g};{S}", fillMissing: true)
        XCTAssertEqual(defaults, ["unclassified Bacteria kingdom;Gammaproteobacteria;Escherichia;unclassified Escherichia coli subspecies"])
        let own = try await texts(harness, ["511145"], "{K}|{S}", fill: "{rank} under {higher_rank} {higher}")
        XCTAssertEqual(own, ["kingdom under domain Bacteria|subspecies under species Escherichia coli"], "a fill implies filling")
        let top = try await texts(harness, ["9695"], "{k}|{r}|{p}", fillMissing: true)
        XCTAssertEqual(top, ["Eukaryota||Chordata"], "the realm is at the top: nothing above it to name")
        let plain = try await texts(harness, ["9695"], "{k}|{r}|{t}", fill: "NA")
        XCTAssertEqual(plain, ["Eukaryota|NA|NA"], "a fill without {higher} fills even the top")
        let unfilled = try await texts(harness, ["9695"], "{k}|{r}|{t}")
        XCTAssertEqual(unfilled, ["Eukaryota||"])
    }

    func testPrefixes_onNonEmptyFields_fillsIncluded() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let prefixed = try await texts(harness, ["9695"], Self.every, fillMissing: true, prefix: true)
        XCTAssertEqual(prefixed, ["d__Eukaryota||k__Metazoa|p__Chordata|c__Mammalia|o__Carnivora|f__Felidae|g__Panthera|"
                                  + "s__Panthera leo|t__Panthera leo persica|T__unclassified Panthera leo persica strain"])
        let virus = try await texts(harness, ["2697049"], "{r};{k}", prefix: true)
        XCTAssertEqual(virus, ["r__Riboviria;d__Viruses"])
    }

    func testUnclassified_isTheTemplateFilledFromNothing_andErrorsHaveNoText() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let filled = try await batch(harness, ["424242", "9689", "0"], Self.seven, fillMissing: true, prefix: true)
        XCTAssertEqual(filled.unclassified, ";;;;;;")
        XCTAssertEqual(filled.results.map(\.formatted),
                       ["", "d__Eukaryota;p__Chordata;c__Mammalia;o__Carnivora;f__Felidae;g__Panthera;s__Panthera leo", ""])
        XCTAssertEqual(filled.results.map(\.hasError), [true, false, true])
        let na = try await batch(harness, [], Self.seven, fill: "x")
        XCTAssertEqual(na.unclassified, "x;x;x;x;x;x;x")
        XCTAssertTrue(na.results.isEmpty)
        var plain = Stol_V1_LineageBatchRequest()
        plain.queries = ["9689"]
        guard case .lineageBatch(let untouched)? = await harness.send(.lineageBatch(plain)).result else { return XCTFail("no batch") }
        XCTAssertEqual(untouched.unclassified, "", "no template, no text")
        XCTAssertEqual(untouched.results.map(\.formatted), [""])
    }

    /// Every form fills the same text; the ids form still carries ids only.
    func testEveryForm_andTheMainView_fillAlike() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let queries = RankRulesTests.queries + ["Panthera leo", "12345"]
        for ranks in [Stol_V1_RankView.all, .main] {
            let compact = try await batch(harness, queries, Self.every, fillMissing: true, ranks: ranks, form: .compact)
            let taxa = try await batch(harness, queries, Self.every, fillMissing: true, ranks: ranks, form: .taxa)
            let ids = try await batch(harness, queries, Self.every, fillMissing: true, ranks: ranks, form: .ids)
            XCTAssertEqual(taxa.results.map(\.formatted), compact.results.map(\.formatted), "\(ranks)")
            XCTAssertEqual(ids.results.map(\.formatted), compact.results.map(\.formatted), "\(ranks)")
            XCTAssertEqual(ids.results.map(\.lineageIds), compact.results.map(\.lineageIds))
            XCTAssertTrue(ids.results.allSatisfy { $0.lineageNames.isEmpty && $0.lineageRanks.isEmpty })
            XCTAssertTrue(compact.results.allSatisfy { !$0.formatted.isEmpty || $0.hasError })
        }
        let main = try await texts(harness, ["9695", "511145"], "{g};{s};{S};{t}", ranks: .main)
        XCTAssertEqual(main, ["Panthera;Panthera leo;Panthera leo persica;", "Escherichia;Escherichia coli;;Escherichia coli str. K-12 substr. MG1655"],
                       "on the main ranks a node outside them fills its own rank's placeholder")
    }

    /// The text is what ``LineageFormat`` writes from the answer's ranks and names (the
    /// rendering `stol-client lineage --format` does itself until it asks for it).
    func testTheText_isLineageFormatOfTheAnswersOwnRanksAndNames_forEveryNode() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let format = try LineageFormat(Self.every, fillMissing: "{higher_rank}:{higher}/{rank}", prefixRanks: true)
        let answer = try await batch(harness, RankRulesTests.queries, Self.every, fill: "{higher_rank}:{higher}/{rank}", prefix: true)
        for result in answer.results {
            let rank = result.taxon.sourceRank
            let pairs = Array(zip(result.lineageRanks, result.lineageNames)) + [(rank, result.taxon.scientificName)]
            XCTAssertEqual(result.formatted, format.format(pairs.map { (rank: $0.0, name: $0.1) }), result.query)
        }
    }

    func testBadTemplates_failTheWholeRequest_typed_namingTheFieldAndPlaceholder() async throws {
        let harness = try await DomainRulesFixture.harness(self)
        let cases: [(String, String?, String, [String: String])] = [
            ("{x};{p}", nil, "unknown placeholder {x}", ["field": "format", "placeholder": "x"]),
            ("{Domain}", nil, "unknown placeholder {Domain}", ["field": "format", "placeholder": "Domain"]),
            ("{p", nil, "a '{' without its '}'", ["field": "format"]),
            ("{k}", "{foo}", "unknown variable {foo} in the fill template", ["field": "fill", "variable": "foo"]),
            ("{k}", "{higher", "a '{' without its '}'", ["field": "fill"]),
            ("{k}", "{k}", "unknown variable {k}", ["field": "fill", "variable": "k"]),
        ]
        for (format, fill, message, details) in cases {
            var request = Stol_V1_LineageBatchRequest()
            request.queries = ["9689"]
            request.ranks = .all
            request.template.format = format
            if let fill { request.template.fill = fill }
            guard case .error(let error)? = await harness.send(.lineageBatch(request)).result else {
                XCTFail("\(format) \(fill ?? ""): answered"); continue
            }
            XCTAssertEqual(error.code, .invalidRequest)
            XCTAssertTrue(error.message.contains(message), error.message)
            XCTAssertEqual(error.details, details)
        }
    }
}
