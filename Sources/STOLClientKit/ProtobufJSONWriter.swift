import STOLProtocol
import SwiftProtobuf

/// The JSON lines of the batch commands (`lineage --jsonl`, `compare --batch --jsonl`),
/// written straight into a byte buffer.
///
/// Each function appends exactly the bytes ``TextFormatter/json(_:)-(Message)``
/// gives for the same message — the protobuf JSON mapping with the `.proto` field
/// names, int64 as numbers, fields at their default value left out, fields in
/// field-number order, strings escaped as swift-protobuf escapes them — without
/// swift-protobuf's reflective visitor, which cost 1.5 s of the client's CPU per
/// 100,000 whole-tree lineages (four times the TSV form). One difference: an error's
/// `details` map is written with its keys sorted (swift-protobuf's
/// `useDeterministicOrdering`), where the encoder without that option follows Swift's
/// per-process hash order. Only the messages these commands print are covered;
/// anything else goes through ``TextFormatter``. Tests/STOLClientKitTests pins the
/// equality, escaping included.
public enum ProtobufJSONWriter {
    // MARK: Messages

    /// A `LineageResult`, any form (`taxa`, `compact`, `ids`).
    public static func append(_ result: Stol_V1_LineageResult, to out: inout [UInt8]) {
        var first = true
        out.append(UInt8(ascii: "{"))
        if !result.query.isEmpty { key("query", &first, &out); appendString(result.query, to: &out) }
        if result.hasTaxon { key("taxon", &first, &out); append(result.taxon, to: &out) }
        if !result.lineage.isEmpty { key("lineage", &first, &out); appendArray(result.lineage, to: &out) { append($0, to: &$1) } }
        if result.hasError { key("error", &first, &out); append(result.error, to: &out) }
        if !result.lineageIds.isEmpty { key("lineage_ids", &first, &out); appendArray(result.lineageIds, to: &out) { appendInt($0, to: &$1) } }
        if !result.lineageRanks.isEmpty { key("lineage_ranks", &first, &out); appendStrings(result.lineageRanks, to: &out) }
        if !result.lineageNames.isEmpty { key("lineage_names", &first, &out); appendStrings(result.lineageNames, to: &out) }
        if result.mergedFrom != 0 { key("merged_from", &first, &out); appendInt(result.mergedFrom, to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    /// A `CompareBatchResult`.
    public static func append(_ result: Stol_V1_CompareBatchResult, to out: inout [UInt8]) {
        var first = true
        out.append(UInt8(ascii: "{"))
        if !result.a.isEmpty { key("a", &first, &out); appendString(result.a, to: &out) }
        if !result.b.isEmpty { key("b", &first, &out); appendString(result.b, to: &out) }
        if result.aID != 0 { key("a_id", &first, &out); appendInt(result.aID, to: &out) }
        if result.bID != 0 { key("b_id", &first, &out); appendInt(result.bID, to: &out) }
        if result.lcaID != 0 { key("lca_id", &first, &out); appendInt(result.lcaID, to: &out) }
        if !result.lcaRank.isEmpty { key("lca_rank", &first, &out); appendString(result.lcaRank, to: &out) }
        if !result.lcaName.isEmpty { key("lca_name", &first, &out); appendString(result.lcaName, to: &out) }
        if result.distanceMain != 0 { key("distance_main", &first, &out); appendInt(Int64(result.distanceMain), to: &out) }
        if result.hasDistanceAll { key("distance_all", &first, &out); appendInt(Int64(result.distanceAll), to: &out) }
        if result.unrelated { key("unrelated", &first, &out); out.append(contentsOf: "true".utf8) }
        if result.hasError { key("error", &first, &out); append(result.error, to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    /// A `Taxon`.
    public static func append(_ taxon: Stol_V1_Taxon, to out: inout [UInt8]) {
        var first = true
        out.append(UInt8(ascii: "{"))
        if taxon.id != 0 { key("id", &first, &out); appendInt(taxon.id, to: &out) }
        if taxon.hasParentID { key("parent_id", &first, &out); appendInt(taxon.parentID, to: &out) }
        if taxon.rank != .unspecified { key("rank", &first, &out); out.append(contentsOf: rankJSON(taxon.rank)) }
        if !taxon.scientificName.isEmpty { key("scientific_name", &first, &out); appendString(taxon.scientificName, to: &out) }
        if !taxon.author.isEmpty { key("author", &first, &out); appendString(taxon.author, to: &out) }
        if taxon.hasYear { key("year", &first, &out); appendInt(Int64(taxon.year), to: &out) }
        if taxon.status != .unspecified { key("status", &first, &out); out.append(contentsOf: statusJSON(taxon.status)) }
        if !taxon.conservation.isEmpty { key("conservation", &first, &out); appendString(taxon.conservation, to: &out) }
        if !taxon.commonName.isEmpty { key("common_name", &first, &out); appendString(taxon.commonName, to: &out) }
        if taxon.childCount != 0 { key("child_count", &first, &out); appendInt(Int64(taxon.childCount), to: &out) }
        if !taxon.sourceRank.isEmpty { key("source_rank", &first, &out); appendString(taxon.sourceRank, to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    /// An `Error`: its `details` map with the keys in order, as swift-protobuf writes maps.
    public static func append(_ error: Stol_V1_Error, to out: inout [UInt8]) {
        var first = true
        out.append(UInt8(ascii: "{"))
        if error.code != .unspecified { key("code", &first, &out); out.append(contentsOf: errorCodeJSON(error.code)) }
        if !error.message.isEmpty { key("message", &first, &out); appendString(error.message, to: &out) }
        if !error.details.isEmpty {
            key("details", &first, &out)
            out.append(UInt8(ascii: "{"))
            for (index, name) in error.details.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(name, to: &out)
                out.append(UInt8(ascii: ":"))
                appendString(error.details[name] ?? "", to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
    }

    // MARK: Values

    /// `text` as a JSON string literal, escaped byte for byte as swift-protobuf's
    /// `JSONEncoder` escapes a string field: `"` and `\`, `\b \t \n \f \r`, every
    /// other C0 control, DEL and the C1 controls (U+0080–U+009F) as `\u00XX` with
    /// upper-case hex digits; everything else, non-ASCII included, as its UTF-8.
    public static func appendString(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendString(utf8: $0, to: &out) }
    }

    /// UTF-8 bytes as a JSON string literal, escaped as ``appendString(_:to:)`` escapes.
    public static func appendString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var start = 0  // bytes[start..<index] are copied as they are
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            let escapedLength: Int
            if byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte < 0x7F {
                index += 1
                continue
            } else if byte >= 0x80 {
                // U+0080–U+009F are C2 80–C2 9F; every other non-ASCII byte is copied.
                guard byte == 0xC2, index + 1 < count, bytes[index + 1] < 0xA0 else { index += 1; continue }
                escapedLength = 2
            } else {
                escapedLength = 1
            }
            if start < index { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index])) }
            let value = escapedLength == 2 ? bytes[index + 1] : byte
            switch value {
            case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            default:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hexDigits[Int(value >> 4)])
                out.append(hexDigits[Int(value & 15)])
            }
            index += escapedLength
            start = index
        }
        if start < count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<count])) }
        out.append(UInt8(ascii: "\""))
    }

