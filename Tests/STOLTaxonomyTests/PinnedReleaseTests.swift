import Foundation
import STOLModel
import STOLPipeline
import STOLProtocol
@testable import STOLTaxonomy
import STOLTestFixtures
import Synchronization
import XCTest

/// Requests that pin a release (`TaxonomyRequest.release`) are answered from it,
/// whatever the default is; pinned releases open on demand and close when idle or
/// beyond the limit; a release that becomes the default is handed over, not
/// opened twice. Two real releases of the fixture: only the newer has the snow
/// leopard (29064), so every answer shows which one served.
final class PinnedReleaseTests: XCTestCase {
    var directory: String!
    private var releases: String { directory + "/releases" }
    private var activation: String { directory + "/activation.json" }

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        try FileManager.default.createDirectory(atPath: releases, withIntermediateDirectories: true)
        try buildFixtureDatabase(at: directory + "/bundled.sqlite", in: directory)
        try build(release: "2023.11.4", extraUsages: [])
        try build(release: "2024.9.7", extraUsages: referenceOnlyUsages)
    }

    private func build(release: String, extraUsages: [String]) throws {
        let source = directory + "/source-\(release)"
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try FelidaeFixture.write(to: source, extraUsages: extraUsages)
        var options = TaxonomyBuilder.Options()
        options.provenance = Provenance(source: "NCBI Taxonomy", release: release, idNamespace: "ncbi-taxid",
                                        licence: "public domain", attribution: "NCBI", citation: "NCBI Taxonomy \(release)",
                                        tool: "test", built: "2026-01-01T00:00:00Z")
        _ = try TaxonomyBuilder(options: options, logger: quietLogger).build(source: source, output: releases + "/\(release).sqlite")
    }

    private func setDefault(_ release: String?) throws {
        try JSONEncoder().encode(ActivationState(useReferenceDB: release != nil, defaultRelease: release))
            .write(to: URL(fileURLWithPath: activation), options: .atomic)
    }

    private func provider(limits: PinnedReleases.Limits = .init(), now: @escaping @Sendable () -> UInt64 = ActiveDatabaseProvider.monotonicNanoseconds,
                          open: @escaping ActiveDatabaseProvider.Opener = { path, kind throws(TaxonomyError) in
                              try TaxonomyDatabase(path: path, kind: kind) }) throws -> ActiveDatabaseProvider {
        try ActiveDatabaseProvider(bundledPath: directory + "/bundled.sqlite", referencePath: directory + "/reference.sqlite",
                                   releasesDirectory: releases, activationPath: activation, logger: quietLogger,
                                   pinnedLimits: limits, now: now, open: open)
    }

    private func getTaxon(_ id: Int64, release: String, _ service: TaxonomyService) async -> Stol_V1_TaxonomyResponse {
        var request = Stol_V1_TaxonomyRequest()
        request.id = 3
        request.release = release
        request.getTaxon = .with { $0.taxonID = id }
        return await service.respond(to: request, context: ServiceHarness.context)
    }

    func testAPinnedRequest_isAnsweredFromThatRelease_whateverTheDefault_andNamesIt() async throws {
        try setDefault("2023.11.4")
        let service = TaxonomyService(provider: try provider())
        let unpinned = await getTaxon(29064, release: "", service)
        XCTAssertEqual(unpinned.database.release, "2023.11.4")
        XCTAssertEqual(unpinned.protocolError?.code, .notFound, "the older release has no snow leopard")
        let pinned = await getTaxon(29064, release: "2024.9.7", service)
        XCTAssertEqual(pinned.database.release, "2024.9.7")
        XCTAssertEqual(pinned.database.source, "NCBI Taxonomy")
        XCTAssertEqual(pinned.database.idNamespace, "ncbi-taxid")
        XCTAssertEqual(pinned.taxon.scientificName, "Panthera uncia")
        // The default's own name, and the bundled database, pin too.
        let byName = await getTaxon(9689, release: "2023.11.4", service)
        XCTAssertEqual(byName.database.release, "2023.11.4")
        XCTAssertEqual(byName.taxon.id, 9689)
        let bundled = await getTaxon(9689, release: "bundled", service)
        XCTAssertEqual(bundled.database.kind, .bundled)
        XCTAssertEqual(bundled.database.release, "bundled")
        // Synchronously too (respondNow: no wait), once the pinned release is open.
        let now = service.respondNow(to: .with { $0.id = 4; $0.release = "2024.9.7"; $0.getTaxon = .with { $0.taxonID = 29064 } },
                                     context: ServiceHarness.context)
        XCTAssertEqual(now.database.release, "2024.9.7")
        XCTAssertEqual(now.taxon.id, 29064)
    }

    func testAReleaseThatIsNotInstalled_isReleaseNotInstalled_listingTheInstalledOnes_andHostileNamesOpenNothing() async throws {
        let service = TaxonomyService(provider: try provider())
        for name in ["2099.1.1", "../bundled", "releases/2024.9.7", "2024.9.7.sqlite", "/etc/passwd", String(repeating: "x", count: 70)] {
            let answer = await getTaxon(9689, release: name, service)
            XCTAssertEqual(answer.protocolError?.code, .releaseNotInstalled, name)
            XCTAssertTrue(answer.protocolError?.message.contains("bundled, 2023.11.4, 2024.9.7") == true,
                          answer.protocolError?.message ?? "")
            XCTAssertTrue(answer.hasDatabase, "even the refusal names the default database")
        }
        XCTAssertEqual(service.provider.pinned.loaded(), [])
    }

    func testPinnedReleases_closeTheLeastRecentlyUsed_beyondTheLimit_andWhenIdle() async throws {
        try build(release: "2021.11.16", extraUsages: [])
        let clock = Mutex<UInt64>(1_000_000_000)
        let service = TaxonomyService(provider: try provider(limits: .init(maximumLoaded: 2, idleTimeout: .seconds(60)),
                                                             now: { clock.withLock { $0 } }))
        let pinned = service.provider.pinned
        _ = await getTaxon(9689, release: "2021.11.16", service)
        clock.withLock { $0 += 1_000_000_000 }
        _ = await getTaxon(9689, release: "2023.11.4", service)
        XCTAssertEqual(pinned.loaded(), ["2021.11.16", "2023.11.4"])
        clock.withLock { $0 += 1_000_000_000 }
        _ = await getTaxon(9689, release: "2024.9.7", service)
        XCTAssertEqual(pinned.loaded(), ["2023.11.4", "2024.9.7"], "the least recently used one closed")
        // An hour later, nobody asked: the sweep closes both.
        clock.withLock { $0 += 3_600_000_000_000 }
        pinned.closeIdle()
        XCTAssertEqual(pinned.loaded(), [])
        // And the next request opens it again.
        let again = await getTaxon(29064, release: "2024.9.7", service)
        XCTAssertEqual(again.taxon.id, 29064)
        XCTAssertEqual(pinned.loaded(), ["2024.9.7"])
    }

    func testAPinnedReleaseThatBecomesTheDefault_isHandedOver_notOpenedASecondTime() async throws {
        let opens = Mutex<[String]>([])
        let provider = try provider(open: { path, kind throws(TaxonomyError) in
            opens.withLock { $0.append((path as NSString).lastPathComponent) }
            return try TaxonomyDatabase(path: path, kind: kind)
        })
        let service = TaxonomyService(provider: provider)
        let pinned = await getTaxon(29064, release: "2024.9.7", service)
        XCTAssertEqual(pinned.taxon.id, 29064)
        try setDefault("2024.9.7")
        XCTAssertEqual(provider.current().database.release, "2024.9.7")
        XCTAssertEqual(opens.withLock { $0 }, ["bundled.sqlite", "2024.9.7.sqlite"], "opened once, then handed over")
        XCTAssertEqual(provider.pinned.loaded(), [])
    }

    func testStatus_listsTheBundledDatabaseAndEveryRelease_withProvenance_defaultAndLoaded() async throws {
        try setDefault("2024.9.7")
        let service = TaxonomyService(provider: try provider())
        _ = await getTaxon(9689, release: "2023.11.4", service)
        var request = Stol_V1_TaxonomyRequest()
        request.status = .init()
        let status = await service.respond(to: request, context: ServiceHarness.context).status
        XCTAssertEqual(status.defaultRelease, "2024.9.7")
        XCTAssertEqual(status.provenance.release, "2024.9.7")
        XCTAssertEqual(status.releases.map(\.release), ["bundled", "2023.11.4", "2024.9.7"])
        XCTAssertEqual(status.releases.map(\.isDefault), [false, false, true])
        XCTAssertEqual(status.releases.map(\.loaded), [true, true, true])
        XCTAssertEqual(status.releases[1].provenance.citation, "NCBI Taxonomy 2023.11.4")
        XCTAssertEqual(status.releases[1].schemaVersion, UInt32(TaxonomySchema.currentVersion))
        XCTAssertGreaterThan(status.releases[1].sizeBytes, 0)
    }
}

