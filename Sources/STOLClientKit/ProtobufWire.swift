import STOLProtocol

/// Protobuf's wire format read in place (https://protobuf.dev/programming-guides/encoding/),
/// just what a lineage batch answer needs: a batch of 1000 whole-tree lineages is
/// 25,000 ids, ranks and names, which swift-protobuf decodes into as many `String`s
/// for the client to copy once more into its output — half of the client's time
/// for the TSV form. ``LineageBatchIndex`` finds them in the answer's bytes instead,
/// and the writers copy (or escape) the bytes themselves.
///
/// Nothing here is trusted more than swift-protobuf's decoder: every length is
/// checked against the bytes, every string is checked to be UTF-8, and anything this
/// reader does not take on (an error, the taxa form, a field repeated where it
/// should not be) is left to swift-protobuf, result by result or answer by answer,
/// so that the output is the same either way.
public struct WireError: Error, Equatable {
    public init() {}
}

struct WireReader {
    let base: UnsafePointer<UInt8>
    var position: Int
    let end: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!
        position = range.lowerBound
        end = range.upperBound
    }

    var atEnd: Bool { position >= end }

    mutating func varint() throws(WireError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < end, shift < 64 else { throw WireError() }
            let byte = base[position]
            position += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// A field's number and wire type.
    mutating func tag() throws(WireError) -> (field: Int, type: UInt8) {
        let key = try varint()
        let field = key >> 3
        guard field > 0, field <= 0x1FFF_FFFF else { throw WireError() }
        return (Int(field), UInt8(key & 7))
    }

    /// The bytes of a length-delimited value (wire type 2).
    mutating func lengthDelimited() throws(WireError) -> Range<Int> {
        let length = try varint()
        guard length <= UInt64(end - position) else { throw WireError() }
        let range = position..<(position + Int(length))
        position = range.upperBound
        return range
    }

    mutating func skip(_ type: UInt8) throws(WireError) {
        switch type {
        case 0: _ = try varint()
        case 1:
            guard end - position >= 8 else { throw WireError() }
            position += 8
        case 2: _ = try lengthDelimited()
        case 5:
            guard end - position >= 4 else { throw WireError() }
            position += 4
        default: throw WireError()  // groups (3, 4) are not proto3
        }
    }

    /// Whether `range` is UTF-8, as swift-protobuf requires of a string field.
    func isUTF8(_ range: Range<Int>) -> Bool {
        var index = range.lowerBound
        while range.upperBound - index >= 8,  // ASCII eight bytes at a time
              UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            index += 8
        }
        while index < range.upperBound {
            if base[index] >= 0x80 {
                let rest = UnsafeBufferPointer(start: base + index, count: range.upperBound - index)
                return String(validating: rest, as: UTF8.self) != nil
            }
            index += 1
        }
        return true
    }

    func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(start: base + range.lowerBound, count: range.count), as: UTF8.self)
    }
}

public enum ProtobufWire {
    /// A message's bytes without its length-delimited field `field`, and where that
    /// field's value is: the answer envelope decodes quickly, and its big result is
    /// read in place. Throws when the field occurs more than once (swift-protobuf would
    /// merge the occurrences) or the bytes are not protobuf.
    public static func split(_ bytes: UnsafeBufferPointer<UInt8>,
                             field: Int) throws(WireError) -> (rest: [UInt8], value: Range<Int>?) {
        var reader = WireReader(bytes, 0..<bytes.count)
        var rest: [UInt8] = []
        var value: Range<Int>?
        while !reader.atEnd {
            let start = reader.position
            let (number, type) = try reader.tag()
            if number == field && type == 2 {
                guard value == nil else { throw WireError() }
                value = try reader.lengthDelimited()
            } else {
                try reader.skip(type)
                rest.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<reader.position]))
            }
        }
        return (rest, value)
    }

    /// A `Taxon` read from its bytes: the message swift-protobuf's decoder gives (unknown
    /// fields left out: neither the JSON nor the TSV prints them).
    static func taxon(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) throws(WireError) -> Stol_V1_Taxon {
        var reader = WireReader(bytes, range)
        var taxon = Stol_V1_Taxon()
        while !reader.atEnd {
            let (field, type) = try reader.tag()
            switch (field, type) {
            case (1, 0): taxon.id = Int64(bitPattern: try reader.varint())
            case (2, 0): taxon.parentID = Int64(bitPattern: try reader.varint())
            case (3, 0): taxon.rank = Stol_V1_Rank(rawValue: Int(Int32(truncatingIfNeeded: try reader.varint()))) ?? .unspecified
            case (6, 0): taxon.year = Int32(truncatingIfNeeded: try reader.varint())
            case (7, 0):
                taxon.status = Stol_V1_TaxonStatus(rawValue: Int(Int32(truncatingIfNeeded: try reader.varint()))) ?? .unspecified
            case (10, 0): taxon.childCount = UInt32(truncatingIfNeeded: try reader.varint())
            case (4, 2), (5, 2), (8, 2), (9, 2), (11, 2):
                let text = try reader.lengthDelimited()
                guard reader.isUTF8(text) else { throw WireError() }
                let value = reader.string(text)
                switch field {
                case 4: taxon.scientificName = value
                case 5: taxon.author = value
                case 8: taxon.conservation = value
                case 9: taxon.commonName = value
                default: taxon.sourceRank = value
                }
            case (1...11, _): throw WireError()  // a known field with another wire type: swift-protobuf refuses it
            default: try reader.skip(type)
            }
        }
        return taxon
    }
}

