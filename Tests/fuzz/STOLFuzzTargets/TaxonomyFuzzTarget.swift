import STOLProtocol
import STOLTaxonomy
import STOLTestFixtures
import STOLTransport

/// `stol-taxonomyd`'s request handling (``TaxonomyService``) on a small real
/// database, fed what a client could send on one connection (``RequestStream``).
///
/// For every request: the answer is well-formed (``ResponseCheck``), carries the
/// database's identity, has the result case of the operation asked or a typed
/// error — never `INTERNAL`, which is a bug or an I/O failure on a database that
/// has neither — and keeps the limits it was asked for (page and search sizes,
/// rank and status filters, one lineage per query). The synchronous path
/// (`respondNow`) answers exactly as a lane does (but for the counts of the status
/// and diagnostics answers, which the two calls change). The diagnostics
/// report never contains a search text of the same connection.
public final class TaxonomyFuzzTarget: FuzzTarget {
    public static let name = "fuzz-taxonomy"
    public static let inputIsRequestStream = true

    let service: TaxonomyService
    let identity: Stol_V1_DatabaseIdentity
    static let context = RequestContext(peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000), logger: quietLogger)
    static let allowedErrors: Set<Stol_V1_ErrorCode> = [.invalidRequest, .notFound, .unimplemented, .releaseNotInstalled]

    init(service: TaxonomyService, identity: Stol_V1_DatabaseIdentity) {
        self.service = service
        self.identity = identity
    }

    public static func make() throws -> TaxonomyFuzzTarget {
        let directory = try FuzzScratch.makeDirectory("stolfuzz-taxonomy")
        try FixtureDatabase.build(at: directory + "/bundled.sqlite")
        let provider = try ActiveDatabaseProvider(bundledPath: directory + "/bundled.sqlite",
                                                  referencePath: directory + "/reference.sqlite",
                                                  activationPath: directory + "/activation.json",
                                                  logger: quietLogger)
        // Every input sees the same server: the in-memory tree and word indexes are built.
        let database = provider.current().database
        _ = database.waitForMemoryIndexes()
        return TaxonomyFuzzTarget(service: TaxonomyService(provider: provider), identity: database.identity)
    }

    public func run(_ input: [UInt8]) throws(FuzzFailure) {
        var searchTexts: [String] = []
        for item in RequestStream<Stol_V1_TaxonomyRequest>.cut(input) {
            switch item {
            case .framingError(let error):
                try ResponseCheck.framingError(error, as: Stol_V1_TaxonomyResponse.self)
            case .request(let request, _):
                if case .search(let search) = request.body, search.query.utf8.count >= 16 { searchTexts.append(search.query) }
                try answer(request, searchTexts: searchTexts)
            }
        }
    }

    private func answer(_ request: Stol_V1_TaxonomyRequest, searchTexts: [String]) throws(FuzzFailure) {
        let service = self.service
        let now = service.respondNow(to: request, context: Self.context)
        let response = runBlocking { await service.respond(to: request, context: Self.context) }
        let what = RequestStream<Stol_V1_TaxonomyRequest>.describe(request, body: request.body)
        try ResponseCheck.wellFormed(response, requestID: request.id, allowed: Self.allowedErrors, what)
        try expect(response.database == identity, "\(what): answered without the database's identity")
        // The synchronous path (benchmarks, tests) answers as a lane does, the indexes being loaded.
        switch request.body {
        case .status?, .diagnostics?: break
        default: try expect(now.isEqualTo(message: response), "\(what): answered synchronously differently than on a lane")
        }
        if let error = response.protocolError {
            if request.body == nil {
                try expect(error.code == (request.unknownFields.data.isEmpty ? .invalidRequest : .unimplemented),
                           "\(what): a request without a known body answered \(error)")
            }
            if error.code == .notFound {
                try expect(!(error.details["taxon_id"] ?? "").isEmpty, "\(what): NOT_FOUND without details[taxon_id]")
            }
            return
        }
        try Self.checkResult(request, response, what, searchTexts: searchTexts)
    }

    /// The result answers the operation asked, within the limits asked for.
    static func checkResult(_ request: Stol_V1_TaxonomyRequest, _ response: Stol_V1_TaxonomyResponse,
                            _ what: String, searchTexts: [String]) throws(FuzzFailure) {
        switch (request.body, response.result) {
        case (.status, .status(let status)):
            try expect(status.treeLoaded && status.taxaCount > 0, "\(what): status of an empty or unloaded database")
        case (.getTaxon(let get), .taxon(let taxon)):
            try expect(taxon.id == get.taxonID, "\(what): asked for taxon \(get.taxonID), got \(taxon.id)")
        case (.children(let children), .children(let page)):
            let limit = children.limit == 0 ? Int(ProtocolLimits.defaultPageSize) : Int(children.limit)
            try expect(page.taxa.count <= limit, "\(what): \(page.taxa.count) children for a limit of \(limit)")
            try expect(page.taxa.allSatisfy { $0.parentID == children.taxonID }, "\(what): a child of another taxon")
        case (.roots, .roots(let page)):
            try expect(page.taxa.allSatisfy { !$0.hasParentID }, "\(what): a root with a parent")
        case (.ancestors, .ancestors), (.detail, .detail), (.compare, .compare):
            break
        case (.search(let search), .search(let result)):
            let limit = search.limit == 0 ? Int(ProtocolLimits.defaultSearchLimit) : Int(search.limit)
            try expect(result.hits.count <= limit, "\(what): \(result.hits.count) hits for a limit of \(limit)")
            if search.rank != .unspecified {
                try expect(result.hits.allSatisfy { $0.taxon.rank == search.rank }, "\(what): a hit of another rank than \(search.rank)")
            }
            if !search.conservation.isEmpty {
                let statuses = Set(search.conservation.map { $0.uppercased() })
                try expect(result.hits.allSatisfy { statuses.contains($0.taxon.conservation.uppercased()) },
                           "\(what): a hit outside the statuses \(statuses.sorted())")
            }
            try expect(result.hits.allSatisfy { $0.score.isFinite && $0.taxon.id > 0 }, "\(what): a hit without a score or taxon")
        case (.relatives(let relatives), .relatives(let result)):
            let n = relatives.n == 0 ? 10 : Int(relatives.n)
            try expect(result.relatives.count <= n, "\(what): \(result.relatives.count) relatives for n = \(n)")
        case (.lineageBatch(let batch), .lineageBatch(let result)):
            try expect(result.results.map(\.query) == batch.queries, "\(what): not one result per query, in order")
            try expect(result.results.allSatisfy { !$0.hasError || $0.formatted.isEmpty }, "\(what): a failed query with a text")
            try expect(batch.hasTemplate || (result.unclassified.isEmpty && result.results.allSatisfy { $0.formatted.isEmpty }),
                       "\(what): a text without a template")
        case (.rankOrder, .rankOrder(let order)):
            try expect(order == .current, "\(what): another rank order than the table's")
        case (.rankFilter(let filter), .rankFilter(let result)):
            try expect(result.results.map(\.query) == filter.queries, "\(what): not one result per query, in order")
            try expect(result.results.allSatisfy { $0.hasError == ($0.taxonID == 0) && !($0.kept && $0.hasError) },
                       "\(what): a result with both an error and a taxon, or neither, or kept with an error")
        case (.annotateTree(let tree), .annotateTree(let result)):
            try expect(result.taxonIds.count == tree.depths.count, "\(what): not one taxon per node")
            try expect(zip(tree.taxonIds, result.taxonIds).allSatisfy { $0 <= 0 || $0 == $1 },
                       "\(what): a node with a taxon of its own answered another")
            try expect(result.notAncestors.allSatisfy { Int($0) + 1 < tree.depths.count && tree.taxonIds[Int($0)] > 0
                                                         && tree.depths[Int($0) + 1] > tree.depths[Int($0)] },
                       "\(what): a misplaced label named on a leaf, or on a node without a taxon of its own")
        case (.descendants(let asked), .descendants(let page)):
            let limit = asked.limit == 0 ? TreeQueries.defaultDescendantsPage : Int(asked.limit)
            try expect(page.taxa.count <= limit && Int(page.total) >= Int(asked.offset) + page.taxa.count || page.taxa.isEmpty,
                       "\(what): \(page.taxa.count) taxa for a limit of \(limit), or a total below the page")
            try expect(page.taxa.allSatisfy { $0.id != asked.taxonID && !$0.sourceRank.isEmpty && $0.hasSourceParentID },
                       "\(what): the taxon among its descendants, or a descendant without its source rank or parent")
        case (.resolveName, .resolveName(let result)):
            try expect(result.resolution != .unspecified && result.candidates.count <= 10
                       && result.totalCandidates >= result.candidates.count
                       && (result.resolution == .one) == (result.taxonID != 0 && result.candidates.isEmpty),
                       "\(what): a resolution without its taxon, or with more than 10 candidates")
        case (.compareBatch(let batch), .compareBatch(let result)):
            try expect(result.results.map { [$0.a, $0.b] } == batch.pairs.map { [$0.a, $0.b] }, "\(what): not one result per pair, in order")
            for pair in result.results where !pair.hasError && !pair.unrelated {
                try expect(pair.lcaID > 0 && pair.aID > 0 && pair.bID > 0, "\(what): a related pair without its ancestor")
            }
        case (.nameLookup(let lookup), .nameLookup(let result)):
            try expect(result.results.map(\.name) == lookup.names, "\(what): not one result per name, in order")
            for name in result.results {
                try expect(name.ids == name.ids.sorted() && name.ids.count == name.ranks.count && name.hasError == name.ids.isEmpty,
                           "\(what): ids not ascending, ranks not one per id, or an error beside ids")
            }
        case (.subtree(let asked), .subtree(let subtree)):
            let limit = asked.maxTaxa == 0 ? TreeQueries.defaultSubtreeTaxa : Int(asked.maxTaxa)
            try expect(subtree.ids.first == asked.taxonID && subtree.depths.first == 0, "\(what): a subtree that does not start at its taxon")
            try expect(subtree.ids.count <= limit && [subtree.depths.count, subtree.names.count, subtree.ranks.count]
                .allSatisfy { $0 == subtree.ids.count }, "\(what): \(subtree.ids.count) taxa for a limit of \(limit), or arrays of other lengths")
            try expect(zip(subtree.depths, subtree.depths.dropFirst()).allSatisfy { $1 >= 1 && $1 <= $0 + 1 },
                       "\(what): depths that are not a preorder")
        case (.getTaxa(let asked), .taxa(let answer)):
            // Every id asked is answered (as itself or the taxon it was merged into) or missing.
            let mergedInto = Dictionary(response.merged.map { ($0.oldID, $0.newID) }, uniquingKeysWith: { a, _ in a })
            let answered = Set(answer.taxa.map(\.id))
            try expect(answered.count == answer.taxa.count, "\(what): a taxon answered twice")
            try expect(asked.taxonIds.allSatisfy { answered.contains(mergedInto[$0] ?? $0) || answer.missingIds.contains($0) },
                       "\(what): an id neither answered nor missing")
            try expect(answer.missingIds.allSatisfy { !answered.contains($0) }, "\(what): an id both answered and missing")
        case (.diagnostics, .diagnostics(let diagnostics)):
            for text in searchTexts {
                try expect(!diagnostics.report.contains(text), "\(what): the report contains a search text")
            }
        default:
            throw FuzzFailure("\(what): answered with \(String(describing: response.result))")
        }
    }

    public static func generatedSeeds() throws -> [(name: String, bytes: [UInt8])] {
        typealias Request = Stol_V1_TaxonomyRequest
        var seeds = try FuzzSeeds.requestVectors(socket: "taxonomy.sock")
        seeds.append(("seed-every-operation", FuzzSeeds.connection(Request.self, [
            .with { $0.status = .init() },
            .with { $0.getTaxon = .with { $0.taxonID = 9689; $0.language = "es" } },
            .with { $0.children = .with { $0.taxonID = 9688; $0.limit = 2; $0.offset = 1 } },
            .with { $0.roots = .with { $0.language = "de" } },
            .with { $0.ancestors = .with { $0.taxonID = 9694 } },
            .with { $0.detail = .with { $0.taxonID = 9689; $0.language = "zh" } },
            .with { $0.compare = .with { $0.taxonA = 9689; $0.taxonB = 562 } },
            .with { $0.relatives = .with { $0.taxonID = 9689; $0.n = 3; $0.computed = true } },
            .with { $0.lineageBatch = .with { $0.queries = ["9689", "Panthera tigris", "lion", "nothing"] } },
            .with { $0.lineageBatch = .with { $0.queries = ["9689", "Felidae"]; $0.form = .compact } },
            .with { $0.compareBatch = .with { $0.pairs = [.with { $0.a = "9689"; $0.b = "Panthera tigris" },
                                                         .with { $0.a = "9689"; $0.b = "424242" }] } },
            .with { $0.nameLookup = .with { $0.names = ["Panthera", "lion", "nothing"] } },
            .with { $0.subtree = .with { $0.taxonID = 9681; $0.maxTaxa = 50 } },
            .with { $0.getTaxa = .with { $0.taxonIds = [9689, 9685, 424242, 9689]; $0.language = "en" } },
            .with { $0.diagnostics = .init() },
            .with { $0.lineageBatch = .with { $0.queries = ["9689", "562", "nothing"]; $0.ranks = .all
                                              $0.template = .with { $0.format = "{k};{p};{g};{s}"; $0.fillMissing = true; $0.prefixRanks = true } } },
            .with { $0.rankOrder = .init() },
            .with { $0.rankFilter = .with { $0.queries = ["9689", "9688", "nothing"]; $0.lowerThan = "genus"
                                            $0.savePredictableNoranks = true } },
            .with { $0.annotateTree = .with { $0.depths = [0, 1, 2, 2, 1]; $0.taxonIds = [0, 0, 9689, 9694, 9685] } },
            .with { $0.resolveName = .with { $0.text = "lion" } },
            .with { $0.resolveName = .with { $0.text = "Panthera"; $0.rank = .genus } },
            .with { $0.descendants = .with { $0.taxonID = 9688; $0.rank = "species"; $0.limit = 2; $0.offset = 1 } },
            .with { $0.descendants = .with { $0.taxonID = 2759; $0.rank = "Division" } },
            .with { $0.getTaxon = .with { $0.taxonID = 10090; $0.ranks = .all } },
            .with { $0.detail = .with { $0.taxonID = 10090; $0.ranks = .all } },
            .with { $0.annotateTree = .with { $0.depths = [0, 1, 2, 2, 1]; $0.taxonIds = [0, 9688, 9606, 9598, 9685] } }
        ])))
        seeds.append(("seed-searches", FuzzSeeds.connection(Request.self, [
            .with { $0.search = .with { $0.query = "lion" } },
            .with { $0.search = .with { $0.query = "Pantera leo"; $0.limit = 5 } },
            .with { $0.search = .with { $0.query = "pan"; $0.prefix = true; $0.rank = .genus } },
            .with { $0.search = .with { $0.query = "panthera tigris"; $0.phrase = true; $0.conservation = ["EN", "vu"] } },
            .with { $0.search = .with { $0.query = "león"; $0.language = "es"; $0.noFuzzy = true } },
            .with { $0.search = .with { $0.query = "\"*( NEAR -:" } }
        ])))
        seeds.append(("seed-refused", FuzzSeeds.connection(Request.self, [
            .with { $0.getTaxon = .with { $0.taxonID = -1 } },
            .with { $0.children = .with { $0.taxonID = 9688; $0.limit = 501 } },
            .with { $0.relatives = .with { $0.taxonID = 9688; $0.n = 101 } },
            .with { $0.compare = .with { $0.taxonA = 9689; $0.taxonB = 424242 } },
            .with { $0.search = .with { $0.query = String(repeating: "a", count: 513) } },
            .with { $0.lineageBatch = .with { $0.queries = ["9689"]; $0.template = .with { $0.format = "{x}" } } },
            .with { $0.rankFilter = .with { $0.lowerThan = "genus"; $0.higherThan = "family" } },
            .with { $0.annotateTree = .with { $0.depths = [0, 2]; $0.taxonIds = [0, 9689] } },
            .with { $0.resolveName = .with { $0.text = "" } },
            .with { $0.descendants = .with { $0.taxonID = 9688; $0.rank = "specis" } },
            .with { $0.descendants = .with { $0.taxonID = 9688; $0.limit = 10_001 } },
            Request()
        ])))
        seeds.append(("seed-unknown-operation", FuzzSeeds.unknownOperation(Request.self)))
        return seeds
    }
}
