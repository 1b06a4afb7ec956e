import Foundation
import GRDB
import STOLModel
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import Synchronization
import XCTest

final class ActiveDatabaseProviderTests: XCTestCase {
    private var harness: ServiceHarness!

    override func setUpWithError() throws {
        harness = try ServiceHarness(self)
    }

    private func status(file: StaticString = #filePath, line: UInt = #line) async throws -> Stol_V1_StatusResponse {
        let statusAnswer1 = await harness.status()
        return try XCTUnwrap(statusAnswer1, "expected a status answer", file: file, line: line)
    }

    /// Every kind of answer (result or error) must carry the identity of the database that served it.
    private func assertEveryResponseIsStamped(kind: Stol_V1_DatabaseKind, fingerprint: String,
                                              file: StaticString = #filePath, line: UInt = #line) async {
        let responses = [
            await harness.send(.status(Stol_V1_StatusRequest())),
            await harness.getTaxon(9689),
            await harness.getTaxon(123_456),
            await harness.children(9688),
            await harness.ancestors(9689),
            await harness.send(.roots(Stol_V1_RootsRequest())),
            await harness.search("lion"),
            await harness.search("\""),
            await harness.send(.compare(Stol_V1_CompareRequest())),
        ]
        for response in responses {
            XCTAssertEqual(response.database.kind, kind, file: file, line: line)
            XCTAssertEqual(response.database.fingerprint, fingerprint, file: file, line: line)
            XCTAssertEqual(response.database.schemaVersion, UInt32(TaxonomySchema.currentVersion), file: file, line: line)
        }
    }

    func testProvider_byDefault_servesTheBundledDatabase() async throws {
        let current = try await status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertEqual(current.activePath, harness.bundledPath)
        XCTAssertFalse(current.referencePresent)
        XCTAssertFalse(current.referenceRequested)
        XCTAssertEqual(current.fallbackReason, "")
        XCTAssertEqual(current.taxaCount, UInt64(FelidaeFixture.acceptedUsageCount), "every node is a taxon (schema 3)")
        XCTAssertGreaterThan(current.sizeBytes, 0)
        XCTAssertFalse(current.active.fingerprint.isEmpty)
        XCTAssertEqual(current.serverVersion, TaxonomyService.version)
        await assertEveryResponseIsStamped(kind: .bundled, fingerprint: current.active.fingerprint)
    }

    func testProvider_whenReferenceIsPresentButNotRequested_servesBundledAndReportsPresence() async throws {
        try harness.installReference()
        let current = try await status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertTrue(current.referencePresent)
        XCTAssertFalse(current.referenceRequested)
        XCTAssertEqual(current.fallbackReason, "")
        let getTaxon1 = await harness.getTaxon(29064)
        XCTAssertEqual(errorCode(getTaxon1), .notFound)
    }

    func testProvider_whenReferenceRequestedButNotInstalled_servesBundledWithAFallbackReason() async throws {
        try harness.requestReference(true)
        let current = try await status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertFalse(current.referencePresent)
        XCTAssertTrue(current.referenceRequested)
        XCTAssertTrue(current.fallbackReason.contains("not installed"), current.fallbackReason)
        let getTaxon2 = await harness.getTaxon(9689)
        XCTAssertEqual(try taxonName(getTaxon2), "Panthera leo", "the bundled one keeps answering")
    }

    func testProvider_whenReferenceRequestedAndUsable_servesItWithADifferentFingerprintEverywhere() async throws {
        let bundled = try await status().active
        try harness.installReference()
        try harness.requestReference(true)
        let current = try await status()
        XCTAssertEqual(current.active.kind, .reference)
        XCTAssertEqual(current.activePath, harness.referencePath)
        XCTAssertTrue(current.referencePresent)
        XCTAssertTrue(current.referenceRequested)
        XCTAssertEqual(current.fallbackReason, "")
        XCTAssertNotEqual(current.active.fingerprint, bundled.fingerprint)
        XCTAssertEqual(current.taxaCount, UInt64(FelidaeFixture.acceptedUsageCount + 1))
        await assertEveryResponseIsStamped(kind: .reference, fingerprint: current.active.fingerprint)
        // The reference's own content answers.
        let getTaxon3 = await harness.getTaxon(29064)
        XCTAssertEqual(try taxonName(getTaxon3), "Panthera uncia")
    }

