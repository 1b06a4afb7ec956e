import Glibc

/// The public keys a verifier trusts, with their expiry, and the revoked ids
/// (`protocol/STOL-FORMAT.md` §7).
///
/// Read from every `*.pub` in `/usr/share/stol/keys/` (the package's keys) and
/// `/etc/stol/keys/` (the operator's), or, when `STOL_TRUSTED_KEY` is set, from the
/// files and directories it lists (development and tests). A file named `revoked`
/// in a directory lists revoked ids and wins over any key file. Both the verifier
/// (at start, before its sandbox closes the file system) and the import coordinator
/// (at each import, so a rotation needs no restart) read them; nothing a caller
/// sends can add a key.
public struct TrustedKeys: Sendable, Equatable {
    public static let systemDirectories = ["/usr/share/stol/keys", "/etc/stol/keys"]
    public static let environmentVariable = "STOL_TRUSTED_KEY"
    public static let revocationFileName = "revoked"

    /// One trusted key: its id, when it stops being trusted (inclusive, Unix seconds), and its file.
    public struct Entry: Sendable, Equatable {
        public var key: Ed25519.PublicKey
        public var notAfter: Int64?
        public var source: String
        public var id: KeyID { key.keyID }

        public init(key: Ed25519.PublicKey, notAfter: Int64? = nil, source: String = "") {
            self.key = key
            self.notAfter = notAfter
            self.source = source
        }
    }

    public private(set) var entries: [KeyID: Entry] = [:]
    public private(set) var revoked: Set<KeyID> = []
    /// Files that could not be read or parsed (each one's key is not trusted), and keys
    /// held by several files of one directory (the most restrictive copy is used), for the
    /// log and `db status`.
    public private(set) var problems: [String] = []
    /// A revocation list that cannot be read whole: the keys it meant to revoke might
    /// be trusted, so the verifier and the coordinator trust nothing until it is fixed.
    public private(set) var revocationProblems: [String] = []

    public init(_ keys: [Entry] = [], revoked: Set<KeyID> = []) {
        for key in keys { entries[key.id] = key }
        self.revoked = revoked
    }

    /// Unix seconds now: what a key's `not-after` is compared with.
    public static func currentTime() -> Int64 { Int64(time(nil)) }

    /// A set trusting exactly `key`, forever (tests, `stol-pipeline verify --public-key`).
    public static func trusting(_ key: Ed25519.PublicKey) -> TrustedKeys { TrustedKeys([Entry(key: key)]) }

    /// The ids of the keys that verify files now: trusted, not revoked (expired ones included: they are named).
    public var trustedIDs: [KeyID] { entries.keys.filter { !revoked.contains($0) }.sorted() }

