import STOLModel
import STOLTestFixtures
import XCTest

/// Lineage templates (``LineageFormat``: taxonkit's `reformat -f`), the rule the
/// server fills `lineage_batch`'s `template` with: placeholders in both spellings of
/// NCBI's top rank, taxonkit's fill, prefixes.
final class LineageFormatTests: XCTestCase {
    /// The lion's lineage in NCBI's spelling before 2025 (superkingdom) and since (domain).
    static func lion(_ top: String) -> [(rank: String, name: String)] {
        [("no rank", "root"), ("no rank", "cellular organisms"), (top, "Eukaryota"), ("clade", "Opisthokonta"),
         ("kingdom", "Metazoa"), ("phylum", "Chordata"), ("class", "Mammalia"), ("order", "Carnivora"),
         ("family", "Felidae"), ("subfamily", "Pantherinae"), ("genus", "Panthera"), ("species", "Panthera leo")]
    }

    func testEitherSpellingOfTheDomain_fillsEveryPlaceholderOfIt() throws {
        for template in ["{k}", "{d}", "{domain}", "{superkingdom}"] {
            let format = try LineageFormat(template + ";{K};{p}")
            for top in ["superkingdom", "domain"] {
                XCTAssertEqual(format.format(Self.lion(top)), "Eukaryota;Metazoa;Chordata", "\(template) on \(top)")
            }
        }
        XCTAssertEqual(try LineageFormat("{kingdom}|{phylum}|{class}|{order}|{family}|{genus}|{species}").format(Self.lion("domain")),
                       "Metazoa|Chordata|Mammalia|Carnivora|Felidae|Panthera|Panthera leo")
        // Viruses: the top was superkingdom Viruses before 2025, since then it is the acellular root,
        // with realms (formerly clades) under it.
        let old: [(rank: String, name: String)] = [("no rank", "root"), ("superkingdom", "Viruses"), ("clade", "Riboviria"),
                                                   ("kingdom", "Orthornavirae"), ("family", "Coronaviridae")]
        let new: [(rank: String, name: String)] = [("no rank", "root"), ("acellular root", "Viruses"), ("realm", "Riboviria"),
                                                   ("kingdom", "Orthornavirae"), ("family", "Coronaviridae")]
        let format = try LineageFormat("{k};{K};{f}")
        XCTAssertEqual(format.format(old), "Viruses;Orthornavirae;Coronaviridae")
        XCTAssertEqual(format.format(new), format.format(old))
        XCTAssertEqual(try LineageFormat("{r}|{realm}").format(new), "Riboviria|Riboviria")
        XCTAssertThrowsError(try LineageFormat("{subfamily}")) {
            XCTAssertEqual($0 as? LineageFormat.ParseError, .unknownPlaceholder("subfamily"))
        }
    }

    func testFillMissing_namesTheNearestRankAbove_asTaxonkitDoes() throws {
        let noGenus = Self.lion("domain").filter { $0.rank != "genus" && $0.rank != "order" }
        let format = try LineageFormat("{k};{p};{c};{o};{f};{g};{s}", fillMissing: LineageFormat.defaultFill)
        XCTAssertEqual(format.format(noGenus),
                       "Eukaryota;Chordata;Mammalia;unclassified Mammalia order;Felidae;unclassified Felidae genus;Panthera leo")
        // The nearest rank above among all placeholders' ranks, also those the template leaves out.
        XCTAssertEqual(try LineageFormat("{k};{g}", fillMissing: LineageFormat.defaultFill).format(noGenus),
                       "Eukaryota;unclassified Felidae genus")
        XCTAssertEqual(try LineageFormat("{g}", fillMissing: "{higher_rank}:{higher}/{rank}").format(noGenus), "family:Felidae/genus")
        // Ranks below the taxon are filled too (taxonkit without -T).
        let family = Array(Self.lion("superkingdom").prefix(9))
        XCTAssertEqual(try LineageFormat("{f};{g};{s}", fillMissing: LineageFormat.defaultFill).format(family),
                       "Felidae;unclassified Felidae genus;unclassified Felidae species")
        // Nothing above: a fill naming {higher} leaves it empty; one that does not fills it.
        let bare: [(rank: String, name: String)] = [("kingdom", "Metazoa")]
        XCTAssertEqual(try LineageFormat("{k};{K};{p}", fillMissing: LineageFormat.defaultFill).format(bare),
                       ";Metazoa;unclassified Metazoa phylum")
        XCTAssertEqual(try LineageFormat("{k};{K};{p}", fillMissing: "NA").format(bare), "NA;Metazoa;NA")
        XCTAssertThrowsError(try LineageFormat("{k}", fillMissing: "{parent}")) {
            XCTAssertEqual($0 as? LineageFormat.ParseError, .unknownFillVariable("parent"))
        }
        XCTAssertThrowsError(try LineageFormat("{k}", fillMissing: "{higher")) {
            XCTAssertEqual($0 as? LineageFormat.ParseError, .unclosedBrace)
        }
    }