    /// A decimal integer, as the protobuf JSON mapping writes int64 with `alwaysPrintInt64sAsNumbers`.
    public static func appendInt(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        if magnitude < 10 { out.append(UInt8(ascii: "0") + UInt8(magnitude)); return }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for the 20 digits of UInt64.max
        withUnsafeMutableBytes(of: &digits) { buffer in
            var end = buffer.count
            while magnitude > 0 {
                end -= 1
                buffer[end] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[end...]))
        }
    }

    private static func appendStrings(_ strings: [String], to out: inout [UInt8]) {
        appendArray(strings, to: &out) { appendString($0, to: &$1) }
    }

    /// `[a,b,…]`, each element written by `element`.
    private static func appendArray<Element>(_ elements: [Element], to out: inout [UInt8],
                                             element: (Element, inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "["))
        for (index, item) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            element(item, &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    // MARK: Enums, spelled by swift-protobuf itself

    /// An enum value as the JSON mapping writes it (`"RANK_SPECIES"`, or the number of a
    /// value this build does not know), taken once per value from swift-protobuf's own
    /// encoding of a one-field message, so that the names can never drift from it.
    private struct EnumSpellings: Sendable {
        let known: [[UInt8]]

        init(count: Int, _ encode: (Int) -> String, key: String) {
            let prefix = "{\"\(key)\":"
            known = (0..<count).map { raw in
                let json = encode(raw)
                guard json.hasPrefix(prefix), json.hasSuffix("}") else { return Array(String(raw).utf8) }
                return Array(json.dropFirst(prefix.count).dropLast().utf8)
            }
        }

        func bytes(_ raw: Int) -> [UInt8] {
            raw >= 0 && raw < known.count ? known[raw] : Array(String(raw).utf8)
        }
    }

    private static let ranks = EnumSpellings(count: 16, { raw in
        TextFormatter.json(Stol_V1_Taxon.with { $0.rank = Stol_V1_Rank(rawValue: raw) ?? .unspecified })
    }, key: "rank")
    private static let statuses = EnumSpellings(count: 16, { raw in
        TextFormatter.json(Stol_V1_Taxon.with { $0.status = Stol_V1_TaxonStatus(rawValue: raw) ?? .unspecified })
    }, key: "status")
    private static let errorCodes = EnumSpellings(count: 64, { raw in
        TextFormatter.json(Stol_V1_Error.with { $0.code = Stol_V1_ErrorCode(rawValue: raw) ?? .unspecified })
    }, key: "code")

    static func rankJSON(_ rank: Stol_V1_Rank) -> [UInt8] { ranks.bytes(rank.rawValue) }
    static func statusJSON(_ status: Stol_V1_TaxonStatus) -> [UInt8] { statuses.bytes(status.rawValue) }
    static func errorCodeJSON(_ code: Stol_V1_ErrorCode) -> [UInt8] { errorCodes.bytes(code.rawValue) }

    // MARK: Objects

    /// A literal's bytes (no array to retain).
    @inline(__always)
    static func appendStatic(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// `"name":` after a `,` unless it is the object's first key (names are the
    /// `.proto` field names: ASCII letters and `_`, nothing to escape).
    @inline(__always)
    static func key(_ name: StaticString, _ first: inout Bool, _ out: inout [UInt8]) {
        if first { first = false } else { out.append(UInt8(ascii: ",")) }
        out.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }
}

/// `lineage --ranks all --jsonl`: a lineage of NCBI's whole tree (`RANK_VIEW_ALL`)
/// answered in the compact form, written as the JSON of the taxa form of the same
/// answer, at a fraction of the cost for the server and the client. On the whole tree
/// a lineage node of the taxa form carries exactly its `id`, its parent's id
/// (`parent_id`: the node before it; none for the root, which comes first), its main
/// rank (`rank`: `mainRank(source_rank)`), `scientific_name`, status ACCEPTED and
/// `source_rank`, all of which the compact arrays hold (PROTOCOL.md §4, "Lineage
/// batches"); `taxon`, `error` and `merged_from` are the same in both forms. A result
/// that is not compact-shaped (a server that answered the taxa form anyway) is written
/// as it is.
public struct WholeTreeLineageJSON {
    private let mainRank: (String) -> Stol_V1_Rank
    /// Per source rank (the few dozen NCBI has), the bytes of a lineage node around its
    /// name, in `fragmentBytes`: `,"rank":"RANK_…"` before it (empty for no main rank)
    /// and `,"status":"TAXON_STATUS_ACCEPTED","source_rank":"…"}` after it. A rank of up
    /// to 16 bytes is found by a hash of its bytes in `slots` (a Dictionary's SipHash,
    /// and the retains of arrays of arrays, cost a third of the client's time), a
    /// longer one in `overflow`.
    private var slots: [(key: RankKey, fragments: Int)?] = Array(repeating: nil, count: 256)
    private var overflow: [[UInt8]: Int] = [:]
    private var fragmentBytes: [UInt8] = []
    private var fragments: [(before: Range<Int>, after: Range<Int>)] = []
    /// The fragments of each node of the lineage being written.
    private var nodeFragments: [Int] = []

    private struct RankKey: Equatable {
        var count: Int
        var low: UInt64 = 0
        var high: UInt64 = 0

        init?(_ rank: UnsafeBufferPointer<UInt8>) {
            guard rank.count <= 16 else { return nil }
            count = rank.count
            withUnsafeMutableBytes(of: &low) { low in
                for (index, byte) in rank.prefix(8).enumerated() { low[index] = byte }
            }
            withUnsafeMutableBytes(of: &high) { high in
                for (index, byte) in rank.dropFirst(8).enumerated() { high[index] = byte }
            }
        }
    }

    public init(mainRank: @escaping (String) -> Stol_V1_Rank) { self.mainRank = mainRank }

    /// A decoded result.
    public mutating func append(_ result: Stol_V1_LineageResult, to out: inout [UInt8]) {
        let ids = result.lineageIds, ranks = result.lineageRanks, names = result.lineageNames
        // Not compact-shaped (the taxa form), or an id 0 no source has: the general writer.
        guard result.lineage.isEmpty, ranks.count == ids.count, names.count == ids.count, !ids.contains(0) else {
            ProtobufJSONWriter.append(result, to: &out)
            return
        }
        typealias W = ProtobufJSONWriter
        var first = true
        out.append(UInt8(ascii: "{"))
        if !result.query.isEmpty { W.key("query", &first, &out); W.appendString(result.query, to: &out) }
        if result.hasTaxon { W.key("taxon", &first, &out); W.append(result.taxon, to: &out) }
        if !ids.isEmpty {
            W.key("lineage", &first, &out)
            nodeFragments.removeAll(keepingCapacity: true)
            for var rank in ranks {
                let index = rank.withUTF8 { fragmentsIndex($0) }
                nodeFragments.append(index)
            }
            out.append(UInt8(ascii: "["))
            fragmentBytes.withUnsafeBufferPointer { fragmentBytes in
                for index in ids.indices {
                    var name = names[index]
                    name.withUTF8 { name in
                        node(index, ids, name: name, fragments: fragments[nodeFragments[index]], fragmentBytes, to: &out)
                    }
                }
            }
            out.append(UInt8(ascii: "]"))
        }
        if result.hasError { W.key("error", &first, &out); W.append(result.error, to: &out) }
        if result.mergedFrom != 0 { W.key("merged_from", &first, &out); W.appendInt(result.mergedFrom, to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    /// A result read in place (``LineageBatchIndex``) from `bytes`, the answer's: the same
    /// bytes as ``append(_:to:)`` of the decoded result, without decoding it.
    public mutating func append(_ result: LineageBatchIndex.Result, of index: LineageBatchIndex,
                                in bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) throws {
        let ids = index.ids[result.ids]
        guard result.plain, result.ranks.count == ids.count, result.names.count == ids.count, !ids.contains(0) else {
            append(try LineageBatchIndex.decode(result, in: bytes), to: &out)
            return
        }
        typealias W = ProtobufJSONWriter
        var first = true
        out.append(UInt8(ascii: "{"))
        if let query = result.query, !query.isEmpty {
            W.key("query", &first, &out)
            W.appendString(utf8: UnsafeBufferPointer(rebasing: bytes[query]), to: &out)
        }
        if let taxon = result.taxon { W.key("taxon", &first, &out); W.append(taxon, to: &out) }
        if !ids.isEmpty {
            W.key("lineage", &first, &out)
            nodeFragments.removeAll(keepingCapacity: true)
            for rank in index.ranks[result.ranks] {
                nodeFragments.append(fragmentsIndex(UnsafeBufferPointer(rebasing: bytes[rank])))
            }
            out.append(UInt8(ascii: "["))
            let names = index.names[result.names]
            fragmentBytes.withUnsafeBufferPointer { fragmentBytes in
                for offset in 0..<ids.count {
                    node(offset, ids, name: UnsafeBufferPointer(rebasing: bytes[names[names.startIndex + offset]]),
                         fragments: fragments[nodeFragments[offset]], fragmentBytes, to: &out)
                }
            }
            out.append(UInt8(ascii: "]"))
        }
        if result.mergedFrom != 0 { W.key("merged_from", &first, &out); W.appendInt(result.mergedFrom, to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    /// The lineage node at `offset` of `ids` (its parent the one before it), with its name and its rank's fragments.
    @inline(__always)
    private func node<Ids: RandomAccessCollection<Int64>>(_ offset: Int, _ ids: Ids, name: UnsafeBufferPointer<UInt8>,
                                                        fragments: (before: Range<Int>, after: Range<Int>),
                                                        _ fragmentBytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        typealias W = ProtobufJSONWriter
        let position = ids.index(ids.startIndex, offsetBy: offset)
        W.appendStatic(offset == 0 ? #"{"id":"# : #",{"id":"#, to: &out)
        W.appendInt(ids[position], to: &out)
        if offset > 0 {
            W.appendStatic(#","parent_id":"#, to: &out)
            W.appendInt(ids[ids.index(before: position)], to: &out)
        }
        if !fragments.before.isEmpty { out.append(contentsOf: UnsafeBufferPointer(rebasing: fragmentBytes[fragments.before])) }
        if !name.isEmpty {
            W.appendStatic(#","scientific_name":"#, to: &out)
            W.appendString(utf8: name, to: &out)
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: fragmentBytes[fragments.after]))
    }

    /// Where `rank`'s fragments are in `fragments`, made on its first sight.
    private mutating func fragmentsIndex(_ rank: UnsafeBufferPointer<UInt8>) -> Int {
        let key = RankKey(rank)
        var slot = -1
        if let key {
            var hash: UInt64 = 14_695_981_039_346_656_037
            hash = (hash ^ key.low) &* 1_099_511_628_211
            hash = (hash ^ key.high) &* 1_099_511_628_211
            hash = (hash ^ UInt64(key.count)) &* 1_099_511_628_211
            slot = Int((hash ^ (hash >> 29)) & 255)
            if let known = slots[slot], known.key == key { return known.fragments }
        }
        if let index = overflow[Array(rank)] { return index }
        let main = mainRank(String(decoding: rank, as: UTF8.self))
        let start = fragmentBytes.count
        if main != .unspecified {
            fragmentBytes += Array(#","rank":"#.utf8) + ProtobufJSONWriter.rankJSON(main)
        }
        let middle = fragmentBytes.count
        fragmentBytes += Array(#","status":"#.utf8) + ProtobufJSONWriter.statusJSON(.accepted)
        if !rank.isEmpty {
            fragmentBytes += Array(#","source_rank":"#.utf8)
            ProtobufJSONWriter.appendString(utf8: rank, to: &fragmentBytes)
        }
        fragmentBytes.append(UInt8(ascii: "}"))
        fragments.append((start..<middle, middle..<fragmentBytes.count))
        if let key, slots[slot] == nil {
            slots[slot] = (key, fragments.count - 1)
        } else {
            overflow[Array(rank)] = fragments.count - 1
        }
        return fragments.count - 1
    }
}
