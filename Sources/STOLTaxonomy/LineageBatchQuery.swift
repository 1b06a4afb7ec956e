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
    /// source's tree, ``TaxonomyTree``), answered from memory; it throws
    /// ``TaxonomyError/memoryIndexesLoading`` while that tree is being built (the
    /// service then waits) and ``TaxonomyError/fullTreeAbsent`` on a database
    /// that keeps only the main ranks.
    public func lineageBatch(_ queries: [String], language: String, ranks: Stol_V1_RankView = .main,
                             form: Stol_V1_LineageForm = .taxa) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        if ranks == .all {
            let tree = try wholeTree()
            return try treeLineages(queries, tree: tree, exactNames: database.memoryIndexes?.exactNames ?? [:],
                                    view: .all, form: form)
        }
        let exactNames = database.memoryIndexes?.exactNames
        if form != .taxa, let indexes = database.memoryIndexes, let tree = indexes.tree {
            return try treeLineages(queries, tree: tree, exactNames: indexes.exactNames, view: .main, form: form,
                                    wholeTree: indexes.holdsWholeTree)
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

    /// Lineages in `view` from the in-memory tree (a recursive query per id cost
    /// 70 µs of the server's time): ids and scientific names through the tree's own
    /// name index (schemas 2 and 3), common names and synonyms through the
    /// in-memory exact names; SQL only for names the tree cannot resolve and ids it
    /// does not hold (merged or deleted ids).
    ///
    /// In the main view a node outside the view (a strain, a clade) is the source's
    /// node, with its NCBI parent and rank; its lineage is its nearest main-rank
    /// ancestor's, that one included.
    private func treeLineages(_ queries: [String], tree: TaxonomyTree, exactNames: [String: TaxonID],
                              view: TaxonomyTree.View, form: Stol_V1_LineageForm,
                              wholeTree: Bool = true) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        var nodes = [Int?](repeating: nil, count: queries.count)
        var errors = [TaxonomyError?](repeating: nil, count: queries.count)
        var mergedFrom = [TaxonID?](repeating: nil, count: queries.count)
        /// A node the query may name: schema 2's nodes outside `taxa` have no main-rank lineage.
        func answerable(_ node: Int) -> Bool { view == .all || layout.everyNode || tree.isInView(node) }
        var needSQL: [Int] = []  // names, and ids the tree does not hold (merged or deleted?)
        for (position, query) in queries.enumerated() {
            let trimmed = query.trimmingBlanks
            if let id = TaxonID(trimmed) {
                if id <= 0 {
                    errors[position] = .invalidArgument("taxon ids are positive integers, got \(id)")
                } else if let node = tree.index(of: id), answerable(node) {
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
                                             exactNames: exactNames, wholeTree: wholeTree ? tree : nil)
                        if let node = tree.index(of: id), answerable(node) {
                            nodes[position] = node
                        } else {
                            switch try retired(db, id) {
                            case .merged(let new)?:
                                guard let node = tree.index(of: new), answerable(node) else { throw TaxonomyError.taxonNotFound(id) }
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
        func rank(_ node: Int) -> String { view == .main ? tree.mainRank(of: node)?.rawValue ?? "" : tree.rank(of: node) }
        var response = Stol_V1_LineageBatchResponse()
        response.results.reserveCapacity(queries.count)
        for (position, query) in queries.enumerated() {
            var result = Stol_V1_LineageResult()
            result.query = query
            if let node = nodes[position] {
                if let old = mergedFrom[position] { result.mergedFrom = old }
                result.taxon = view == .main && tree.isInView(node) ? Self.viewTaxon(tree, node) : Self.treeTaxon(tree, node)
                let lineage = tree.ancestors(of: node, in: view)
                switch form {
                case .taxa, .UNRECOGNIZED:
                    result.lineage = lineage.map { view == .main ? Self.viewTaxon(tree, $0) : Self.treeTaxon(tree, $0) }
                case .compact:
                    result.lineageIds = lineage.map(tree.id(at:))
                    result.lineageRanks = lineage.map(rank)
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

    /// A node of the view as a `Taxon`: id, view parent, main rank, scientific name.
    static func viewTaxon(_ tree: TaxonomyTree, _ node: Int) -> Stol_V1_Taxon {
        var taxon = Stol_V1_Taxon()
        taxon.id = tree.id(at: node)
        if let parent = tree.parent(of: node, in: .main) { taxon.parentID = tree.id(at: parent) }
        taxon.rank = tree.mainRank(of: node).map(wireRank) ?? .unspecified
        taxon.scientificName = tree.name(of: node)
        return taxon
    }

    /// A node of the whole tree as a `Taxon`: id, parent, rank (the main rank, if
    /// the node has one), the source's rank and the scientific name.
    static func treeTaxon(_ tree: TaxonomyTree, _ node: Int) -> Stol_V1_Taxon {
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
                 wholeTree: TaxonomyTree? = nil) throws -> TaxonID {
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
