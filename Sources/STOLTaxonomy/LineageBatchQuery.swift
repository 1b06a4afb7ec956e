import GRDB
import STOLModel
import STOLProtocol

extension TaxonomyQueries {
    /// Most queries one lineage batch may carry (the answer stays far below the frame limit).
    public static let maximumBatchQueries = 1000

    /// Lineages of many taxa in one round trip, for pipelines of thousands of
    /// queries. Each query is a decimal id or an exact name (scientific name,
    /// case-insensitively for the first letter, then a common name or synonym,
    /// case- and accent-insensitively); each gets its own result or error. A name
    /// that fits several taxa is an error naming them, never a silent pick.
    ///
    /// With ``Stol_V1_RankView/all`` the lineage is NCBI's own (every node of the
    /// source's tree, ``FullTaxonTree``), answered from memory; it throws
    /// ``TaxonomyError/memoryIndexesLoading`` while that tree is being built (the
    /// service then waits) and ``TaxonomyError/fullTreeAbsent`` on a database
    /// that keeps only the main ranks.
    public func lineageBatch(_ queries: [String], language: String, ranks: Stol_V1_RankView = .main,
                             form: Stol_V1_LineageForm = .taxa) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        if ranks == .all {
            let tree = try fullTree()
            return try fullTreeLineages(queries, tree: tree, exactNames: database.memoryIndexes?.exactNames ?? [:], form: form)
        }
        let exactNames = database.memoryIndexes?.exactNames
        if form != .taxa, let indexes = database.memoryIndexes, let tree = indexes.tree {
            return try mainTreeLineages(queries, tree: tree, indexes: indexes, form: form)
        }
        return try database.read { db in
            var response = Stol_V1_LineageBatchResponse()
            response.results = try queries.map { query in
                var result = Stol_V1_LineageResult()
                result.query = query
                do {
                    var id = try resolve(db, query.trimmingBlanks, exactNames: exactNames)
                    var found = try lineage(db, of: id, language: language)
                    if found == nil {
                        switch try retired(db, id) {
                        case .merged(let new)?:
                            result.mergedFrom = id
                            id = new
                            found = try lineage(db, of: new, language: language)
                        case .deleted?: throw TaxonomyError.taxonDeleted(id)
                        case nil: break
                        }
                    }
                    guard let (taxon, lineage) = found else { throw TaxonomyError.taxonNotFound(id) }
                    result.taxon = taxon
                    switch form {
                    case .taxa, .UNRECOGNIZED:
                        result.lineage = lineage
                    case .compact:
                        result.lineageIds = lineage.map(\.id)
                        result.lineageRanks = lineage.map { TaxonomyQueries.modelRank($0.rank)?.rawValue ?? "" }
                        result.lineageNames = lineage.map(\.scientificName)
                    case .ids:
                        result.lineageIds = lineage.map(\.id)
                    }
                } catch let error as TaxonomyError {
                    result.error = error.protocolError.proto
                }
                return result
            }
            return response
        }
    }

    /// Lineages on the whole tree, from memory: ids and scientific names through the
    /// tree's own name index, common names and synonyms through the in-memory exact
    /// names; SQL only for ids the tree does not hold (merged or deleted ids).
    private func fullTreeLineages(_ queries: [String], tree: FullTaxonTree, exactNames: [String: TaxonID],
                                  form: Stol_V1_LineageForm) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        var nodes = [Int?](repeating: nil, count: queries.count)
        var errors = [TaxonomyError?](repeating: nil, count: queries.count)
        var mergedFrom = [TaxonID?](repeating: nil, count: queries.count)
        var needSQL: [Int] = []  // names, and ids the tree does not hold (merged or deleted?)
        for (position, query) in queries.enumerated() {
            let trimmed = query.trimmingBlanks
            if let id = TaxonID(trimmed) {
                if id <= 0 {
                    errors[position] = .invalidArgument("taxon ids are positive integers, got \(id)")
                } else if let node = tree.index(of: id) {
                    nodes[position] = node
                } else {
                    needSQL.append(position)
                }
            } else {
                needSQL.append(position)
            }
        }
        if !needSQL.isEmpty {
            try database.read { db in
                for position in needSQL {
                    do {
                        let id = try resolve(db, queries[position].trimmingBlanks,
                                             exactNames: exactNames, wholeTree: tree)
                        if let node = tree.index(of: id) {
                            nodes[position] = node
                        } else {
                            switch try retired(db, id) {
                            case .merged(let new)?:
                                guard let node = tree.index(of: new) else { throw TaxonomyError.taxonNotFound(id) }
                                nodes[position] = node
                                mergedFrom[position] = id
                            case .deleted?: throw TaxonomyError.taxonDeleted(id)
                            case nil: throw TaxonomyError.taxonNotFound(id)
                            }
                        }
                    } catch let error as TaxonomyError {
                        errors[position] = error
                    }
                }
            }
        }
        var response = Stol_V1_LineageBatchResponse()
        response.results.reserveCapacity(queries.count)
        for (position, query) in queries.enumerated() {
            var result = Stol_V1_LineageResult()
            result.query = query
            if let node = nodes[position] {
                if let old = mergedFrom[position] { result.mergedFrom = old }
                result.taxon = Self.treeTaxon(tree, node)
                let lineage = tree.ancestors(of: node)
                switch form {
                case .taxa, .UNRECOGNIZED:
                    result.lineage = lineage.map { Self.treeTaxon(tree, $0) }
                case .compact:
                    result.lineageIds = lineage.map(tree.id(at:))
                    result.lineageRanks = lineage.map(tree.rank(of:))
                    result.lineageNames = lineage.map(tree.name(of:))
                case .ids:
                    result.lineageIds = lineage.map(tree.id(at:))
                }
            } else if let error = errors[position] {
                result.error = error.protocolError.proto
            }
            response.results.append(result)
        }
        return response
    }

    /// Compact lineages on the main ranks from the in-memory tree (a recursive query
    /// per id cost 70 µs of the server's time): ids and ranks from
    /// ``CompactTaxonTree``, names from the whole tree when it is loaded, else one
    /// `IN (…)` query per 512 taxa of the batch.
    private func mainTreeLineages(_ queries: [String], tree: CompactTaxonTree, indexes: MemoryIndexes,
                                  form: Stol_V1_LineageForm) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        var response = Stol_V1_LineageBatchResponse()
        var chains: [[Int]?] = []
        /// Results whose taxon is a node outside the view: its position in the whole
        /// tree (its chain is then its nearest main-rank ancestor's, that one included).
        var outside: [Int: Int] = [:]
        try database.read { db in
            for query in queries {
                var result = Stol_V1_LineageResult()
                result.query = query
                do {
                    var id = try resolve(db, query.trimmingBlanks, exactNames: indexes.exactNames)
                    var node = tree.index(of: id)
                    if node == nil {
                        switch try retired(db, id) {
                        case .merged(let new)?:
                            result.mergedFrom = id
                            id = new
                            node = tree.index(of: new)
                        case .deleted?: throw TaxonomyError.taxonDeleted(id)
                        case nil: break
                        }
                    }
                    if node == nil, layout.everyNode, let full = indexes.fullTree, let wholeNode = full.index(of: id) {
                        // A node outside the view (a strain, a clade): its main-rank lineage is
                        // its nearest main-rank ancestor's, that one included, from memory.
                        var ancestor = full.parent(of: wholeNode)
                        while let current = ancestor, tree.index(of: full.id(at: current)) == nil { ancestor = full.parent(of: current) }
                        var chain: [Int] = []
                        var parent = ancestor.flatMap { tree.index(of: full.id(at: $0)) }.map(Int32.init) ?? -1
                        while parent >= 0 {
                            chain.append(Int(parent))
                            parent = tree.parentIndex[Int(parent)]
                        }
                        outside[chains.count] = wholeNode
                        chains.append(chain.reversed())
                        response.results.append(result)
                        continue
                    }
                    guard let node else {
                        // Before the whole tree is loaded: the same lineage from SQL.
                        guard layout.everyNode, let (taxon, lineage) = try lineage(db, of: id, language: "en") else {
                            throw TaxonomyError.taxonNotFound(id)
                        }
                        result.taxon = taxon
                        result.taxon.commonName = ""
                        result.lineageIds = lineage.map(\.id)
                        if form == .compact {
                            result.lineageRanks = lineage.map { TaxonomyQueries.modelRank($0.rank)?.rawValue ?? "" }
                            result.lineageNames = lineage.map(\.scientificName)
                        }
                        response.results.append(result)
                        chains.append(nil)
                        continue
                    }
                    var chain = [node]
                    var parent = tree.parentIndex[node]
                    while parent >= 0 {
                        chain.append(Int(parent))
                        parent = tree.parentIndex[Int(parent)]
                    }
                    chains.append(chain.reversed())
                } catch let error as TaxonomyError {
                    result.error = error.protocolError.proto
                    chains.append(nil)
                }
                response.results.append(result)
            }
        }
        // Names of every taxon the batch shows.
        var names: [TaxonID: String] = [:]
        // With ids only, just the taxa themselves (a node outside the view is named by the whole tree).
        var shownNodes: [Int] = []
        for (position, chain) in chains.enumerated() {
            guard let chain else { continue }
            if form != .ids {
                shownNodes += chain
            } else if outside[position] == nil, let last = chain.last {
                shownNodes.append(last)
            }
        }
        let shown = Set(shownNodes.map(tree.id(at:)))
        if let full = indexes.fullTree {
            for id in shown { if let node = full.index(of: id) { names[id] = full.name(of: node) } }
        } else {
            let ids = Array(shown)
            try database.read { db in
                for chunk in stride(from: 0, to: ids.count, by: 512) {
                    let part = Self.padded(Array(ids[chunk..<min(chunk + 512, ids.count)]))
                    let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                        SELECT id, scientific_name FROM taxa WHERE id IN (\(Self.placeholders(part)))
                        """), arguments: StatementArguments(part))
                    while let row = try rows.next() { names[row[0]] = row[1] }
                }
            }
        }
        func rank(_ node: Int) -> String { TaxonRank.allCases[Int(tree.rankLevel[node])].rawValue }
        for (position, chain) in chains.enumerated() {
            guard let chain else { continue }
            let ancestors: ArraySlice<Int>
            var taxon: Stol_V1_Taxon
            if let wholeNode = outside[position], let full = indexes.fullTree {
                ancestors = chain[...]
                taxon = Self.treeTaxon(full, wholeNode)
            } else {
                guard let last = chain.last else { continue }
                ancestors = chain.dropLast()
                taxon = Stol_V1_Taxon()
                taxon.id = tree.id(at: last)
                if let parent = ancestors.last { taxon.parentID = tree.id(at: parent) }
                taxon.rank = Self.wireRank(TaxonRank.allCases[Int(tree.rankLevel[last])])
                taxon.scientificName = names[taxon.id] ?? ""
            }
            response.results[position].taxon = taxon
            response.results[position].lineageIds = ancestors.map(tree.id(at:))
            if form == .compact {
                response.results[position].lineageRanks = ancestors.map(rank)
                response.results[position].lineageNames = ancestors.map { names[tree.id(at: $0)] ?? "" }
            }
        }
        return response
    }

    /// A node of the whole tree as a `Taxon`: id, parent, rank (the main rank, if
    /// the node has one), the source's rank and the scientific name.
    static func treeTaxon(_ tree: FullTaxonTree, _ node: Int) -> Stol_V1_Taxon {
        var taxon = Stol_V1_Taxon()
        taxon.id = tree.id(at: node)
        if let parent = tree.parent(of: node) { taxon.parentID = tree.id(at: parent) }
        taxon.rank = tree.mainRank(of: node).map(wireRank) ?? .unspecified
        taxon.sourceRank = tree.rank(of: node)
        taxon.scientificName = tree.name(of: node)
        taxon.status = .accepted
        return taxon
    }

    /// The id a query names: a decimal id as it is; a scientific name, as written or
    /// with its first letter capitalised, among the nodes of `wholeTree` (its name
    /// index, no query) or else among `taxa` (accepted ones first); else a common
    /// name or synonym. Several taxa with that name are
    /// ``TaxonomyError/ambiguousName(_:_:)`` (naming at most 16).
    func resolve(_ db: Database, _ query: String, exactNames: [String: TaxonID]?,
                 wholeTree: FullTaxonTree? = nil) throws -> TaxonID {
        if let id = TaxonID(query) {
            guard id > 0 else { throw TaxonomyError.invalidArgument("taxon ids are positive integers, got \(id)") }
            return id
        }
        guard !query.isEmpty else { throw TaxonomyError.invalidArgument("empty query") }
        let capitalised = query.prefix(1).uppercased() + query.dropFirst()
        for name in capitalised == query ? [query] : [query, capitalised] {
            let ids: [TaxonID]
            if let wholeTree {
                ids = wholeTree.nodes(named: name).prefix(16).map(wholeTree.id(at:))
            } else {
                ids = try TaxonID.fetchAll(db.cachedStatement(sql: """
                    SELECT id FROM taxa WHERE scientific_name = ?
                    AND status = (SELECT min(status) FROM taxa WHERE scientific_name = ?) ORDER BY id LIMIT 16
                    """), arguments: [name, name])
            }
            if ids.count == 1 { return ids[0] }
            if ids.count > 1 { throw TaxonomyError.ambiguousName(name, ids) }
        }
        let folded = SearchQuery.words(in: query).joined(separator: " ")
        if let exactNames {
            if let id = exactNames[folded] { return id }
        } else {
            for row in try Row.fetchAll(db, sql: "SELECT taxon_id, name FROM names ORDER BY is_preferred DESC, id")
            where SearchQuery.words(in: row["name"]).joined(separator: " ") == folded {
                return row["taxon_id"]
            }
        }
        throw TaxonomyError.nameNotFound
    }
}