extension PinnedReleaseTests {
    /// A newer build of a release installed while the old one is being opened for a
    /// pinned request: the waiting request is answered, from the newer file.
    func testARequestWaitingForARelease_whoseFileIsReplacedMeanwhile_isAnsweredFromTheNewFile() throws {
        let gate = DispatchSemaphore(value: 0)
        let calls = Mutex(0)
        let provider = try ActiveDatabaseProvider(
            bundledPath: directory + "/bundled.sqlite", referencePath: directory + "/reference.sqlite",
            releasesDirectory: directory + "/releases", activationPath: directory + "/activation.json",
            logger: quietLogger) { path, kind throws(TaxonomyError) in
            // The first opening of a release waits until the test lets it go.
            if kind == .reference, calls.withLock({ count in defer { count += 1 }; return count }) == 0 { gate.wait() }
            return try TaxonomyDatabase(path: path, kind: kind)
        }
        addTeardownBlock { gate.signal() }
        let service = TaxonomyService(provider: provider)
        let answers = Answers()
        let answered = DispatchSemaphore(value: 0)
        func send() {
            Task.detached {
                let answer = await Self.ask(service, id: 29064, release: "2023.11.4")
                answers.list.withLock { $0.append(answer) }
                answered.signal()
            }
        }
        send()
        XCTAssertTrue(waitUntil { calls.withLock { $0 } == 1 }, "the first opening started")
        // The newer build (it has the snow leopard) replaces the file, as an import renames it.
        let newer = directory + "/newer.sqlite"
        try FileManager.default.copyItem(atPath: directory + "/releases/2024.9.7.sqlite", toPath: newer)
        XCTAssertEqual(rename(newer, directory + "/releases/2023.11.4.sqlite"), 0)
        send()  // notices the new file and opens it
        XCTAssertEqual(answered.wait(timeout: .now() + 30), .success, "the request after the new build was answered")
        gate.signal()
        // A deadline, not a hang, when the first request's waiting is lost.
        XCTAssertEqual(answered.wait(timeout: .now() + 30), .success, "the request that waited was answered")
        XCTAssertEqual(answers.list.withLock { $0.map(\.taxon.id) }, [29064, 29064], "both from the new file")
    }

    private static func ask(_ service: TaxonomyService, id: Int64, release: String) async -> Stol_V1_TaxonomyResponse {
        var request = Stol_V1_TaxonomyRequest()
        request.id = 9
        request.release = release
        request.getTaxon = .with { $0.taxonID = id }
        return await service.respond(to: request, context: ServiceHarness.context)
    }
}

/// Answers collected by detached tasks.
private final class Answers: Sendable {
    let list = Mutex<[Stol_V1_TaxonomyResponse]>([])
}
