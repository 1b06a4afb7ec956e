import STOLModel
import STOLProtocol

/// `lineage_batch`'s `template`: every lineage of the answer written in a taxonkit-style
/// template (``LineageFormat``: placeholders, fill, prefixes) by the server, so that no
/// client keeps the template rules (docs/design/queries-and-algorithms.md §11).
///
/// The template fills from the ranks and names of the lineage, the taxon included, as
/// the answer carries them: the compact form's `lineage_ranks`, or the taxa form's
/// `source_rank` (else the main rank); the taxon's rank is its `source_rank`, else its
/// main rank. A batch asked in the ids form is worked out in the compact form, then
/// answered without the ranks and names.
struct LineageBatchTemplate {
    let format: LineageFormat
    /// Ids instead of names (`ids`): a missing rank is empty, as taxonkit's `-t` leaves it.
    let ids: Bool

    /// The template of a request, or `INVALID_REQUEST` naming the field (`format` or
    /// `fill`) and the placeholder or variable it does not know.
    init(_ template: Stol_V1_LineageTemplate) throws(TaxonomyError) {
        let fill: String? = template.fillMissing || !template.fill.isEmpty
            ? (template.fill.isEmpty ? LineageFormat.defaultFill : template.fill) : nil
        ids = template.ids
        let plain: LineageFormat
        do {
            plain = try LineageFormat(template.format, prefixRanks: template.prefixRanks)
        } catch {
            throw Self.refusal(error, field: "format")
        }
        do {
            let filled = try LineageFormat(template.format, fillMissing: fill, prefixRanks: template.prefixRanks)
            format = template.ids ? plain : filled
        } catch {
            throw Self.refusal(error, field: "fill")
        }
    }

    private static func refusal(_ error: LineageFormat.ParseError, field: String) -> TaxonomyError {
        var details = ["field": field]
        switch error {
        case .unknownPlaceholder(let name): details["placeholder"] = String(name.prefix(80))
        case .unknownFillVariable(let name): details["variable"] = String(name.prefix(80))
        case .unclosedBrace: break
        }
        return .invalidOption("\(field == "fill" ? "the fill template" : "the template"): \(error)", details: details)
    }

    /// The form to work the batch out in: the ids form carries no ranks to fill from.
    static func workingForm(for form: Stol_V1_LineageForm) -> Stol_V1_LineageForm {
        form == .ids || form == .nodes ? .compact : form
    }

    /// What Kraken's 0 (unclassified) is written as: the template with no rank filled.
    var unclassified: String { format.format(names: Self.noNames) }

    /// Fills `formatted` in every result that found a taxon, and the response's
    /// `unclassified`; then drops what the asked `form` does not carry.
    func apply(to response: inout Stol_V1_LineageBatchResponse, form: Stol_V1_LineageForm) {
        response.unclassified = unclassified
        for index in response.results.indices where response.results[index].hasTaxon && !response.results[index].hasError {
            response.results[index].formatted = formatted(response.results[index])
            if form == .ids || form == .nodes {  // with a template, the nodes form is the ids form
                response.results[index].lineageRanks = []
                response.results[index].lineageNames = []
            }
        }
    }

    private static let noNames = [String?](repeating: nil, count: LineageFormat.all.count)

    /// The template filled from one result: each placeholder takes the lowest node of its ranks.
    /// With `ids`, each takes that node's id instead of its name.
    func formatted(_ result: Stol_V1_LineageResult) -> String {
        if result.lineage.isEmpty {
            let count = result.lineageRanks.count
            return formatted(count: count + 1) { index in
                LineageFormat.slot(ofRank: index == count ? Self.rank(of: result.taxon) : result.lineageRanks[index])
            } value: { index in
                index == count ? (ids ? String(result.taxon.id) : result.taxon.scientificName)
                    : ids ? String(result.lineageIds[index]) : result.lineageNames[index]
            }
        }
        let lineage = result.lineage
        return formatted(count: lineage.count + 1) { index in
            LineageFormat.slot(ofRank: Self.rank(of: index == lineage.count ? result.taxon : lineage[index]))
        } value: { index in
            let taxon = index == lineage.count ? result.taxon : lineage[index]
            return ids ? String(taxon.id) : taxon.scientificName
        }
    }

    /// The same fill from NCBI's whole tree: the lineage's nodes root first, then the
    /// taxon's node, each rank's slot looked up once per rank of the tree, and only the
    /// names the template takes made into strings (a batch of lineages in the compact
    /// form made every name of every lineage one: 0.4 s of 100,000 lineages).
    func treeFormatter(_ tree: TaxonomyTree) -> ([Int], Int) -> String {
        let slots = tree.rankNames.map(LineageFormat.slot(ofRank:))
        return { lineage, taxon in
            formatted(count: lineage.count + 1) { index in
                slots[tree.rankCode(of: index == lineage.count ? taxon : lineage[index])]
            } value: { index in
                let node = index == lineage.count ? taxon : lineage[index]
                return ids ? String(tree.id(at: node)) : tree.name(of: node)
            }
        }
    }

    /// The one rule of both: of `count` nodes root first, each placeholder takes the
    /// lowest node whose rank is its (`slot`), written as `value` says.
    private func formatted(count: Int, slot: (Int) -> Int?, value: (Int) -> String) -> String {
        var lowest = [Int?](repeating: nil, count: LineageFormat.all.count)
        for index in 0..<count {
            if let slot = slot(index) { lowest[slot] = index }
        }
        return format.format(names: lowest.map { $0.map(value) })
    }

    /// A taxon's rank as a lineage line names it: the source's, else the main rank.
    static func rank(of taxon: Stol_V1_Taxon) -> String {
        taxon.sourceRank.isEmpty ? TaxonRank(taxon.rank)?.rawValue ?? "" : taxon.sourceRank
    }
}
