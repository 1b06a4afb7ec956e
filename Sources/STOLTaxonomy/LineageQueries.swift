import GRDB
import STOLModel
import STOLProtocol

/// Lineages of many taxa in one request (`lineage_batch`): on the main ranks or
/// NCBI's whole tree, from the in-memory tree once it is loaded.
public struct LineageQueries {
    let database: TaxonomyDatabase

    public init(database: TaxonomyDatabase) {
        self.database = database
    }

    var layout: TaxonomyLayout { database.layout }
    var reader: TaxonReader { TaxonReader(database: database) }
    var names: NameQueries { NameQueries(database: database) }

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
    ///
    /// With `columns`, each found result's `column_ids` holds the id of its lineage's
    /// node of each column's rank (``LineageColumns``).
    public func lineageBatch(_ queries: [String], language: String, ranks: Stol_V1_RankView = .main,
                             form: Stol_V1_LineageForm = .taxa,
                             columns: [String] = []) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        let columns = columns.isEmpty ? nil : try LineageColumns(columns, view: ranks == .all ? .all : .main)
        if ranks == .all {
            let tree = try database.wholeTree()
            return try treeLineages(queries, tree: tree, exactNames: database.memoryIndexes?.loadedExactNames,
                                    view: .all, form: form, columns: columns)
        }
        return try mainLineageBatch(queries, language: language, form: form, columns: columns)
    }

    /// NCBI's whole lineages in the ids form, each also written by `formatted` (the
    /// lineage's nodes root first, then the taxon's node) into the result's `formatted`:
    /// a template filled from the tree, no name of the lineage made into a string but
    /// the template's (``LineageBatchTemplate/treeFormatter(_:)``).
    func wholeLineageBatch(_ queries: [String], columns: [String] = [],
                           formatted: (TaxonomyTree) -> ([Int], Int) -> String) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        let columns = columns.isEmpty ? nil : try LineageColumns(columns, view: .all)
        let tree = try database.wholeTree()
        return try treeLineages(queries, tree: tree, exactNames: database.memoryIndexes?.loadedExactNames,
                                view: .all, form: .ids, columns: columns, formatted: formatted(tree))
    }

    private func mainLineageBatch(_ queries: [String], language: String, form: Stol_V1_LineageForm,
                                  columns: LineageColumns?) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        if let indexes = database.memoryIndexes, let tree = indexes.tree {
            return try treeLineages(queries, tree: tree, exactNames: indexes.loadedExactNames, view: .main, form: form,
                                    wholeTree: indexes.holdsWholeTree, language: language, columns: columns)
        }
        // Before the in-memory tree is built: a recursive query per taxon (ids; a name
        // other than a scientific one waits for the in-memory names, ``NameQueries``).
        return try database.read { db in
            var response = Stol_V1_LineageBatchResponse()
            var table = LineageNodeTable()
            response.results = try queries.map { query in
                try TaxonomyError.checkCancellation()
                var result = Stol_V1_LineageResult()
                result.query = query
                do {
                    var id = try names.resolve(db, query.trimmingBlanks, exactNames: nil)
                    var found = try reader.lineage(db, of: id, language: language)
                    if found == nil {
                        switch try RetiredID.lookup(db, id, in: database) {
                        case .merged(let new)?:
                            result.mergedFrom = id
                            id = new
                            found = try reader.lineage(db, of: new, language: language)
                        case .deleted?: throw TaxonomyError.taxonDeleted(id)
                        case nil: break
                        }
                    }
                    guard let (taxon, lineage) = found else { throw TaxonomyError.taxonNotFound(id) }
                    result.taxon = taxon
                    if let columns {  // main ranks only here: each taxon's rank is its main rank
                        let path = lineage + [taxon]
                        result.columnIds = columns.ids(length: path.count) { index in
                            columns.entries(ofRank: TaxonRank(path[index].rank)?.rawValue ?? "")
                        } id: { path[$0].id }
                    }
                    switch form {
                    case .taxa, .UNRECOGNIZED:
                        result.lineage = lineage
                    case .compact:
                        result.lineageIds = lineage.map(\.id)
                        result.lineageRanks = lineage.map { TaxonRank($0.rank)?.rawValue ?? "" }
                        result.lineageNames = lineage.map(\.scientificName)
                    case .ids, .packed:  // packed: the ids form, packed below
                        result.lineageIds = lineage.map(\.id)
                    case .nodes:
                        result.lineageIds = lineage.map(\.id)
                        table.add(lineage: result.lineageIds) { (TaxonRank(lineage[$0].rank)?.rawValue ?? "", lineage[$0].scientificName) }
                    }
                } catch TaxonomyError.memoryIndexesLoading {
                    throw TaxonomyError.memoryIndexesLoading  // the whole batch waits for them
                } catch let error as TaxonomyError {
                    result.error = error.protocolError.proto
                }
                return result
            }
            response.nodes = table.nodes
            return form == .packed ? Stol_V1_LineageBatchResponse(packing: response) : response
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
    /// ancestor's, that one included. The taxa form of the main view reads the rows
    /// of every taxon of the answer at once (with their common names in `language`),
    /// as ``TaxonReader`` reads any page of taxa: a recursive query per lineage, and a
    /// scientific name resolved by SQL (6,433 rows for "environmental samples"), cost
    /// a thousand times as much in a batch.
    private func treeLineages(_ queries: [String], tree: TaxonomyTree, exactNames: [String: TaxonID]?,
                              view: TaxonomyTree.View, form: Stol_V1_LineageForm,
                              wholeTree: Bool = true, language: String = "en", columns: LineageColumns? = nil,
                              formatted: (([Int], Int) -> String)? = nil) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        var nodes = [Int?](repeating: nil, count: queries.count)
        var errors = [TaxonomyError?](repeating: nil, count: queries.count)
        var mergedFrom = [TaxonID?](repeating: nil, count: queries.count)
        /// A node the query may name: schema 2's nodes outside `taxa` have no main-rank lineage.
        func answerable(_ node: Int) -> Bool { view == .all || layout.everyNode || tree.isInView(node) }
        var needSQL: [Int] = []  // names, and ids the tree does not hold (merged or deleted?)
        for (position, query) in queries.enumerated() {
            let trimmed = query.trimmingBlanks
            if let id = TaxonIDText.id(trimmed) {
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
                    try TaxonomyError.checkCancellation()
                    do {
                        let id = try names.resolve(db, queries[position].trimmingBlanks,
                                             exactNames: exactNames, wholeTree: wholeTree ? tree : nil)
                        if let node = tree.index(of: id), answerable(node) {
                            nodes[position] = node
                        } else {
                            switch try RetiredID.lookup(db, id, in: database) {
                            case .merged(let new)?:
                                guard let node = tree.index(of: new), answerable(node) else { throw TaxonomyError.taxonNotFound(id) }
                                nodes[position] = node
                                mergedFrom[position] = id
                            case .deleted?: throw TaxonomyError.taxonDeleted(id)
                            case nil: throw TaxonomyError.taxonNotFound(id)
                            }
                        }
                    } catch TaxonomyError.memoryIndexesLoading {
                        throw TaxonomyError.memoryIndexesLoading  // a common name before the names' indexes: the batch waits
                    } catch let error as TaxonomyError {
                        errors[position] = error
                    }
                }
            }
        }
        func rank(_ node: Int) -> String { view == .main ? tree.mainRank(of: node)?.rawValue ?? "" : tree.rank(of: node) }
        /// The main view's taxa form: the rows of `taxa`, read once for the whole answer.
        var rows: [TaxonID: Stol_V1_Taxon] = [:]
        if view == .main && ![.compact, .ids, .nodes, .packed].contains(form) {  // the taxa form (an unknown form is answered so)
            var ids = Set<TaxonID>()
            for case let node? in nodes {
                ids.insert(tree.id(at: node))
                for ancestor in tree.ancestors(of: node, in: .main) { ids.insert(tree.id(at: ancestor)) }
            }
            rows = try database.read { db in try reader.taxa(db, ids: Array(ids), language: language) }
        }
        /// A taxon of the answer: its row in the main view's taxa form (the tree's node
        /// for schema 2's nodes outside `taxa`), else what the tree holds of it.
        func taxon(_ node: Int) -> Stol_V1_Taxon {
            if let row = rows[tree.id(at: node)] { return row }
            return view == .main && tree.isInView(node) ? TaxonReader.viewTaxon(tree, node) : TaxonReader.treeTaxon(tree, node)
        }
        /// The columns each rank code fills, looked up once per rank of the tree, not per node.
        let columnEntries: [[LineageColumns.Entry]] = columns.map { columns in
            view == .main ? TaxonRank.allCases.map { columns.entries(ofRank: $0.rawValue) }
                : tree.rankNames.map(columns.entries(ofRank:))
        } ?? []
        /// A node's columns as its lineage line names its rank: on the main view its main
        /// rank (the taxon outside the view, a strain, has none; its source rank is no column's).
        func entries(_ node: Int) -> [LineageColumns.Entry] {
            if view == .all { return columnEntries[tree.rankCode(of: node)] }
            guard let rank = tree.mainRank(of: node) else { return [] }  // a main rank: in the view
            return columnEntries[rank.level]
        }
        if form == .packed {
            return try packedLineages(count: queries.count, nodes: nodes, errors: errors, mergedFrom: mergedFrom,
                                      tree: tree, view: view, taxon: taxon)
        }
        var response = Stol_V1_LineageBatchResponse()
        response.results.reserveCapacity(queries.count)
        var table = LineageNodeTable()
        for (position, query) in queries.enumerated() {
            if position % 64 == 0 { try TaxonomyError.checkCancellation() }
            var result = Stol_V1_LineageResult()
            result.query = query
            if let node = nodes[position] {
                if let old = mergedFrom[position] { result.mergedFrom = old }
                result.taxon = taxon(node)
                let lineage = tree.ancestors(of: node, in: view)
                switch form {
                case .taxa, .UNRECOGNIZED:
                    result.lineage = lineage.map(taxon)
                case .compact:
                    result.lineageIds = lineage.map { tree.id(at: $0) }
                    result.lineageRanks = lineage.map(rank)
                    result.lineageNames = lineage.map { tree.name(of: $0) }
                case .ids, .packed:  // packed: written before this (``packedLineages``)
                    result.lineageIds = lineage.map { tree.id(at: $0) }
                case .nodes:
                    result.lineageIds = lineage.map { tree.id(at: $0) }
                    table.add(lineage: result.lineageIds) { (rank(lineage[$0]), tree.name(of: lineage[$0])) }
                }
                if let formatted { result.formatted = formatted(lineage, node) }
                if let columns {
                    result.columnIds = columns.ids(length: lineage.count + 1) { index in
                        entries(index == lineage.count ? node : lineage[index])
                    } id: { index in tree.id(at: index == lineage.count ? node : lineage[index]) }
                }
            } else if let error = errors[position] {
                result.error = error.protocolError.proto
            }
            response.results.append(result)
        }
        response.nodes = table.nodes
        return response
    }

    /// The packed form of the lineages of `nodes` (``PackedLineageWriter``), written from
    /// the tree: no result message per query on this side either.
    private func packedLineages(count: Int, nodes: [Int?], errors: [TaxonomyError?], mergedFrom: [TaxonID?],
                                tree: TaxonomyTree, view: TaxonomyTree.View,
                                taxon: (Int) -> Stol_V1_Taxon) throws(TaxonomyError) -> Stol_V1_LineageBatchResponse {
        var writer = PackedLineageWriter(queries: count, ids: count * 32)
        for position in 0..<count {
            if position % 64 == 0 { try TaxonomyError.checkCancellation() }
            if let node = nodes[position] {
                writer.found(tree.ancestors(of: node, in: view).lazy.map { tree.id(at: $0) }, taxonID: tree.id(at: node)) {
                    taxon(node)
                }
            } else {
                writer.missing()
            }
            writer.note(error: errors[position]?.protocolError.proto, mergedFrom: mergedFrom[position] ?? 0)
        }
        return writer.response
    }
}
