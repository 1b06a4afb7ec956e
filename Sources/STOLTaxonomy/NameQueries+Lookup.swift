import GRDB
import STOLModel
import STOLProtocol

extension NameQueries {
    /// Ids listed per name; more are counted in `total`.
    public static let maximumIDsPerName = 100

    /// Every taxon each name belongs to, for `stol-client name2id`: the exact
    /// scientific name among all nodes of the whole tree when the database has it
    /// (else among the main ranks), then with its first letter capitalised, then
    /// a common name or synonym (case- and accent-insensitively; one taxon, the
    /// preferred name's). Several taxa are all given, ascending: the caller sees
    /// the name is ambiguous rather than getting one of them.
    ///
    /// With `within` (an id or exact name), only the taxa under it answer, the others
    /// are listed as `outside_ids`: the higher taxon GBIF's species match takes to tell
    /// homonyms apart. Each result says how it matched, with a confidence, and whether
    /// its taxa lie under several kingdoms.
    ///
    /// `idsOnly`: the same lookups, answered as each name's ids alone (`id_counts` and
    /// `ids`): no result per name, no ranks, match or confidence to make, encode and
    /// decode, for a client that wants the ids (a script's `name2id`: a third of the
    /// server's work and most of the client's was the results it did not read).
    public func lookUpNames(_ names: [String], within: String = "", idsOnly: Bool = false) throws(TaxonomyError)
        -> Stol_V1_NameLookupResponse {
        // Names come from the names' indexes (and from the tree's index): until both are built the lookup waits.
        let indexes = database.memoryIndexes.flatMap { $0.namesLoaded ? $0 : nil }
        let full = database.fullTreeCount > 0
        if full && indexes == nil { throw .memoryIndexesLoading }  // then names come from the tree's index
        let hint = within.trimmingBlanks
        if !hint.isEmpty && indexes?.tree == nil { throw .memoryIndexesLoading }
        // Both read once: a `TaxonomyTree` is a struct of many arrays, and each copy of it (an
        // optional chain per name, a method passed to `map`) retained and released them all,
        // a fifth of a batch's time.
        let tree = indexes?.wholeTree
        let mainTree = indexes?.tree
        let table = layout.wholeTreeTable(schemaVersion: database.schemaVersion) ?? "taxa"
        let sql = "SELECT id, rank FROM \(table) WHERE scientific_name = ? ORDER BY id LIMIT \(Self.maximumIDsPerName + 1)"
        return try database.read { db in
            var response = Stol_V1_NameLookupResponse()
            var withinNode: Int?
            if !hint.isEmpty, let indexes, let tree = indexes.tree {
                withinNode = try self.node(db, hint, tree, indexes)
            }
            // The hint sorts ids with their ranks (``judge``): made then, ids alone or not.
            let judged = !idsOnly || withinNode != nil
            let trimmedNames = names.map(\.trimmingBlanks)  // once: the reads ahead and the lookups
            tree?.readAhead(forNames: trimmedNames)
            if idsOnly { response.idCounts.reserveCapacity(names.count) }
            for (name, trimmed) in zip(names, trimmedNames) {
                try TaxonomyError.checkCancellation()
                var result = Stol_V1_NameLookupResult()
                result.name = name
                // The name as given first; its capitalised form only when that finds nothing
                // (uppercasing a string costs more than the lookup).
                for attempt in 0..<2 where result.ids.isEmpty {
                    let candidate = attempt == 0 ? trimmed : trimmed.prefix(1).uppercased() + trimmed.dropFirst()
                    if attempt == 1 && candidate == trimmed { break }
                    if let tree {
                        // In memory: a sorted name index of the whole tree (no query per name),
                        // at most the first 100 listed, as the SQL path (the answer is bounded
                        // before it is built: "environmental samples" names 6,433 nodes).
                        let (listed, total) = tree.nodes(named: candidate, limit: Self.maximumIDsPerName)
                        result.ids = listed.map { tree.id(at: $0) }
                        if judged { result.ranks = listed.map { tree.rank(of: $0) } }
                        if total > listed.count { result.total = UInt32(clamping: total) }
                    } else {
                        for row in try Row.fetchAll(db.cachedStatement(sql: sql), arguments: [candidate]) {
                            guard result.ids.count < Self.maximumIDsPerName else {
                                // More than the list holds: say how many (one count, bounded by the index).
                                result.total = UInt32(clamping: try Int.fetchOne(db.cachedStatement(
                                    sql: "SELECT count(*) FROM \(table) WHERE scientific_name = ?"), arguments: [candidate]) ?? 0)
                                break
                            }
                            result.ids.append(row[0])
                            result.ranks.append(row[1])
                        }
                    }
                    if !result.ids.isEmpty {
                        result.match = .scientific
                        result.kind = attempt == 0 ? .exact : .capitalised
                    }
                }
                if result.ids.isEmpty, !trimmed.isEmpty {
                    let folded = SearchQuery.words(in: trimmed).joined(separator: " ")
                    if let id = indexes?.exactNames[folded] {
                        result.ids = [id]
                        if judged, let tree, let node = tree.index(of: id) {
                            result.ranks = [tree.rank(of: node)]
                        } else if judged {
                            result.ranks = [try String.fetchOne(db.cachedStatement(sql: "SELECT rank FROM taxa WHERE id = ?"),
                                                                arguments: [id]) ?? ""]
                        }
                        result.match = .common
                        result.kind = .common
                    }
                }
                if judged, let mainTree, !result.ids.isEmpty {
                    Self.judge(&result, tree: mainTree, within: withinNode)
                }
                if idsOnly {
                    response.idCounts.append(UInt32(result.ids.count))
                    response.ids += result.ids
                    continue
                }
                if result.ids.isEmpty && result.error.code == .unspecified {
                    result.error = TaxonomyError.nameNotFound.protocolError.proto
                }
                response.results.append(result)
            }
            return response
        }
    }

