import STOLProtocol
import STOLTransport
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

    /// Every request holds the names' build back while it runs (``STOLTransport/RequestActivity``)
    /// but a status, which a script polls until the build is done; the service answers as the table.
    func testOnlyAStatus_isNotActivityThatHoldsBackIdleWork() throws {
        let service = TaxonomyService(provider: try ServiceHarness(self).provider)
        for (field, request) in try everyRequestBody() {
            XCTAssertEqual(TaxonomyRequestTable.route(request).holdsBackIdleWork, field != "status", field)
            XCTAssertEqual(service.holdsBackIdleWork(request), field != "status", field)
        }
    }

    /// Whole-tree relatives are bulk work (the user's low-priority lane); main-rank
    /// relatives are a lookup, however many are asked: the request alone decides.
    func testRelatives_areBulkWork_onTheWholeTreeOnly_whateverTheAnswersSize() throws {
        let service = TaxonomyService(provider: try ServiceHarness(self).provider)
        for ranks in [Stol_V1_RankView.main, .all] {
            let request = Stol_V1_TaxonomyRequest.with { $0.relatives = .with { $0.taxonID = 9689; $0.n = 100; $0.ranks = ranks } }
            XCTAssertEqual(TaxonomyRequestTable.route(request).cost, ranks == .all ? .bulk : .interactive, "\(ranks)")
            XCTAssertEqual(service.workClass(of: request), TaxonomyRequestTable.route(request).cost, "the lane is the handler's cost")
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

    /// A request that finds the in-memory indexes still loading waits for them
    /// (suspended, holding no thread), is not refused, and is counted once, when it
    /// is answered; one that needs no index is answered meanwhile.
    func testARequestThatFindsTheIndexesLoading_waitsForThem_andIsCountedOnceAnswered() async throws {
        let (service, database) = try ServiceHarness(self).serviceHoldingTheIndexes(self)
        let computed = Stol_V1_TaxonomyRequest.with { $0.relatives = .with { $0.taxonID = 9689; $0.n = 5; $0.computed = true } }
        let lion = Stol_V1_TaxonomyRequest.with { $0.getTaxon = .with { $0.taxonID = 9689 } }
        let waiting = Task { await service.respond(to: computed, context: ServiceHarness.context) }
        let answer = await service.respond(to: lion, context: ServiceHarness.context)
        XCTAssertEqual(answer.taxon.scientificName, "Panthera leo", "answered while the other waits")
        XCTAssertEqual(service.statistics.requests, ["get_taxon": 1], "a waiting request is not counted yet")
        database.startLoadingMemoryIndexes()
        let relatives = await waiting.value
        XCTAssertEqual(relatives.relatives.source, Stol_V1_RelativesSource.computed)
        XCTAssertEqual(relatives.relatives.relatives.count, 5)
        XCTAssertEqual(service.statistics.requests, ["get_taxon": 1, "relatives": 1])
    }
}