    /// Where keys are read from: `STOL_TRUSTED_KEY`'s colon-separated list, else the two directories.
    public static func locations(environment: [String: String]) -> [String] {
        if let value = environment[environmentVariable], !value.isEmpty {
            return value.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        return systemDirectories
    }

    public static func load(environment: [String: String]) -> TrustedKeys {
        load(locations: locations(environment: environment))
    }

    /// Reads each location in order; a later location's entry for the same id wins
    /// (so `/etc/stol/keys` overrides `/usr/share/stol/keys`). A missing location is not an error.
    /// Within one location the same id in two files is not an override but a mistake:
    /// the most restrictive copy wins (the earliest `not-after`), whatever the files'
    /// names, and ``problems`` says so. A location that is a file named `revoked` is a
    /// revocation list, not a key file.
    public static func load(locations: [String]) -> TrustedKeys {
        var keys = TrustedKeys()
        for location in locations {
            var info = stat()
            guard stat(location, &info) == 0 else { continue }
            var found: [KeyID: Entry] = [:]
            if (info.st_mode & S_IFMT) == S_IFDIR {
                for name in directoryEntries(location) {
                    let path = location + "/" + name
                    if name == revocationFileName {
                        keys.readRevocations(path)
                    } else if name.hasSuffix(".pub") {
                        keys.readKey(path, into: &found)
                    }
                }
            } else if location.split(separator: "/").last.map(String.init) == revocationFileName {
                keys.readRevocations(location)
            } else {
                keys.readKey(location, into: &found)
            }
            for (id, entry) in found { keys.entries[id] = entry }
        }
        return keys
    }

    /// The more restrictive of two copies of one key: the earlier `not-after` (none is the latest).
    static func moreRestrictive(_ a: Entry, _ b: Entry) -> Entry {
        switch (a.notAfter, b.notAfter) {
        case (nil, _): b
        case (_, nil): a
        case (let x?, let y?): x <= y ? a : b
        }
    }

    /// The key a version 2 file names, if it may verify files at `now` (Unix seconds).
    public func key(for id: KeyID, now: Int64) throws(StolFormatError) -> Ed25519.PublicKey {
        if revoked.contains(id) { throw .keyRevoked(id: id) }
        guard let entry = entries[id] else { throw .unknownKey(id: id, trusted: trustedIDs) }
        if let notAfter = entry.notAfter, now > notAfter { throw .keyExpired(id: id, notAfter: notAfter) }
        return entry.key
    }

    /// Version 1 names no key: the signature is tried with every usable key; when none
    /// verifies it, a revoked or expired key that does is named instead.
    public func verifyVersion1(signature: [UInt8], message: [UInt8], now: Int64) throws(StolFormatError) -> KeyID {
        let usable = entries.values.filter { entry in
            !revoked.contains(entry.id) && (entry.notAfter.map { now <= $0 } ?? true)
        }
        for entry in usable.sorted(by: { $0.id < $1.id }) where entry.key.isValidSignature(signature, for: message) {
            return entry.id
        }
        for entry in entries.values where entry.key.isValidSignature(signature, for: message) {
            if revoked.contains(entry.id) { throw .keyRevoked(id: entry.id) }
            if let notAfter = entry.notAfter { throw .keyExpired(id: entry.id, notAfter: notAfter) }
        }
        throw .signatureInvalid(keyID: nil, trusted: trustedIDs)
    }

    /// Adds a key directly (tests); replaces an entry with the same id.
    public mutating func add(_ entry: Entry) { entries[entry.id] = entry }
    public mutating func revoke(_ id: KeyID) { revoked.insert(id) }

    // MARK: Files

    private mutating func readKey(_ path: String, into found: inout [KeyID: Entry]) {
        do throws(SigningKeyError) {
            let file = try PublicKeyFile.load(path: path)
            let entry = Entry(key: file.key, notAfter: file.notAfter, source: path)
            if let other = found[entry.id] {
                let kept = Self.moreRestrictive(other, entry)
                found[entry.id] = kept
                problems.append("\(other.source) and \(path) both hold key \(entry.id); the more restrictive, "
                    + "\(kept.source)\(kept.notAfter.map { " (not after \(PublicKeyFile.formatDate($0)))" } ?? ""), is used: remove the other")
            } else {
                found[entry.id] = entry
            }
        } catch {
            problems.append("\(error)")
        }
    }

    private mutating func readRevocations(_ path: String) {
        guard let text = try? SigningKeyFile.readText(path: path, limit: 1 << 20) else {
            revocationProblems.append("\(path): unreadable revocation list")
            return
        }
        for (number, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first?
                .trimmingASCIIWhitespace() ?? ""
            if line.isEmpty { continue }
            if let id = KeyID(hex: line) {
                revoked.insert(id)
            } else {
                revocationProblems.append("\(path):\(number + 1): not a key id (16 hexadecimal digits)")
            }
        }
    }

    private static func directoryEntries(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." && !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }
}

/// A public key file (§7): the key line, then optional `not-after: DATE` and comments.
public struct PublicKeyFile: Sendable, Equatable {
    public var key: Ed25519.PublicKey
    public var notAfter: Int64?

    public static func load(path: String) throws(SigningKeyError) -> PublicKeyFile {
        let text = try SigningKeyFile.readText(path: path, limit: SigningKeyFile.maximumFileBytes)
        return try parse(text, source: path)
    }

    /// The grammar of `protocol/STOL-FORMAT.md` §7, no more lenient: the first line is the
    /// key line (ASCII whitespace around lines ignored); after it, blank lines, `#` comments
    /// and `name: value` lines (a colon, then a space), of which only `not-after` is known.
    public static func parse(_ text: String, source: String) throws(SigningKeyError) -> PublicKeyFile {
        var key: Ed25519.PublicKey?
        var notAfter: Int64?
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingASCIIWhitespace()
            if key == nil {
                // The key line comes first: not a comment, not a blank line.
                key = try SigningKeyFile.parsePublicKey(Array(line.utf8), source: source)
                continue
            }
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":"), line[line.index(after: colon)...].first == " " else {
                throw .malformed(source: source, reason: "unexpected line \"\(line.prefix(40))\" (after the key only name: value lines)")
            }
            let parts = [String(line[..<colon]), line[line.index(after: colon)...].trimmingASCIIWhitespace()]
            guard parts[0] == "not-after" else {
                throw .malformed(source: source, reason: "unexpected line \"\(line.prefix(40))\" (only not-after: DATE may follow the key)")
            }
            guard notAfter == nil else { throw .malformed(source: source, reason: "two not-after lines") }
            guard let seconds = Self.parseDate(parts[1]) else {
                throw .malformed(source: source, reason: "not-after: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ")
            }
            notAfter = seconds
        }
        guard let key else { throw .malformed(source: source, reason: "empty") }
        return PublicKeyFile(key: key, notAfter: notAfter)
    }

    /// The text `keygen --not-after` writes.
    public static func text(_ key: Ed25519.PublicKey, notAfter: String?) -> String {
        SigningKeyFile.publicKeyText(key) + (notAfter.map { "not-after: \($0)\n" } ?? "")
    }

    /// `YYYY-MM-DD` (through the end of that day, UTC) or `YYYY-MM-DDTHH:MM:SSZ`, as Unix seconds.
    public static func parseDate(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[range] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard bytes.count == 10 || bytes.count == 20, bytes[4] == 0x2d, bytes[7] == 0x2d,
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        let midnight = daysFromCivil(year: year, month: month, day: day) * 86_400
        if bytes.count == 10 { return midnight + 86_399 }
        guard bytes[10] == 0x54, bytes[13] == 0x3a, bytes[16] == 0x3a, bytes[19] == 0x5a,
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              hour < 24, minute < 60, second < 60 else { return nil }
        return midnight + hour * 3600 + minute * 60 + second
    }

    /// ISO 8601 UTC of Unix seconds, for messages.
    public static func formatDate(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension StringProtocol {
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
