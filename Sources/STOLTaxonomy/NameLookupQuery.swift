import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// Every taxon each name belongs to, for `stol-client name2id`: the exact
    /// scientific name among all nodes of the whole tree when the database has it
    /// (else among the main ranks), then with its first letter capitalised, then
    /// a common name or synonym (case- and accent-insensitively; one taxon, the
    /// preferred name's). Several taxa are all given, ascending: the caller sees
    /// the name is ambiguous rather than getting one of them.
    /// Ids listed per name; more are counted in `total`.
    public static let maximumIDsPerName = 100

    public func lookUpNames(_ names: [String]) throws(TaxonomyError) -> Stol_V1_NameLookupResponse {
        let indexes = database.memoryIndexes
        let full = database.fullTreeCount > 0
        if full && indexes == nil { throw .memoryIndexesLoading }  // then names come from the tree's index
        let tree = indexes?.wholeTree
        let table = layout.wholeTreeTable(schemaVersion: database.schemaVersion) ?? "taxa"
        let sql = "SELECT id, rank FROM \(table) WHERE scientific_name = ? ORDER BY id LIMIT \(Self.maximumIDsPerName + 1)"
        return try database.read { db in
            var response = Stol_V1_NameLookupResponse()
            for name in names {
                var result = Stol_V1_NameLookupResult()
                result.name = name
                let trimmed = name.trimmingBlanks
                // The name as given first; its capitalised form only when that finds nothing
                // (uppercasing a string costs more than the lookup).
                for attempt in 0..<2 where result.ids.isEmpty {
                    let candidate = attempt == 0 ? trimmed : trimmed.prefix(1).uppercased() + trimmed.dropFirst()
                    if attempt == 1 && candidate == trimmed { break }
                    if let tree {
                        // In memory: a sorted name index of the whole tree (no query per name),
                        // at most the first 100 listed, as the SQL path (the answer is bounded
                        // before it is built: "environmental samples" names 6,433 nodes).
                        let nodes = tree.nodes(named: candidate)
                        let listed = nodes.prefix(Self.maximumIDsPerName)
                        result.ids = listed.map(tree.id(at:))
                        result.ranks = listed.map(tree.rank(of:))
                        if nodes.count > listed.count { result.total = UInt32(clamping: nodes.count) }
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
                    if !result.ids.isEmpty { result.match = .scientific }
                }
                if result.ids.isEmpty, !trimmed.isEmpty {
                    let folded = SearchQuery.words(in: trimmed).joined(separator: " ")
                    if let id = indexes?.exactNames[folded] {
                        result.ids = [id]
                        if let tree, let node = tree.index(of: id) {
                            result.ranks = [tree.rank(of: node)]
                        } else {
                            result.ranks = [try String.fetchOne(db.cachedStatement(sql: "SELECT rank FROM taxa WHERE id = ?"),
                                                                arguments: [id]) ?? ""]
                        }
                        result.match = .common
                    }
                }
                if result.ids.isEmpty { result.error = TaxonomyError.nameNotFound.protocolError.proto }
                response.results.append(result)
            }
            return response
        }
    }
}
