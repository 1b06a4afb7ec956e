import STOLProtocol

/// The checks the handlers share.
enum RequestChecks {
    static func id(_ id: Int64) throws(TaxonomyError) {
        guard id > 0 else { throw .invalidArgument("taxon ids are positive integers, got \(id)") }
    }

    static func pageSize(_ requested: UInt32) throws(TaxonomyError) -> Int {
        if requested == 0 { return Int(ProtocolLimits.defaultPageSize) }
        guard requested <= ProtocolLimits.maximumPageSize else {
            throw .invalidArgument("limit must be at most \(ProtocolLimits.maximumPageSize)")
        }
        return Int(requested)
    }

    /// Most items (queries, pairs, sets, names, ids) one batch may carry: the
    /// answer stays far below the frame limit.
    static let maximumBatchItems = 1000

    /// At most ``maximumBatchItems`` items of a batch.
    static func batch(_ count: Int, _ what: String) throws(TaxonomyError) {
        guard count <= maximumBatchItems else {
            throw .invalidArgument("at most \(maximumBatchItems) \(what) per request")
        }
    }

    /// The language of common names a request asks for: "en" when it names none;
    /// one the database has no names in is refused (a typo such as `--lang sp`
    /// would otherwise answer every taxon without its common name, silently).
    static func language(_ requested: String, in database: TaxonomyDatabase) throws(TaxonomyError) -> String {
        if requested.isEmpty || requested == "en" || database.languages.contains(requested) {
            return requested.isEmpty ? "en" : requested
        }
        let known = database.languages.sorted()
        let shown = known.prefix(30).joined(separator: ", ") + (known.count > 30 ? ", …" : "")
        var hint = ""
        if let close = known.first(where: { $0.lowercased() == requested.lowercased()
                                            || $0.lowercased() == requested.lowercased().split(separator: "-").first.map(String.init) }) {
            hint = "; did you mean \(close)?"
        }
        throw .invalidArgument("release \(database.release) has no names in language '\(requested.prefix(35))'\(hint) "
                               + "(it has: \(shown.isEmpty ? "none" : shown))")
    }

    /// IUCN Red List categories (`protocol/PROTOCOL.md` §4, `conservation`).
    static let conservationCodes: Set<String> = ["LC", "NT", "VU", "EN", "CR", "EW", "EX", "NE", "DD"]
}
