import Foundation
import STOLProtocol

/// Text renderings of the richer taxonomy answers (detail, compare, relatives,
/// lineages), kept apart from the one-line forms in ``TextFormatter``.
extension TextFormatter {
    /// `9689  species  Panthera leo … (matched common name “lion”, score 104.5)`
    public static func searchLine(_ hit: Stol_V1_SearchHit) -> String {
        var line = (hit.fuzzy ? "~ " : "") + TextFormatter.line(hit.taxon)
        var notes: [String] = []
        if hit.matchType != .scientific || hit.matchedName != hit.taxon.scientificName {
            notes.append("matched \(matchType(hit.matchType)) name “\(hit.matchedName)”")
        }
        if hit.fuzzy { notes.append("edit distance \(hit.editDistance)") }
        notes.append(String(format: "score %.1f", hit.score))
        line += "   (" + notes.joined(separator: ", ") + ")"
        return line
    }

    /// `Eukaryota › Metazoa › … › Panthera`
    public static func breadcrumb(_ taxa: [Stol_V1_Taxon]) -> String {
        taxa.map(\.scientificName).joined(separator: " › ")
    }

    public static func detail(_ detail: Stol_V1_TaxonDetail) -> String {
        let taxon = detail.taxon
        var lines = [TextFormatter.detail(taxon)]
        if !detail.lineage.isEmpty { lines.append("  lineage:      \(breadcrumb(detail.lineage + [taxon]))") }
        if !detail.names.isEmpty {
            lines.append("  common names:")
            for group in detail.names {
                let names = group.names.map { $0.preferred ? "\($0.name) (preferred)" : $0.name }
                lines.append("    \(group.language): \(names.joined(separator: ", "))")
            }
        }
        if !detail.synonyms.isEmpty { lines.append("  synonyms:     \(detail.synonyms.joined(separator: "; "))") }
        if !detail.traits.isEmpty {
            lines.append("  traits:")
            for trait in detail.traits {
                lines.append("    \(trait.key): \(trait.value)\(trait.unit.isEmpty ? "" : " \(trait.unit)")")
            }
        }
        if !detail.references.isEmpty {
            lines.append("  references:")
            for reference in detail.references {
                lines.append("    [\(reference.refType)] \(reference.citation)\(reference.url.isEmpty ? "" : " <\(reference.url)>")")
            }
        }
        return lines.joined(separator: "\n")
    }

    public static func compare(_ result: Stol_V1_CompareResponse) -> String {
        var lines = [
            "A: \(line(result.taxonA))",
            "B: \(line(result.taxonB))",
        ]
        if result.hasLca {
            lines.append("common ancestor:  \(displayRank(result.lca)) \(result.lca.scientificName) (depth \(result.lcaDepth))")
        }
        // Both distances as the server defines them (protocol/PROTOCOL.md, `compare`).
        if result.hasDistanceMain {
            let main = "\(result.distanceMain) main-rank taxa below the common ancestor"
            let all = result.hasDistanceAll ? ", \(result.distanceAll) edge\(result.distanceAll == 1 ? "" : "s") of the source's tree" : ""
            lines.append("distance:         \(main)\(all)")
        }
        lines.append("path A → LCA:     \(result.pathA.map(\.scientificName).joined(separator: " > "))")
        lines.append("path B → LCA:     \(result.pathB.map(\.scientificName).joined(separator: " > "))")
        lines.append("shared clade:     \(result.sharedClade)")
        if result.hasTraitSimilarity {
            lines.append(String(format: "trait similarity: %.0f%% (Jaccard)", result.traitSimilarity * 100))
        }
        return lines.joined(separator: "\n")
    }

    public static func relatives(_ result: Stol_V1_RelativesResponse) -> String {
        let source = result.source == .computed ? "computed" : "precomputed"
        var lines = ["closest relatives of \(result.taxon.scientificName) (\(source))"]
        for relative in result.relatives {
            lines.append("\(relative.rankOrder).\t\(line(relative.taxon)) — distance \(relative.distance), "
                         + "same \(displayRank(relative.lca)) \(relative.lca.scientificName)")
        }
        if result.relatives.isEmpty { lines.append("(no other species in this database)") }
        if result.truncated {
            lines.append("note: stopped after \(result.candidatesExamined) candidates (--max-candidates); the list may not be exact")
        }
        return lines.joined(separator: "\n")
    }
}