    /// Narrows `result` to the taxa under `within` (the rest become `outside_ids`; none
    /// left is NOT_FOUND saying where they are), flags taxa under several kingdoms, and
    /// sets the confidence: 100 for an exact name, 90 capitalised, 80 a common name or
    /// synonym, divided among the taxa it fits.
    static func judge(_ result: inout Stol_V1_NameLookupResult, tree: TaxonomyTree, within: Int?) {
        if let within {
            var inside: [(Int64, String)] = [], outside: [Int64] = []
            for (id, rank) in zip(result.ids, result.ranks) {
                if let node = tree.index(of: id), tree.isDescendant(node, of: within) { inside.append((id, rank)) } else { outside.append(id) }
            }
            result.ids = inside.map(\.0)
            result.ranks = inside.map(\.1)
            result.outsideIds = outside
            if result.total > 0 && !outside.isEmpty { result.total = 0 }  // the first 100 only were judged
            if inside.isEmpty {
                result.error = ProtocolError(.notFound, "no taxon named '\(result.name.prefix(80))' under \(tree.name(of: within)) "
                                             + "(\(outside.count) elsewhere, in outside_ids)").proto
                result.kind = .none
                return
            }
        }
        // One taxon lies under one kingdom: the walk up is for homonyms alone (a batch of
        // 10,000 names spent a fifth of its time walking every name's lineage for nothing).
        if result.ids.count > 1 {
            let kingdoms = Set(result.ids.compactMap { tree.index(of: $0) }.map { kingdom(of: $0, tree) })
            result.severalKingdoms = kingdoms.count > 1
        }
        let base: Double = switch result.kind {
        case .exact: 100
        case .capitalised: 90
        case .common: 80
        default: 0
        }
        let fits = max(1, result.total > 0 ? Int(result.total) : result.ids.count)
        result.confidence = UInt32((base / Double(fits)).rounded())
    }

    /// The kingdom a node lies under (itself included), else its domain (NCBI's
    /// superkingdom), else its topmost ancestor.
    private static func kingdom(of node: Int, _ tree: TaxonomyTree) -> Int {
        var current: Int? = node, domain: Int?, top = node
        while let at = current {
            let rank = tree.rank(of: at)
            if rank == "kingdom" { return at }
            if rank == "superkingdom" || rank == "domain" || tree.mainRank(of: at) == .domain { domain = at }
            top = at
            current = tree.parent(of: at)
        }
        return domain ?? top
    }
}
