import Foundation
import Glibc
import Logging
import STOLModel
import STOLPipeline
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import STOLTransport
import XCTest

/// Shared helpers for the taxonomy server tests: a fixture database built by the
/// real pipeline into a temporary directory, and a service wired to it exactly as
/// `stol-taxonomyd` wires it (bundled, reference and activation paths).


/// A tree's image bytes under an empty key: two trees that write the same bytes are the same tree.
func treeImageBytes(_ tree: TaxonomyTree?) throws -> [UInt8] {
    var bytes: [UInt8] = []
    try XCTUnwrap(tree).writeImage(key: "") { bytes += $0 }
    return bytes
}

/// Builds `FelidaeFixture` (plus `extraUsages`) with the real pipeline into `output`.
func buildFixtureDatabase(at output: String, extraUsages: [String] = [], in scratch: String) throws {
    let source = scratch + "/source-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: source) }
    try FelidaeFixture.write(to: source, extraUsages: extraUsages)
    _ = try TaxonomyBuilder(logger: quietLogger).build(source: source, output: output)
}

/// The snow leopard: in the reference database only, so answers show which one served.
let referenceOnlyUsages = [row("29064", "9688", "accepted", "species", "Panthera uncia", "(Schreber, 1775)")]

/// A taxonomy service over a bundled database, with the reference and activation
/// files in the same directory (absent until a test writes them).
struct ServiceHarness {
    let directory: String
    let bundledPath: String
    let referencePath: String
    let activationPath: String
    let provider: ActiveDatabaseProvider
    let service: TaxonomyService

    /// - Parameters:
    ///   - bundledSource: the source of the bundled database (default: the Felidae fixture);
    ///   - options: how it is built (format, …);
    ///   - legacySchema: rewrite it into this older schema (``LegacySchema``) before
    ///     serving it, keeping the whole tree in schema 2 when `legacyKeepsTree`.
    init(_ testCase: XCTestCase, bundledSource: String? = nil,
         options: TaxonomyBuilder.Options = TaxonomyBuilder.Options(),
         legacySchema: Int? = nil, legacyKeepsTree: Bool = true) throws {
        directory = try makeTemporaryDirectory(testCase)
        bundledPath = directory + "/bundled.sqlite"
        referencePath = directory + "/reference.sqlite"
        activationPath = directory + "/activation.json"
        if let bundledSource {
            _ = try TaxonomyBuilder(options: options, logger: quietLogger).build(source: bundledSource, output: bundledPath)
        } else {
            try buildFixtureDatabase(at: bundledPath, in: directory)
        }
        if let legacySchema {
            try LegacySchema.downgrade(bundledPath, to: legacySchema, keepingWholeTree: legacyKeepsTree)
        }
        provider = try ActiveDatabaseProvider(bundledPath: bundledPath, referencePath: referencePath,
                                              activationPath: activationPath, logger: quietLogger)
        service = TaxonomyService(provider: provider)
    }

    /// A service over the same databases whose in-memory indexes are built only when the
    /// test starts the build (`database.startLoadingMemoryIndexes()`), to see what is
    /// answered meanwhile; the build is started at the test's end, so no request is left
    /// waiting.
    func serviceHoldingTheIndexes(_ testCase: XCTestCase) throws -> (service: TaxonomyService, database: TaxonomyDatabase) {
        let provider = try ActiveDatabaseProvider(
            bundledPath: bundledPath, referencePath: referencePath,
            activationPath: activationPath, logger: quietLogger) { path, kind throws(TaxonomyError) in
            try TaxonomyDatabase(path: path, kind: kind, indexLoading: .onRequest)
        }
        let database = provider.current().database
        testCase.addTeardownBlock { database.startLoadingMemoryIndexes() }
        return (TaxonomyService(provider: provider), database)
    }

    /// The in-memory tree and word indexes load in the background; tests of what
    /// they answer wait for them (suspending, holding no thread).
    func waitForTreeLoaded(file: StaticString = #filePath, line: UInt = #line) async {
        _ = await provider.current().database.loadedMemoryIndexes()
        let loaded = await status()?.treeLoaded
        XCTAssertEqual(loaded, true, file: file, line: line)
    }

    func installReference() throws {
        try buildFixtureDatabase(at: referencePath, extraUsages: referenceOnlyUsages, in: directory)
        settle()
    }