    func testPrefixRanks_markEveryNonEmptyField_filledOnesToo() throws {
        let lion = Self.lion("superkingdom")
        XCTAssertEqual(try LineageFormat("{k};{K};{p};{c};{o};{f};{g};{s}", prefixRanks: true).format(lion),
                       "d__Eukaryota;k__Metazoa;p__Chordata;c__Mammalia;o__Carnivora;f__Felidae;g__Panthera;s__Panthera leo")
        XCTAssertEqual(try LineageFormat("{s};{S};{t};{r}", prefixRanks: true).format(lion), "s__Panthera leo;;;",
                       "an empty field has no prefix")
        XCTAssertEqual(try LineageFormat("{s};{S}", fillMissing: LineageFormat.defaultFill, prefixRanks: true).format(lion),
                       "s__Panthera leo;t__unclassified Panthera leo subspecies")
        XCTAssertEqual(try LineageFormat("{S}|{t}|{r}", prefixRanks: true).format(
            [("realm", "Riboviria"), ("subspecies", "a"), ("strain", "b")]), "t__a|T__b|r__Riboviria")
        XCTAssertEqual(try LineageFormat("k__{k}").format(lion), "k__Eukaryota", "MetaPhlAn's k__ for the domain: write it in the template")
    }

    /// What the whole-tree fast path hands ``LineageFormat/format(names:)``: the same as ``LineageFormat/format(_:)``.
    func testFormatByPlaceholder_isFormatByRank() throws {
        let format = try LineageFormat("{k};{K};{p};{c};{o};{f};{g};{s};{S};{t};{r}", fillMissing: LineageFormat.defaultFill,
                                       prefixRanks: true)
        var random = SplitMix64(for: self)
        let ranks = LineageFormat.rankSlots.map(\.rank) + ["no rank", "clade", "subfamily"]
        for _ in 0..<500 {
            let lineage = (0..<Int.random(in: 0...14, using: &random)).map { position in
                (rank: ranks.randomElement(using: &random)!, name: "n\(position)")
            }
            var names = [String?](repeating: nil, count: LineageFormat.all.count)
            for (rank, name) in lineage { if let slot = LineageFormat.slot(ofRank: rank) { names[slot] = name } }
            XCTAssertEqual(format.format(names: names), format.format(lineage), "\(lineage)")
        }
    }

    func testSevenRanks_asTaxonkitWritesThem_andMissingRanksEmpty() throws {
        let format = try LineageFormat("{k};{p};{c};{o};{f};{g};{s}")
        XCTAssertEqual(format.format(Self.lion("superkingdom")), "Eukaryota;Chordata;Mammalia;Carnivora;Felidae;Panthera;Panthera leo")
        XCTAssertEqual(try LineageFormat("{K}|{S}|{t}|k__{k}").format(Self.lion("superkingdom")), "Metazoa|||k__Eukaryota")
        // The main-rank view names the domain "domain".
        XCTAssertEqual(try LineageFormat("{k}").format([("domain", "Bacteria")]), "Bacteria")
    }

    func testABadTemplate_isATypedError() {
        XCTAssertThrowsError(try LineageFormat("{x};{p}")) { XCTAssertEqual($0 as? LineageFormat.ParseError, .unknownPlaceholder("x")) }
        XCTAssertThrowsError(try LineageFormat("{p")) { XCTAssertEqual($0 as? LineageFormat.ParseError, .unclosedBrace) }
        XCTAssertThrowsError(try LineageFormat("{pp}")) { XCTAssertEqual($0 as? LineageFormat.ParseError, .unknownPlaceholder("pp")) }
    }
}
