@testable import STOLTaxonomy
import STOLProtocol
import STOLTestFixtures
import Synchronization
import XCTest

/// One request, one answer, whatever the daemon's age (issue 34): a search or a name
/// resolution that arrives before the in-memory indexes are built waits for them and then
/// answers exactly what it answers afterwards; it is never ranked without them.
final class SearchWarmUpTests: XCTestCase {
    func testSearches_askedBeforeTheIndexesAreBuilt_answerAsTheSameSearchesAfterwards() throws {
        let (service, database) = try ServiceHarness(self).serviceHoldingTheIndexes(self)
        XCTAssertNil(database.memoryIndexes, "held back until the test starts the build")
        let context = ServiceHarness.context
        // Prefix, whole words, a misspelling (fuzzy), a common name, a rank filter, and a name resolution.
        let requests: [Stol_V1_TaxonomyRequest] = [
            .with { $0.search = .with { $0.query = "panth"; $0.prefix = true; $0.limit = 1 } },
            .with { $0.search = .with { $0.query = "panth"; $0.limit = 5 } },
            .with { $0.search = .with { $0.query = "pantera" } },
            .with { $0.search = .with { $0.query = "lion" } },
            .with { $0.search = .with { $0.query = "cat"; $0.rank = .species } },
            .with { $0.resolveName = .with { $0.text = "tiger" } },
        ]
        // The synchronous path never waits: it says to come back rather than rank without the indexes.
        for request in requests {
            XCTAssertEqual(errorCode(service.respondNow(to: request, context: context)), .unavailable, "\(request)")
        }
        let early = Mutex<[Int: Stol_V1_TaxonomyResponse]>([:])
        let answered = expectation(description: "the early requests")
        answered.expectedFulfillmentCount = requests.count
        for (index, request) in requests.enumerated() {
            Task { @Sendable in
                let response = await service.respond(to: request, context: context)
                early.withLock { $0[index] = response }
                answered.fulfill()
            }
        }
        // Each request waits, suspended, while the indexes are not built (another request is answered meanwhile).
        let other = expectation(description: "a lookup meanwhile")
        Task { @Sendable in
            let taxon = await service.respond(to: .with { $0.getTaxon = .with { $0.taxonID = 9689 } }, context: context)
            XCTAssertEqual(taxon.taxon.scientificName, "Panthera leo")
            other.fulfill()
        }
        wait(for: [other], timeout: 120)
        XCTAssertEqual(early.withLock { $0.count }, 0, "no search answered before the indexes are built")
        database.startLoadingMemoryIndexes()
        wait(for: [answered], timeout: 120)
        for (index, request) in requests.enumerated() {
            let late = service.respondNow(to: request, context: context)
            let first = early.withLock { $0[index] }
            XCTAssertNil(errorCode(late), "\(request): \(late)")
            XCTAssertEqual(first?.result, late.result, "\(request): asked early and late, two answers")
        }
        let prefix = early.withLock { $0[0] }
        XCTAssertEqual(prefix?.search.hits.first?.taxon.scientificName, "Panthera", "'panth' completes to the genus people mean")
    }

    /// Requests answered without waiting while the indexes are built (from SQL) answer
    /// exactly what the in-memory indexes answer once built: the view's roots, a page of
    /// children, ancestors, a taxon, a lineage batch by id.
    func testLookupsAnsweredWhileTheIndexesAreBuilt_equalTheAnswersAfterwards() throws {
        let (service, database) = try ServiceHarness(self).serviceHoldingTheIndexes(self)
        let context = ServiceHarness.context
        let requests: [Stol_V1_TaxonomyRequest] = [
            .with { $0.roots = .init() },
            .with { $0.children = .with { $0.taxonID = 9681 } },
            .with { $0.children = .with { $0.taxonID = 9688 } },
            .with { $0.ancestors = .with { $0.taxonID = 9689 } },
            .with { $0.getTaxon = .with { $0.taxonID = 9694 } },
        ]
        let early = requests.map { service.respondNow(to: $0, context: context) }
        XCTAssertNil(database.memoryIndexes, "answered before the build started")
        database.startLoadingMemoryIndexes()
        _ = database.waitForMemoryIndexes()
        for (request, first) in zip(requests, early) {
            let late = service.respondNow(to: request, context: context)
            XCTAssertNil(errorCode(first), "\(request): \(first)")
            XCTAssertEqual(first.result, late.result, "\(request): answered otherwise before the indexes were built")
        }
    }
}