    /// Writes the state file as the import coordinator does (whole, by rename).
    func requestReference(_ use: Bool) throws {
        try JSONEncoder().encode(ActivationState(useReferenceDB: use))
            .write(to: URL(fileURLWithPath: activationPath), options: .atomic)
        settle()
    }

    /// Notices a change of the files and installs what it selects before the test's
    /// next request: the service's own requests never wait for a database to open
    /// (the previous one answers meanwhile; `EveryRequestDuringASwitchTests` pins that).
    func settle() {
        _ = provider.current()
    }

    static let context = RequestContext(peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000), logger: quietLogger)

    /// Sends one request through `respond(to:context:)` and awaits the answer.
    func send(_ body: Stol_V1_TaxonomyRequest.OneOf_Body?, id: UInt64 = 7) async -> Stol_V1_TaxonomyResponse {
        var request = Stol_V1_TaxonomyRequest()
        request.id = id
        request.body = body
        return await service.respond(to: request, context: Self.context)
    }

    func getTaxon(_ taxonID: Int64, language: String = "") async -> Stol_V1_TaxonomyResponse {
        var get = Stol_V1_GetTaxonRequest()
        get.taxonID = taxonID
        get.language = language
        return await send(.getTaxon(get))
    }

    func children(_ taxonID: Int64, offset: UInt32 = 0, limit: UInt32 = 0) async -> Stol_V1_TaxonomyResponse {
        var children = Stol_V1_ChildrenRequest()
        children.taxonID = taxonID
        children.offset = offset
        children.limit = limit
        return await send(.children(children))
    }

    func ancestors(_ taxonID: Int64) async -> Stol_V1_TaxonomyResponse {
        var ancestors = Stol_V1_AncestorsRequest()
        ancestors.taxonID = taxonID
        return await send(.ancestors(ancestors))
    }

    func search(_ query: String, prefix: Bool = false, rank: Stol_V1_Rank = .unspecified, limit: UInt32 = 0,
                language: String = "", conservation: [String] = [], phrase: Bool = false,
                fuzzy: Bool = true) async -> Stol_V1_TaxonomyResponse {
        var search = Stol_V1_SearchRequest()
        search.conservation = conservation
        search.phrase = phrase
        search.noFuzzy = !fuzzy
        search.query = query
        search.prefix = prefix
        search.rank = rank
        search.limit = limit
        search.language = language
        return await send(.search(search))
    }

    func compare(_ a: Int64, _ b: Int64) async -> Stol_V1_TaxonomyResponse {
        var compare = Stol_V1_CompareRequest()
        compare.taxonA = a
        compare.taxonB = b
        return await send(.compare(compare))
    }

    func relatives(_ id: Int64, n: UInt32, computed: Bool = false, maximumCandidates: UInt32 = 0) async -> Stol_V1_TaxonomyResponse {
        var relatives = Stol_V1_RelativesRequest()
        relatives.taxonID = id
        relatives.n = n
        relatives.computed = computed
        relatives.maxCandidates = maximumCandidates
        return await send(.relatives(relatives))
    }

    func detail(_ id: Int64, language: String = "") async -> Stol_V1_TaxonomyResponse {
        var detail = Stol_V1_TaxonDetailRequest()
        detail.taxonID = id
        detail.language = language
        return await send(.detail(detail))
    }

    func lineageBatch(_ queries: [String]) async -> Stol_V1_TaxonomyResponse {
        var batch = Stol_V1_LineageBatchRequest()
        batch.queries = queries
        return await send(.lineageBatch(batch))
    }

    func status() async -> Stol_V1_StatusResponse? {
        if case .status(let status)? = await send(.status(Stol_V1_StatusRequest())).result { return status }
        return nil
    }
}

/// The error code of a response, nil when it carries a result.
func errorCode(_ response: Stol_V1_TaxonomyResponse) -> Stol_V1_ErrorCode? {
    if case .error(let error)? = response.result { return error.code }
    return nil
}

func hitIDs(_ response: Stol_V1_TaxonomyResponse) -> [Int64] {
    if case .search(let search)? = response.result { return search.hits.map(\.taxon.id) }
    return []
}

func hits(_ response: Stol_V1_TaxonomyResponse, file: StaticString = #filePath, line: UInt = #line) throws -> [Stol_V1_SearchHit] {
    guard case .search(let search)? = response.result else {
        XCTFail("expected search hits, got \(String(describing: response.result))", file: file, line: line)
        throw POSIXError(.EINVAL)
    }
    return search.hits
}
