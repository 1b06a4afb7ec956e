import STOLFormat
import STOLModel

/// Turns a source's own taxon id, integer or text, into STOL's integer ``TaxonID``,
/// the same way in every release.
///
/// Why: users' favourites are keyed by ``TaxonID`` (an `Int64`), so a taxon's id
/// must never change between releases. Sources such as NCBI or GBIF have integer
/// ids, which STOL keeps; Catalogue of Life and ChecklistBank ColDP exports use
/// text ids (`4QHKG`, `x36P`), often mixed with integers in the same file. A text
/// id cannot be numbered by order of appearance (the next release would renumber),
/// so its integer is derived from the id alone, by a function anyone can recompute.
///
/// The policy (for operators: `Pipeline/README.md`, "Stable ids"):
/// - **kept as is**: a canonical decimal integer from 1 to 2^40 − 1, that is
///   ASCII digits only, no sign, no leading zero (`9689`);
/// - **hashed**: any other id, including `007`, `+7`, `0` and integers of 2^40
///   or more, becomes `2^40 + (H mod (2^53 − 2^40))`, where `H` is the first
///   8 bytes, read big-endian, of SHA-256 of `namespace + ":" + id` (the id's
///   UTF-8 bytes exactly as written, case-sensitive, after the reader trimmed
///   surrounding spaces and tabs). The hashed range `[2^40, 2^53)` is disjoint
///   from kept integers, so a text id never takes an integer id's place, and
///   stays below 2^53 so that clients reading JSON numbers as doubles read
///   it exactly. The namespace (`coldp` for ColDP) keeps the hashes of
///   different kinds of source apart;
/// - **collisions fail**: two different ids that land on the same integer
///   (two text ids with the same hash: for 3 million text ids, a chance of
///   about 1 in 2,000) throw ``Collision`` naming both. Nothing is renumbered silently,
///   because any silent tie-break would depend on which ids a release happens
///   to contain.
///
/// Recompute an id with Python:
/// `2**40 + int.from_bytes(hashlib.sha256(b"coldp:" + id.encode()).digest()[:8], "big") % (2**53 - 2**40)`.
public struct StableTaxonIDMap {
    /// Integer ids below this bound are kept as they are.
    public static let integerLimit: TaxonID = 1 << 40
    /// Where hashed ids land: above every kept integer, below 2^53.
    public static let hashedRange: Range<TaxonID> = (1 << 40) ..< (1 << 53)

    /// Two different source ids that map to the same ``TaxonID``.
    public struct Collision: Error, Equatable, CustomStringConvertible {
        /// The id met first.
        public var firstSourceID: String
        /// The id that collided with it.
        public var secondSourceID: String
        public var taxonID: TaxonID

        public init(firstSourceID: String, secondSourceID: String, taxonID: TaxonID) {
            self.firstSourceID = firstSourceID
            self.secondSourceID = secondSourceID
            self.taxonID = taxonID
        }

        public var description: String {
            "taxon ids '\(firstSourceID)' and '\(secondSourceID)' both map to \(taxonID); "
                + "STOL cannot give them distinct stable ids (see Pipeline/README.md, \"Stable ids\")"
        }
    }

    /// The hash's namespace, e.g. `coldp`.
    public let namespace: String
    private let prefix: [UInt8]
    /// Every hashed id met so far, by the source id it came from: what detects collisions.
    private var sourceIDByHashedID: [TaxonID: String] = [:]

    public init(namespace: String) {
        self.namespace = namespace
        self.prefix = Array((namespace + ":").utf8)
    }

    /// How many distinct text ids were hashed so far.
    public var hashedCount: Int { sourceIDByHashedID.count }

    /// The ``TaxonID`` of `sourceID`, without any collision check: the pure policy.
    public static func taxonID(for sourceID: String, namespace: String) -> TaxonID {
        var id = sourceID
        return id.withUTF8 { bytes in
            keptInteger(bytes) ?? hashedID(bytes, prefix: Array((namespace + ":").utf8))
        }
    }

    /// The ``TaxonID`` of `sourceID`; throws when another source id already took it.
    public mutating func map(_ sourceID: String) throws(Collision) -> TaxonID {
        var id = sourceID
        // `withUTF8` rethrows untyped errors, so the typed one travels in a Result.
        let result: Result<TaxonID, Collision> = id.withUTF8 { bytes in
            do throws(Collision) { return .success(try map(bytes: bytes)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The ``TaxonID`` of the source id in `bytes` (UTF-8), for the byte-level readers:
    /// integer ids, the common case, never become a `String`.
    mutating func map(bytes: UnsafeBufferPointer<UInt8>) throws(Collision) -> TaxonID {
        if let integer = Self.keptInteger(bytes) { return integer }
        let taxonID = Self.hashedID(bytes, prefix: prefix)
        if let existing = sourceIDByHashedID[taxonID] {
            // Compare bytes first: the same id met again is the common case.
            let same = existing.utf8.elementsEqual(bytes)
            guard same else {
                throw Collision(firstSourceID: existing, secondSourceID: String(decoding: bytes, as: UTF8.self),
                                taxonID: taxonID)
            }
            return taxonID
        }
        sourceIDByHashedID[taxonID] = String(decoding: bytes, as: UTF8.self)
        return taxonID
    }

    /// `bytes` as an integer when it is a canonical decimal in `1 ..< integerLimit`.
    static func keptInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> TaxonID? {
        // 2^40 − 1 has 13 digits; a leading zero would let `7` and `007` share an id.
        guard let first = bytes.first, first >= 0x31, first <= 0x39, bytes.count <= 13 else { return nil }
        var value: TaxonID = 0
        for byte in bytes {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value * 10 + TaxonID(byte - 0x30)
        }
        return value < integerLimit ? value : nil
    }

    /// `2^40 + (first 8 bytes of SHA-256(prefix + bytes), big-endian) mod (2^53 − 2^40)`.
    static func hashedID(_ bytes: UnsafeBufferPointer<UInt8>, prefix: [UInt8]) -> TaxonID {
        var hasher = SHA256()
        hasher.update(prefix)
        hasher.update(UnsafeRawBufferPointer(bytes))
        let digest = hasher.finalize()
        var head: UInt64 = 0
        for byte in digest.prefix(8) { head = head << 8 | UInt64(byte) }
        let width = UInt64(hashedRange.upperBound - hashedRange.lowerBound)
        return hashedRange.lowerBound + TaxonID(head % width)
    }
}