/// A `LineageBatchResponse` read in place: per result, where its query, taxon, ids,
/// ranks and names are in the answer's bytes. A result holding anything else (an
/// error, the taxa form's `Taxon` messages, a field given twice) is not `plain`: its
/// bytes are decoded by swift-protobuf instead (``decode(_:in:)``).
public struct LineageBatchIndex {
    public struct Result {
        /// The LineageResult's bytes.
        public var bytes: Range<Int>
        /// Only query, taxon, lineage_ids, lineage_ranks, lineage_names, merged_from and formatted.
        public var plain = true
        public var query: Range<Int>?
        public var taxon: Stol_V1_Taxon?
        public var mergedFrom: Int64 = 0
        /// The lineage written in the request's template (`formatted`), when there is one.
        public var formatted: Range<Int>?
        /// This result's entries in ``ids``, ``ranks`` and ``names``.
        public var ids: Range<Int>
        public var ranks: Range<Int>
        public var names: Range<Int>
    }

    public private(set) var results: [Result] = []
    public private(set) var ids: [Int64] = []
    public private(set) var ranks: [Range<Int>] = []
    public private(set) var names: [Range<Int>] = []

    public init() {}

    /// Indexes the `LineageBatchResponse` at `range` of `bytes` (the previous batch's index is dropped).
    public mutating func read(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) throws(WireError) {
        results.removeAll(keepingCapacity: true)
        ids.removeAll(keepingCapacity: true)
        ranks.removeAll(keepingCapacity: true)
        names.removeAll(keepingCapacity: true)
        var reader = WireReader(bytes, range)
        while !reader.atEnd {
            let (field, type) = try reader.tag()
            if field == 1 {
                guard type == 2 else { throw WireError() }
                try readResult(bytes, reader.lengthDelimited())
            } else {
                try reader.skip(type)
            }
        }
    }

    private mutating func readResult(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) throws(WireError) {
        var reader = WireReader(bytes, range)
        var result = Result(bytes: range, ids: ids.count..<ids.count, ranks: ranks.count..<ranks.count,
                            names: names.count..<names.count)
        while !reader.atEnd {
            let (field, type) = try reader.tag()
            switch (field, type) {
            case (1, 2):
                let query = try reader.lengthDelimited()
                guard reader.isUTF8(query) else { throw WireError() }
                if result.query != nil { result.plain = false }
                result.query = query
            case (2, 2):
                let taxon = try reader.lengthDelimited()
                if result.taxon != nil { result.plain = false }  // swift-protobuf merges the two
                result.taxon = try ProtobufWire.taxon(bytes, taxon)
            case (5, 2):  // packed
                let packed = try reader.lengthDelimited()
                var values = WireReader(bytes, packed)
                while !values.atEnd { ids.append(Int64(bitPattern: try values.varint())) }
            case (5, 0): ids.append(Int64(bitPattern: try reader.varint()))
            case (6, 2), (7, 2):
                let text = try reader.lengthDelimited()
                guard reader.isUTF8(text) else { throw WireError() }
                if field == 6 { ranks.append(text) } else { names.append(text) }
            case (8, 0): result.mergedFrom = Int64(bitPattern: try reader.varint())
            case (9, 2):
                let text = try reader.lengthDelimited()
                guard reader.isUTF8(text) else { throw WireError() }
                if result.formatted != nil { result.plain = false }
                result.formatted = text
            case (3, 2), (4, 2):  // the taxa form's lineage, an error: swift-protobuf's
                _ = try reader.lengthDelimited()
                result.plain = false
            case (1...9, _): throw WireError()
            default: try reader.skip(type)
            }
        }
        result.ids = result.ids.lowerBound..<ids.count
        result.ranks = result.ranks.lowerBound..<ranks.count
        result.names = result.names.lowerBound..<names.count
        results.append(result)
    }

    /// The result as swift-protobuf decodes it (for one that is not `plain`).
    public static func decode(_ result: Result, in bytes: UnsafeBufferPointer<UInt8>) throws -> Stol_V1_LineageResult {
        try Stol_V1_LineageResult(serializedBytes: Array(UnsafeBufferPointer(rebasing: bytes[result.bytes])))
    }
}