    func testProvider_whenReferenceIsGarbage_servesBundledWithAReason() async throws {
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: harness.referencePath))
        try harness.requestReference(true)
        let current = try await status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertTrue(current.referencePresent)
        XCTAssertTrue(current.referenceRequested)
        XCTAssertTrue(current.fallbackReason.contains("unusable"), current.fallbackReason)
        let getTaxon4 = await harness.getTaxon(9689)
        XCTAssertEqual(try taxonName(getTaxon4), "Panthera leo")
        let getTaxon5 = await harness.getTaxon(29064)
        XCTAssertEqual(errorCode(getTaxon5), .notFound)
    }

    func testProvider_whenReferenceLacksRequiredTablesOrHasNewerSchema_servesBundledWithAReason() async throws {
        // An SQLite file that is not a taxonomy database: an empty file is a valid empty database.
        try Data().write(to: URL(fileURLWithPath: harness.referencePath))
        try harness.requestReference(true)
        var current = try await status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertTrue(current.fallbackReason.contains("missing tables"), current.fallbackReason)

        // A real taxonomy database claiming a schema newer than this server.
        let staging = harness.directory + "/newer.sqlite"
        try buildFixtureDatabase(at: staging, in: harness.directory)
        try bumpSchemaVersion(of: staging, to: 99)
        XCTAssertEqual(rename(staging, harness.referencePath), 0)  // replaced whole, as an import does
        harness.settle()
        await current = try status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertTrue(current.fallbackReason.contains("schema version 99"), current.fallbackReason)
    }

    func testProvider_whenActivationFileChanges_switchesBackAndForth() async throws {
        try harness.installReference()
        try harness.requestReference(true)
        let statusAnswer2 = try await status()
        XCTAssertEqual(statusAnswer2.active.kind, .reference)
        let getTaxon6 = await harness.getTaxon(29064)
        XCTAssertEqual(try taxonName(getTaxon6), "Panthera uncia")

        try harness.requestReference(false)
        var current = try await status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertTrue(current.referencePresent)
        XCTAssertFalse(current.referenceRequested)
        let getTaxon7 = await harness.getTaxon(29064)
        XCTAssertEqual(errorCode(getTaxon7), .notFound)

        try harness.requestReference(true)
        let statusAnswer3 = try await self.status()
        XCTAssertEqual(statusAnswer3.active.kind, .reference)

        // Deleting the activation file means "bundled" (the safe default).
        try FileManager.default.removeItem(atPath: harness.activationPath)
        harness.settle()
        let statusAnswer4 = try await self.status()
        XCTAssertEqual(statusAnswer4.active.kind, .bundled)

        // A reference file removed while requested: back to bundled, saying why.
        try harness.requestReference(true)
        try FileManager.default.removeItem(atPath: harness.referencePath)
        harness.settle()
        await current = try self.status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertFalse(current.referencePresent)
        XCTAssertTrue(current.referenceRequested)
        XCTAssertFalse(current.fallbackReason.isEmpty)
    }

    func testProvider_withARecheckInterval_seesASwitchOnlyOnceTheIntervalHasPassed() throws {
        try harness.installReference()
        // The provider's clock is the test's: time passes when the test says so, not by sleeping.
        let clock = Mutex<UInt64>(1_000_000_000)
        let provider = try ActiveDatabaseProvider(bundledPath: harness.bundledPath, referencePath: harness.referencePath,
                                                  activationPath: harness.activationPath, logger: quietLogger,
                                                  recheckInterval: .milliseconds(300),
                                                  now: { clock.withLock { $0 } }) { path, kind throws(TaxonomyError) in
            try TaxonomyDatabase(path: path, kind: kind)
        }
        XCTAssertEqual(provider.current().database.kind, .bundled)
        try harness.requestReference(true)
        // Within the interval the previous check stands (this is what saves the
        // two stat(2) calls per request under load)…
        XCTAssertEqual(provider.current().database.kind, .bundled, "rechecked before the interval passed")
        clock.withLock { $0 += 299_999_999 }
        XCTAssertEqual(provider.current().database.kind, .bundled, "rechecked 1 ns before the interval passed")
        // …and once it has passed, the switch is seen.
        clock.withLock { $0 += 1 }
        XCTAssertEqual(provider.current().database.kind, .reference)
        XCTAssertEqual(provider.current().database.kind, .reference)
    }

    func testProvider_whenReferenceIsReplaced_servesTheNewFileWithANewFingerprint() async throws {
        try harness.installReference()
        try harness.requestReference(true)
        let first = try await status().active.fingerprint
        // Replace by rename, as an import would (new inode at the same path).
        let staging = harness.directory + "/staging.sqlite"
        try buildFixtureDatabase(at: staging, in: harness.directory)
        XCTAssertEqual(rename(staging, harness.referencePath), 0)
        harness.settle()
        let current = try await status()
        XCTAssertEqual(current.active.kind, .reference)
        XCTAssertNotEqual(current.active.fingerprint, first)
        let getTaxon8 = await harness.getTaxon(29064)
        XCTAssertEqual(errorCode(getTaxon8), .notFound, "the new reference lacks the snow leopard")
    }

    func testProvider_whenActivationFileIsMalformed_servesBundled() async throws {
        try harness.installReference()
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: harness.activationPath))
        let current = try await status()
        XCTAssertEqual(current.active.kind, .bundled)
        XCTAssertFalse(current.referenceRequested)
    }

    func testProvider_whenBundledDatabaseIsUnusable_refusesToStart() throws {
        let directory = try makeTemporaryDirectory(self)
        let bundled = directory + "/bundled.sqlite"
        try Data("definitely not SQLite, just text that is long enough to look like a header".utf8)
            .write(to: URL(fileURLWithPath: bundled))
        XCTAssertThrowsError(try ActiveDatabaseProvider(bundledPath: bundled, referencePath: directory + "/r.sqlite",
                                                        activationPath: directory + "/a.json", logger: quietLogger)) { error in
            XCTAssertEqual((error as? TaxonomyError)?.protocolError.code, .unavailable)
        }
        XCTAssertThrowsError(try ActiveDatabaseProvider(bundledPath: directory + "/missing.sqlite",
                                                        referencePath: directory + "/r.sqlite",
                                                        activationPath: directory + "/a.json", logger: quietLogger))
    }

    /// Opening the full reference takes long; the event loops must not wait
    /// for it. The open is held inside a gate until the test releases it: every
    /// request meanwhile is answered whole by the bundled database, and the
    /// reference is opened once, by the request that noticed the switch.
    /// A provider over the harness's files, with the reference installed, whose
    /// opening of the reference waits at `gate` until released.
    private func gatedProvider() throws -> (ActiveDatabaseProvider, OpeningGate) {
        try harness.installReference()
        let gate = OpeningGate()
        addTeardownBlock { gate.release() }  // a failed test must not leave the opener stuck
        let provider = try ActiveDatabaseProvider(
            bundledPath: harness.bundledPath, referencePath: harness.referencePath,
            activationPath: harness.activationPath, logger: quietLogger) { path, kind throws(TaxonomyError) in
            if kind == .reference { gate.arriveAndWait() }
            return try TaxonomyDatabase(path: path, kind: kind)
        }
        return (provider, gate)
    }

    /// The service's own requests never open a database: the one that notices a
    /// switch starts the open on a thread of its own and is answered, like every
    /// request after it, by the previous database until the new one is installed.
    /// Tried: the open is held back (a gate) and ten requests on this one thread —
    /// one event loop's worth — are all answered meanwhile, none waiting for it.
    func testService_duringASwitch_neverWaitsForTheOpen_andSwitchesOnceItIsInstalled() throws {
        let (provider, gate) = try gatedProvider()
        let service = TaxonomyService(provider: provider)
        try JSONEncoder().encode(ActivationState(useReferenceDB: true))
            .write(to: URL(fileURLWithPath: harness.activationPath), options: .atomic)
        func ask() -> Stol_V1_TaxonomyResponse {
            var request = Stol_V1_TaxonomyRequest()
            request.getTaxon = Stol_V1_GetTaxonRequest.with { $0.taxonID = 9689 }
            return service.respondNow(to: request, context: ServiceHarness.context)
        }
        let first = ask()
        XCTAssertEqual(first.database.kind, .bundled, "the request that noticed the switch was not kept waiting")
        XCTAssertEqual(gate.waitForArrival(), .success, "the open began, on another thread")
        for _ in 1...10 { XCTAssertEqual(ask().database.kind, .bundled) }
        XCTAssertEqual(gate.arrivals, 1, "opened once")
        gate.release()
        provider.waitForPendingSwitch()
        XCTAssertEqual(ask().database.kind, .reference, "installed once opened")
        XCTAssertEqual(gate.arrivals, 1)
    }

    func testProvider_whileTheReferenceIsBeingOpened_answersFromThePreviousDatabaseAndOpensItOnce() throws {
        let (provider, gate) = try gatedProvider()
        let service = TaxonomyService(provider: provider)
        let bundled = provider.current().database
        XCTAssertEqual(bundled.kind, .bundled)

        try harness.requestReference(true)
        let opened = Mutex<ActiveDatabaseProvider.Selection?>(nil)
        let switched = expectation(description: "the request that noticed the switch")
        Thread.detachNewThread {
            let selection = provider.current()
            opened.withLock { $0 = selection }
            switched.fulfill()
        }
        XCTAssertEqual(gate.waitForArrival(), .success, "the switch was noticed and the open began")

        // The open is under way, outside the provider's lock. Requests on other
        // threads (the event loops) are answered meanwhile, from the bundled one.
        let answers = Mutex<[Stol_V1_TaxonomyResponse]>([])
        let answered = expectation(description: "requests answered while the reference opens")
        Thread.detachNewThread {
            for id: UInt64 in 1...5 {
                var request = Stol_V1_TaxonomyRequest()
                request.id = id
                request.getTaxon = Stol_V1_GetTaxonRequest.with { $0.taxonID = 9689 }
                let response = service.respondNow(to: request, context: ServiceHarness.context)
                var status = Stol_V1_TaxonomyRequest()
                status.status = Stol_V1_StatusRequest()
                let state = service.respondNow(to: status, context: ServiceHarness.context)
                answers.withLock { $0 += [response, state] }
            }
            answered.fulfill()
        }
        XCTAssertEqual(XCTWaiter().wait(for: [answered], timeout: 120), .completed,
                       "requests waited for the reference to open")
        for response in answers.withLock({ $0 }) {
            XCTAssertEqual(response.database.kind, .bundled)
            XCTAssertEqual(response.database.fingerprint, bundled.fingerprint)
            switch response.result {
            case .taxon(let taxon)?: XCTAssertEqual(taxon.scientificName, "Panthera leo")
            case .status(let status)?:
                XCTAssertEqual(status.active.kind, .bundled)
                XCTAssertEqual(status.taxaCount, UInt64(bundled.taxaCount), "the whole previous selection, not a mix")
                XCTAssertFalse(status.referenceRequested, "the previous selection, not a mix")
            default: XCTFail("unexpected \(response)")
            }
        }
        XCTAssertEqual(answers.withLock { $0.count }, 10)
        XCTAssertEqual(gate.arrivals, 1, "opened once, by the request that noticed the switch")

        gate.release()
        wait(for: [switched], timeout: 120)
        XCTAssertEqual(opened.withLock { $0?.database.kind }, .reference, "that request is answered by the reference")
        XCTAssertEqual(provider.current().database.kind, .reference)
        var uncia = Stol_V1_TaxonomyRequest()
        uncia.getTaxon = Stol_V1_GetTaxonRequest.with { $0.taxonID = 29064 }
        XCTAssertEqual(try taxonName(service.respondNow(to: uncia, context: ServiceHarness.context)), "Panthera uncia")
        XCTAssertEqual(gate.arrivals, 1)
    }

    // MARK: Helpers

    private func taxonName(_ response: Stol_V1_TaxonomyResponse, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        guard case .taxon(let taxon)? = response.result else {
            XCTFail("expected a taxon, got \(String(describing: response.result))", file: file, line: line)
            throw POSIXError(.EINVAL)
        }
        return taxon.scientificName
    }

    /// Makes a built database claim another schema version.
    private func bumpSchemaVersion(of path: String, to version: Int) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "UPDATE schema_version SET version = ?", arguments: [version]) }
        try queue.close()
    }
}

/// Holds the opening of a database until released, and counts the openings.
private final class OpeningGate: Sendable {
    private let state = Mutex((arrivals: 0, released: false))
    private let arrived = DispatchSemaphore(value: 0)
    private let open = DispatchGroup()

    init() { open.enter() }

    var arrivals: Int { state.withLock { $0.arrivals } }

    func arriveAndWait() {
        state.withLock { $0.arrivals += 1 }
        arrived.signal()
        open.wait()
    }

    func waitForArrival() -> DispatchTimeoutResult { arrived.wait(timeout: .now() + 120) }

    /// Lets every opening through, now and later; more calls do nothing.
    func release() {
        let first = state.withLock { state in
            defer { state.released = true }
            return !state.released
        }
        if first { open.leave() }
    }
}
