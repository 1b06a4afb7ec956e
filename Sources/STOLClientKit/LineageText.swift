import STOLModel
import STOLProtocol

/// The TSV lines of `stol-client lineage`: query, id, rank, scientific name, then the
/// lineage (names or ids, root first, `;`-separated, the taxon last; or a taxonkit
/// template filled, or both: the lineage, then the template as a last column); or
/// query, error code, message. A template is filled by the server (`lineage_batch`'s
/// `template`, each result's `formatted`): these lines only place its text.
public struct LineageTSV {
    public let ids: Bool
    /// With a template (`--format`): the server's `unclassified`, the template filled
    /// from an empty lineage, for Kraken's 0; nil without a template.
    public let unclassified: String?
    /// With a template: the lineage column is kept and the filled template follows it.
    public let keepLineage: Bool

    public init(ids: Bool, unclassified: String? = nil, keepLineage: Bool = false) {
        self.ids = ids
        self.unclassified = unclassified
        self.keepLineage = keepLineage && unclassified != nil
    }

    /// Whether the lines carry a filled template.
    public var hasTemplate: Bool { unclassified != nil }

    /// The line of column names (`--column-names`): `query id rank name lineage`, the last
    /// one `format` when the template replaces the lineage, and `format` after it when both are written.
    public var columnNames: String {
        let last = !hasTemplate ? ["lineage"] : keepLineage ? ["lineage", "format"] : ["format"]
        return (["query", "id", "rank", "name"] + last).joined(separator: "\t")
    }

    /// The line of Kraken's `0` (unclassified), a query never sent: id 0, rank `no rank`, name
    /// `unclassified`, an empty lineage (a template filled from nothing).
    public func unclassifiedLine(query: String) -> String {
        var line = "\(query)\t0\tno rank\tunclassified\t"
        if let unclassified { line += (keepLineage ? "\t" : "") + unclassified }
        return line
    }

    /// The main rank a node of the whole tree has in the taxa form: the server's own
    /// mapping of the source's rank (`TaxonRank(sourceRank:)`, superkingdom → domain).
    public static func mainRank(_ sourceRank: String) -> Stol_V1_Rank {
        TaxonRank(sourceRank: sourceRank).map { Stol_V1_Rank($0) } ?? .unspecified
    }

    /// A decoded result's line (without its newline).
    public func line(_ result: Stol_V1_LineageResult) -> String {
        if result.hasError { return "\(result.query)\t\(result.error.code.name)\t\(result.error.message)" }
        let taxon = result.taxon
        let rank = taxon.sourceRank.isEmpty ? TextFormatter.rankName(taxon.rank) : taxon.sourceRank
        var columns = [result.query, String(taxon.id), rank, taxon.scientificName]
        if !hasTemplate || keepLineage {
            let lineage = ids ? (result.lineageIds + [taxon.id]).map(String.init)
                : result.lineageNames.isEmpty && !result.lineage.isEmpty ? (result.lineage + [taxon]).map(\.scientificName)
                : result.lineageNames + [taxon.scientificName]
            columns.append(lineage.joined(separator: ";"))
        }
        if hasTemplate { columns.append(result.formatted) }
        return columns.joined(separator: "\t")
    }

    /// A found query's line of the packed form (``PackedLineages``): the same bytes as
    /// ``line(_:)`` of the ids form's result. `ids`: its lineage, the taxon last.
    public func append(query: String, taxon: Stol_V1_LineageNode, ids: ArraySlice<Int64>, to out: inout [UInt8]) {
        let tab = UInt8(ascii: "\t"), semicolon = UInt8(ascii: ";")
        out.append(contentsOf: query.utf8)
        out.append(tab)
        ProtobufJSONWriter.appendInt(taxon.id, to: &out)
        out.append(tab)
        out.append(contentsOf: (taxon.rank.isEmpty ? TextFormatter.rankName(.unspecified) : taxon.rank).utf8)
        out.append(tab)
        out.append(contentsOf: taxon.name.utf8)
        out.append(tab)
        for (index, id) in ids.enumerated() {
            if index > 0 { out.append(semicolon) }
            ProtobufJSONWriter.appendInt(id, to: &out)
        }
    }

    /// A result read in place (``LineageBatchIndex``) from `bytes`, the answer's: the same
    /// bytes as ``line(_:)`` of the decoded result, copied from the answer without a
    /// `String` per name.
    public func append(_ result: LineageBatchIndex.Result, of index: LineageBatchIndex,
                       in bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) throws {
        guard result.plain, let taxon = result.taxon else {
            out.append(contentsOf: line(try LineageBatchIndex.decode(result, in: bytes)).utf8)
            return
        }
        let tab = UInt8(ascii: "\t"), semicolon = UInt8(ascii: ";")
        if let query = result.query { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[query])) }
        out.append(tab)
        ProtobufJSONWriter.appendInt(taxon.id, to: &out)
        out.append(tab)
        let rank = taxon.sourceRank.isEmpty ? TextFormatter.rankName(taxon.rank) : taxon.sourceRank
        out.append(contentsOf: rank.utf8)
        out.append(tab)
        out.append(contentsOf: taxon.scientificName.utf8)
        out.append(tab)
        if !hasTemplate || keepLineage {
            if ids {
                for id in index.ids[result.ids] {
                    ProtobufJSONWriter.appendInt(id, to: &out)
                    out.append(semicolon)
                }
                ProtobufJSONWriter.appendInt(taxon.id, to: &out)
            } else {
                for name in index.names[result.names] {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[name]))
                    out.append(semicolon)
                }
                out.append(contentsOf: taxon.scientificName.utf8)
            }
        }
        if hasTemplate {
            if keepLineage { out.append(tab) }
            if let formatted = result.formatted { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[formatted])) }
        }
    }
}
