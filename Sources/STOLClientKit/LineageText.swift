import STOLModel
import STOLProtocol

/// The TSV lines of `stol-client lineage`: query, id, rank, scientific name, then the
/// lineage (names or ids, root first, `;`-separated, the taxon last; or a taxonkit
/// template filled); or query, error code, message.
public struct LineageTSV {
    public let ids: Bool
    public let template: LineageFormat?
    /// The ranks any placeholder of a template stands for: only their nodes can fill it.
    private static let placeholderRanks: [[UInt8]] = Set(LineageFormat.placeholders.values.joined()).map { Array($0.utf8) }

    public init(ids: Bool, template: LineageFormat?) {
        self.ids = ids
        self.template = template
    }

    /// The main rank a node of the whole tree has in the taxa form: the server's own
    /// mapping of the source's rank (`TaxonRank(sourceRank:)`, superkingdom → domain).
    public static func mainRank(_ sourceRank: String) -> Stol_V1_Rank {
        guard let rank = TaxonRank(sourceRank: sourceRank) else { return .unspecified }
        return Stol_V1_Rank(rawValue: rank.level + 1) ?? .unspecified
    }

    /// A decoded result's line (without its newline).
    public func line(_ result: Stol_V1_LineageResult) -> String {
        if result.hasError { return "\(result.query)\t\(result.error.code.name)\t\(result.error.message)" }
        let taxon = result.taxon
        let rank = taxon.sourceRank.isEmpty ? TextFormatter.rankName(taxon.rank) : taxon.sourceRank
        if let template {
            let lineage = Array(zip(result.lineageRanks, result.lineageNames)) + [(rank, taxon.scientificName)]
            return [result.query, String(taxon.id), rank, taxon.scientificName,
                    template.format(lineage.map { (rank: $0.0, name: $0.1) })].joined(separator: "\t")
        }
        let lineage = ids ? (result.lineageIds + [taxon.id]).map(String.init)
            : result.lineageNames.isEmpty && !result.lineage.isEmpty ? (result.lineage + [taxon]).map(\.scientificName)
            : result.lineageNames + [taxon.scientificName]
        return [result.query, String(taxon.id), rank, taxon.scientificName, lineage.joined(separator: ";")]
            .joined(separator: "\t")
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
        if let template {
            // Only the nodes of a placeholder's ranks can fill the template (LineageFormat.format
            // looks up nothing else), so only theirs become strings.
            var lineage: [(rank: String, name: String)] = []
            for offset in 0..<min(result.ranks.count, result.names.count) {
                let rankBytes = UnsafeBufferPointer(rebasing: bytes[index.ranks[result.ranks.lowerBound + offset]])
                guard Self.placeholderRanks.contains(where: { $0.elementsEqual(rankBytes) }) else { continue }
                lineage.append((String(decoding: rankBytes, as: UTF8.self),
                                String(decoding: UnsafeBufferPointer(rebasing: bytes[index.names[result.names.lowerBound + offset]]),
                                       as: UTF8.self)))
            }
            lineage.append((rank, taxon.scientificName))
            out.append(contentsOf: template.format(lineage).utf8)
        } else if ids {
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
}
