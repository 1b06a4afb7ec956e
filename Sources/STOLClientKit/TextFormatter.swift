import Foundation
import STOLProtocol
import SwiftProtobuf

/// Human-readable and JSON renderings of answers.
///
/// JSON is the canonical protobuf JSON mapping with the `.proto` field names
/// (fields at their default value — false, 0, empty — are omitted, as that mapping
/// specifies), so scripts get the shape documented in protocol/PROTOCOL.md.
public enum TextFormatter {
    public static func json(_ message: some SwiftProtobuf.Message) -> String {
        var options = JSONEncodingOptions()
        options.preserveProtoFieldNames = true
        options.alwaysPrintInt64sAsNumbers = true
        return (try? message.jsonString(options: options)) ?? "{}"
    }

    /// `text` as a JSON string literal: quotes, backslashes and control characters escaped.
    public static func jsonString(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// `text` safe to print on a terminal: control characters (C0, DEL, C1) and the
    /// bidirectional overrides written as `\xNN` / `\u{NNNN}`, the rest as it is. Error
    /// messages and problems come from a more privileged process that may have relayed a
    /// less trusted one's text (the verifier's): an escape sequence in them must not reach
    /// the administrator's terminal as one.
    public static func escapingControlCharacters(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0..<0x20, 0x7f...0x9f:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\x" + (hex.count < 2 ? "0" : "") + hex
            case 0x202a...0x202e, 0x2066...0x2069, 0x200e, 0x200f, 0x061c:
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The client's own JSON objects (answers that are no protobuf message, such as
    /// `fav add` and `db status`, and errors): keys sorted, integers as integers,
    /// a nil optional left out. `{}` should encoding fail (a non-finite number).
    public static func json(_ value: some Encodable) -> String {
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The one encoder of those objects, shared by every call: keys sorted by their UTF-8 bytes.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    /// The source's rank when the answer carries it (the whole tree), else the main rank.
    public static func displayRank(_ taxon: Stol_V1_Taxon) -> String {
        taxon.sourceRank.isEmpty ? rankName(taxon.rank) : taxon.sourceRank
    }

    public static func rankName(_ rank: Stol_V1_Rank) -> String {
        switch rank {
        case .domain: "domain"
        case .kingdom: "kingdom"
        case .phylum: "phylum"
        case .class: "class"
        case .order: "order"
        case .family: "family"
        case .genus: "genus"
        case .species: "species"
        default: "unranked"
        }
    }

    public static func rank(named name: String) -> Stol_V1_Rank? {
        switch name.lowercased() {
        case "domain": .domain
        case "kingdom": .kingdom
        case "phylum": .phylum
        case "class": .class
        case "order": .order
        case "family": .family
        case "genus": .genus
        case "species": .species
        default: nil
        }
    }

    /// `9689  species  Panthera leo (Linnaeus, 1758) — lion  [VU]`
    public static func line(_ taxon: Stol_V1_Taxon, showChildren: Bool = false) -> String {
        var text = "\(taxon.id)\t\(displayRank(taxon))\t\(taxon.scientificName)"
        if !taxon.author.isEmpty { text += " \(taxon.author)" }
        if !taxon.commonName.isEmpty { text += " — \(taxon.commonName)" }
        if !taxon.conservation.isEmpty { text += "  [\(taxon.conservation)]" }
        if showChildren && taxon.childCount > 0 { text += "  (\(taxon.childCount) below)" }
        return text
    }

    public static func detail(_ taxon: Stol_V1_Taxon) -> String {
        var lines = [
            "\(taxon.scientificName)\(taxon.author.isEmpty ? "" : " " + taxon.author)",
            "  id:           \(taxon.id)",
            "  rank:         \(displayRank(taxon))",
        ]
        lines += treePlace(taxon)
        if !taxon.commonName.isEmpty { lines.append("  common name:  \(taxon.commonName)") }
        if taxon.hasYear { lines.append("  described:    \(taxon.year)") }
        if !taxon.conservation.isEmpty { lines.append("  IUCN status:  \(taxon.conservation)") }
        return lines.joined(separator: "\n")
    }

    /// The parent and child count in both trees, each labelled: the eight-rank view
    /// (what browsing shows) and the source's own tree (NCBI's parent of Mus musculus is
    /// subgenus Mus, 862507; the view's is genus Mus, 10088). A database without the
    /// whole tree has only the view's.
    static func treePlace(_ taxon: Stol_V1_Taxon) -> [String] {
        let source = "in the source's own tree"
        guard taxon.rank != .unspecified else {
            // Outside the view: its parent and children are the source's own.
            var lines = taxon.hasParentID ? ["  parent:       \(taxon.parentID) (\(source); this taxon has none of the eight ranks)"] : []
            if taxon.childCount > 0 || taxon.hasSourceChildCount { lines.append("  children:     \(taxon.childCount) \(source)") }
            return lines
        }
        var parent = taxon.hasParentID ? "\(taxon.parentID) (eight-rank view)" : "none in the eight-rank view"
        if taxon.hasSourceChildCount {
            parent += taxon.hasSourceParentID ? "; \(taxon.sourceParentID) \(source)" : "; a root \(source)"
        }
        var lines = taxon.hasParentID || taxon.hasSourceParentID ? ["  parent:       \(parent)"] : []
        if taxon.hasSourceChildCount {
            lines.append("  children:     \(taxon.childCount) (eight-rank view); \(taxon.sourceChildCount) \(source)")
        } else if taxon.childCount > 0 {
            lines.append("  children:     \(taxon.childCount) (eight-rank view)")
        }
        return lines
    }

    public static func databaseKind(_ kind: Stol_V1_DatabaseKind) -> String {
        switch kind {
        case .bundled: "bundled"
        case .reference: "reference"
        default: "unknown"
        }
    }

    public static func stage(_ stage: Stol_V1_ImportStage) -> String {
        switch stage {
        case .received: "received"
        case .checkingHeader: "checking header"
        case .verifyingChecksum: "verifying checksum"
        case .verifyingSignature: "verifying signature"
        case .decompressing: "decompressing"
        case .checkingDatabase: "checking database"
        case .installing: "installing"
        default: "working"
        }
    }

    public static func matchType(_ type: Stol_V1_MatchType) -> String {
        switch type {
        case .scientific: "scientific"
        case .common: "common"
        case .synonym: "synonym"
        default: "?"
        }
    }
}
