import Glibc
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import XCTest

/// Each taxonomy request is declared once, by its handler (``TaxonomyRequestTable``),
/// and everything the service does with a request follows from that handler.
final class TaxonomyRequestTableTests: XCTestCase {
    /// Every body the generated `TaxonomyRequest` knows, found by decoding an empty
    /// message in each field number: the list cannot lag behind `taxonomy.proto`.
    private func everyRequestBody() throws -> [(field: String, request: Stol_V1_TaxonomyRequest)] {
        var bodies: [(String, Stol_V1_TaxonomyRequest)] = []
        for number in 1...2047 {
            // Tag (field number, wire type 2: length-delimited) as a varint, then length 0.
            var tag = UInt64(number) << 3 | 2, bytes: [UInt8] = []
            while tag >= 0x80 { bytes.append(UInt8(tag & 0x7f) | 0x80); tag >>= 7 }
            bytes += [UInt8(tag), 0]
            guard let request = try? Stol_V1_TaxonomyRequest(serializedBytes: bytes), request.body != nil else { continue }
            let text = request.textFormatString()  // "get_taxon {\n}\n": the proto's field name
            let field = try XCTUnwrap(text.split(separator: " ").first.map(String.init), text)
            bodies.append((field, request))
        }
        return bodies
    }

    func testEveryRequestBody_hasExactlyOneHandler_withAUniqueOperationName_itsProtoFieldName() throws {
        let bodies = try everyRequestBody()
        XCTAssertGreaterThanOrEqual(bodies.count, 19, "the 19 requests of protocol v1 at least: \(bodies.map(\.field))")
        var handlers: [ObjectIdentifier: String] = [:], operations: Set<String> = []
        for (field, request) in bodies {
            let route = TaxonomyRequestTable.route(request)
            XCTAssertEqual(route.operation, field, "a request is counted under its field name")
            XCTAssertTrue(operations.insert(route.operation).inserted, "two requests counted as \(route.operation)")
            if let other = handlers.updateValue(field, forKey: ObjectIdentifier(route.handler)) {
                XCTFail("\(route.handler) answers both \(other) and \(field)")
            }
        }
        let missing = TaxonomyRequestTable.route(Stol_V1_TaxonomyRequest())
        XCTAssertEqual(missing.operation, "unknown")
        XCTAssertNil(handlers[ObjectIdentifier(missing.handler)], "a request without a body has a handler of its own")
        XCTAssertFalse(operations.contains("unknown"))
    }

    /// Whole-tree relatives are bulk work, and so is the encoding of their answer;
    /// main-rank relatives are neither, however many they are: the request decides both.
    func testRelatives_areBulkWorkAndBulkEncoding_onTheWholeTreeOnly_whateverTheAnswersSize() async throws {
        let bulk = BulkExecutor(threads: 1)
        let service = TaxonomyService(provider: try ServiceHarness(self).provider, bulk: bulk)
        let bulkThread = await bulk.run { pthread_self() }
        var hundred = Stol_V1_TaxonomyResponse()
        hundred.relatives = .with { $0.relatives = Array(repeating: Stol_V1_Relative(), count: 100) }
        for ranks in [Stol_V1_RankView.main, .all] {
            let request = Stol_V1_TaxonomyRequest.with { $0.relatives = .with { $0.taxonID = 9689; $0.n = 100; $0.ranks = ranks } }
            let cost = TaxonomyRequestTable.route(request).cost
            XCTAssertEqual(cost, ranks == .all ? .bulk : .inline, "\(ranks)")
            let thread = await service.encoding(hundred, to: request, context: ServiceHarness.context) { pthread_self() }
            XCTAssertEqual(thread == bulkThread, cost == .bulk,
                           "relatives on \(ranks): encoded on the bulk thread exactly when the work is bulk")
        }
    }

    /// The ids a merge replaces are the handler's own fields, each of them; a batch
    /// or a request naming no single taxon has none.
    func testMergedIDs_areReplacedInTheHandlersFieldsOnly() throws {
        let compare = Stol_V1_TaxonomyRequest.with { $0.compare = .with { $0.taxonA = 5; $0.taxonB = 7 } }
        let replaced = try XCTUnwrap(TaxonomyRequestTable.route(compare).replacingMergedID(7, with: 9) as? BoundRequest<CompareHandler>)
        XCTAssertEqual(replaced.body.taxonA, 5)
        XCTAssertEqual(replaced.body.taxonB, 9)
        XCTAssertNil(TaxonomyRequestTable.route(compare).replacingMergedID(8, with: 9), "an id the request does not name")
        let batch = Stol_V1_TaxonomyRequest.with { $0.getTaxa = .with { $0.taxonIds = [7] } }
        XCTAssertNil(TaxonomyRequestTable.route(batch).replacingMergedID(7, with: 9), "a batch answers its merged ids itself")
    }

    /// An inline request decides from itself alone; one that then finds the in-memory
    /// indexes still loading is handed to the task pool (nil), not refused, and is
    /// counted once, when the pool answers it. One that needs no index is answered inline.
    func testAnInlineRequestThatFindsTheIndexesLoading_goesToThePool_andIsCountedOnceThere() async throws {
        let harness = try ServiceHarness(self)
        let provider = try ActiveDatabaseProvider(
            bundledPath: harness.bundledPath, referencePath: harness.referencePath,
            activationPath: harness.activationPath, logger: quietLogger) { path, kind throws(TaxonomyError) in
            try TaxonomyDatabase(path: path, kind: kind, indexLoading: .onRequest)
        }
        let database = provider.current().database
        addTeardownBlock { database.startLoadingMemoryIndexes() }  // never leave requests waiting
        let service = TaxonomyService(provider: provider)
        let computed = Stol_V1_TaxonomyRequest.with { $0.relatives = .with { $0.taxonID = 9689; $0.n = 5; $0.computed = true } }
        let ancestors = Stol_V1_TaxonomyRequest.with { $0.ancestors = .with { $0.taxonID = 9689; $0.ranks = .all } }
        let lion = Stol_V1_TaxonomyRequest.with { $0.getTaxon = .with { $0.taxonID = 9689 } }
        for request in [computed, ancestors, lion] {
            XCTAssertEqual(TaxonomyRequestTable.route(request).cost, .inline)
        }
        XCTAssertNil(service.respondInline(to: computed, context: ServiceHarness.context), "computed relatives wait on the pool")
        XCTAssertNil(service.respondInline(to: ancestors, context: ServiceHarness.context), "whole-tree ancestors wait on the pool")
        XCTAssertEqual(service.respondInline(to: lion, context: ServiceHarness.context)?.taxon.scientificName, "Panthera leo")
        XCTAssertEqual(service.statistics.requests, ["get_taxon": 1], "a request handed to the pool is not counted yet")

        database.startLoadingMemoryIndexes()
        let answer = await service.respond(to: computed, context: ServiceHarness.context)
        XCTAssertEqual(answer.relatives.source, Stol_V1_RelativesSource.computed)
        XCTAssertEqual(answer.relatives.relatives.count, 5)
        XCTAssertEqual(service.statistics.requests, ["get_taxon": 1, "relatives": 1])
    }
}
