import Foundation
import STOLFormat
import STOLImport
import STOLModel
import STOLProtocol
import STOLTestFixtures
import STOLTransport
import XCTest

/// Several releases installed side by side: what the coordinator installs where,
/// what it refuses (another id namespace, an older build of the same release), and
/// activate and delete by name — each refusal leaving every file byte for byte.
extension ImportCoordinatorTests {
    private func signed(_ release: String, builtAt: String = "2026-06-01T00:00:00Z",
                        idNamespace: String = "ncbi-taxid") throws -> [UInt8] {
        try StolCorpus.sign(ImportFixture.database(builtAt: builtAt, release: release, idNamespace: idNamespace, in: directory),
                            key: ImportFixture.key)
    }

    private func installed(_ answers: [Stol_V1_ImportResponse], file: StaticString = #filePath, line: UInt = #line) -> Stol_V1_ImportDone? {
        guard case .done(let done) = answers.last?.result else {
            XCTFail("not installed: \(answers.last.map { "\($0)" } ?? "no answer")", file: file, line: line)
            return nil
        }
        return done
    }

    /// Every file under the state directory with its digest.
    private func snapshot() -> [String: String] {
        var files: [String: String] = [:]
        let walker = FileManager.default.enumerator(atPath: paths.stateDirectory)
        while let name = walker?.nextObject() as? String {
            files[name] = fileDigest(paths.stateDirectory + "/" + name) ?? "<dir>"
        }
        return files
    }

    func testTwoReleases_installSideBySide_eachUnderItsName_andAnotherReleaseIsNoDowngrade() throws {
        try startVerifier()
        let coordinator = try coordinator()
        // The newer release first: an older build time of another release is not a downgrade.
        let newer = try signed("2024.9.7", builtAt: "2026-06-01T00:00:00Z")
        let older = try signed("2023.11.4", builtAt: "2025-01-01T00:00:00Z")
        XCTAssertEqual(installed(try importFile(newer, coordinator))?.release, "2024.9.7")
        XCTAssertEqual(installed(try importFile(older, coordinator))?.release, "2023.11.4")
        XCTAssertNotNil(fileDigest(paths.releaseDatabase("2024.9.7")))
        XCTAssertNotNil(fileDigest(paths.releaseDatabase("2023.11.4")))
        let status = coordinator.status()
        XCTAssertEqual(status.releases.map(\.release), ["2023.11.4", "2024.9.7"])
        XCTAssertEqual(status.releases.map(\.provenance.idNamespace), ["ncbi-taxid", "ncbi-taxid"])
        XCTAssertEqual(status.defaultRelease, "", "importing activates nothing")
        XCTAssertEqual(stagingFiles, [])

        // An older build of an installed release is a downgrade; the files stay as they were.
        let before = snapshot()
        let downgrade = try importFile(try signed("2024.9.7", builtAt: "2026-01-01T00:00:00Z"), coordinator)
        XCTAssertEqual(downgrade.last?.protocolError?.code, .downgradeRefused)
        XCTAssertEqual(snapshot(), before)
    }

    func testAnotherIDNamespace_isRefusedNamingBoth_andChangesNothing_unlessAllowed() throws {
        try startVerifier()
        let coordinator = try coordinator()
        _ = installed(try importFile(try signed("2024.9.7"), coordinator))
        XCTAssertEqual(try coordinator.store.activate("2024.9.7"), "2024.9.7")
        let before = snapshot()
        let gbif = try signed("2023-08-28", idNamespace: "gbif-key")
        let refused = try importFile(gbif, coordinator).last?.protocolError
        XCTAssertEqual(refused?.code, .idNamespaceMismatch)
        XCTAssertEqual(refused?.details["installed_namespace"], "ncbi-taxid")
        XCTAssertEqual(refused?.details["offered_namespace"], "gbif-key")
        XCTAssertTrue(refused?.message.contains("--allow-id-namespace-change") == true, refused?.message ?? "")
        XCTAssertEqual(snapshot(), before, "every release and the activation state byte for byte")
        XCTAssertEqual(stagingFiles, [])

        // The administrator says so explicitly: installed beside it, and nothing else changes.
        XCTAssertEqual(installed(try importFile(gbif, coordinator, allowIDNamespaceChange: true))?.release, "2023-08-28")
        XCTAssertEqual(coordinator.status().defaultRelease, "2024.9.7")
    }

    func testActivateAndDelete_byName_andWithoutOneOnlyWhenOneIsInstalled() throws {
        try startVerifier()
        let coordinator = try coordinator()
        _ = installed(try importFile(try signed("2023.11.4"), coordinator))
        // One installed: no name needed.
        XCTAssertEqual(installed(collect(coordinator, request(.activate(.init())), context(uid: 0)))?.release, "2023.11.4")
        _ = installed(try importFile(try signed("2024.9.7"), coordinator))
        // Two: a request without a name is refused, naming them; an unknown name too.
        let unnamed = collect(coordinator, request(.deleteReference(.init())), context(uid: 0)).last?.protocolError
        XCTAssertEqual(unnamed?.code, .invalidRequest)
        XCTAssertTrue(unnamed?.message.contains("2023.11.4, 2024.9.7") == true, unnamed?.message ?? "")
        let unknown = collect(coordinator, request(.activate(.with { $0.release = "2099.1.1" })), context(uid: 0)).last?.protocolError
        XCTAssertEqual(unknown?.code, .releaseNotInstalled)
        XCTAssertEqual(unknown?.details["release"], "2099.1.1")
        for hostile in ["../reference", "bundled", "a/b", ""] where !hostile.isEmpty {
            let answer = collect(coordinator, request(.deleteReference(.with { $0.release = hostile })), context(uid: 0))
            XCTAssertEqual(answer.last?.protocolError?.code, .releaseNotInstalled, hostile)
        }

        let activated = installed(collect(coordinator, request(.activate(.with { $0.release = "2024.9.7" })), context(uid: 0)))
        XCTAssertEqual(activated?.status.defaultRelease, "2024.9.7")
        XCTAssertEqual(ActivationState.read(path: paths.activationState), ActivationState(useReferenceDB: true, defaultRelease: "2024.9.7"))
        // Deleting another release leaves the default alone.
        XCTAssertEqual(installed(collect(coordinator, request(.deleteReference(.with { $0.release = "2023.11.4" })), context(uid: 0)))?
            .status.defaultRelease, "2024.9.7")
        XCTAssertNil(fileDigest(paths.releaseDatabase("2023.11.4")))
        // Deleting the default: the bundled database serves from the same moment.
        let deleted = installed(collect(coordinator, request(.deleteReference(.with { $0.release = "2024.9.7" })), context(uid: 0)))
        XCTAssertEqual(deleted?.release, "2024.9.7")
        XCTAssertEqual(deleted?.status.defaultRelease, "")
        XCTAssertNil(ActivationState.read(path: paths.activationState).servingRelease)
        XCTAssertEqual(coordinator.status().releases, [])
    }

    func testDeactivate_keepsTheDefaultRecorded_soActivateWithoutANameBringsItBack() throws {
        try startVerifier()
        let coordinator = try coordinator()
        _ = installed(try importFile(try signed("2023.11.4"), coordinator))
        _ = installed(try importFile(try signed("2024.9.7"), coordinator))
        XCTAssertEqual(try coordinator.store.activate("2023.11.4"), "2023.11.4")
        try coordinator.store.deactivate()
        XCTAssertEqual(coordinator.status().defaultRelease, "")
        XCTAssertEqual(try coordinator.store.activate(), "2023.11.4", "the one chosen before, though two are installed")
    }

    func testALegacyReferenceDatabase_movesIntoTheReleasesDirectory_andStaysTheDefault() throws {
        // An installation from before releases: reference.sqlite, activated, no default release named.
        try FileManager.default.createDirectory(atPath: paths.databasesDirectory, withIntermediateDirectories: true)
        let legacy = try ImportFixture.database(builtAt: "2026-01-01T00:00:00Z", release: "2024.9.7", in: directory)
        try Data(legacy).write(to: URL(fileURLWithPath: paths.legacyReferenceDatabase))
        try ActivationState(useReferenceDB: true).write(path: paths.activationState)

        let coordinator = try coordinator()  // prepare() migrates
        XCTAssertNil(fileDigest(paths.legacyReferenceDatabase))
        XCTAssertEqual(fileDigest(paths.releaseDatabase("2024.9.7")), SHA256.hash(legacy).hexString, "moved byte for byte")
        XCTAssertEqual(ActivationState.read(path: paths.activationState), ActivationState(useReferenceDB: true, defaultRelease: "2024.9.7"))
        XCTAssertEqual(coordinator.status().defaultRelease, "2024.9.7")
        // A second start changes nothing.
        let before = snapshot()
        _ = try self.coordinator()
        XCTAssertEqual(snapshot(), before)
    }

    /// A release name that cannot name a file: in a version 2 file the signed header
    /// carries it and the coordinator refuses it before any verifier runs; in a version 1
    /// file only the database does, and the verifier refuses it.
    func testAReleaseNameThatIsNoFileName_isRefused_andNothingIsInstalled() throws {
        try startVerifier()
        let coordinator = try coordinator(allowsFormatVersion1: true)
        let before = snapshot()
        // One grammar for the header, the protocol and the verifier: each refused at the header.
        for hostile in ["../../etc/x", ".hidden", "-v2test", "_x", "+x", "bundled"] {
            let refused = try importFile(try signed(hostile), coordinator).last?.protocolError
            XCTAssertEqual(refused?.code, .databaseCorrupt, hostile)
            XCTAssertEqual(refused?.details["check"], "header", hostile)
            XCTAssertEqual(snapshot(), before, hostile)
        }
        // A release longer than a header can sign could never be signed again: refused too.
        for hostile in ["../../etc/x", "bundled", ".hidden", String(repeating: "9", count: 33), String(repeating: "9", count: 41)] {
            let database = try ImportFixture.database(builtAt: "2026-01-01T00:00:00Z", release: hostile, in: directory)
            let refused = try importFile(StolCorpus.signVersion1(database, key: ImportFixture.key), coordinator).last?.protocolError
            XCTAssertEqual(refused?.code, .databaseCorrupt, hostile)
            XCTAssertEqual(refused?.details["check"], "provenance", hostile)
            XCTAssertEqual(snapshot(), before, hostile)
        }
    }
}

extension ImportCoordinatorTests {
    /// The bundled database counts as installed: with no release installed yet, a file of
    /// another namespace than the bundled database's is refused all the same.
    func testTheBundledDatabasesNamespace_countsAsInstalled() throws {
        try startVerifier()
        try FileManager.default.removeItem(atPath: paths.bundledDatabase)
        try Data(try ImportFixture.database(builtAt: "2026-01-01T00:00:00Z", release: "2026.01", idNamespace: "ncbi-taxid",
                                             in: directory)).write(to: URL(fileURLWithPath: paths.bundledDatabase))
        let coordinator = try coordinator()
        let file = try StolCorpus.sign(ImportFixture.database(builtAt: "2026-06-01T00:00:00Z", release: "2023-08-28",
                                                              idNamespace: "ott-id", in: directory), key: ImportFixture.key)
        let refused = try importFile(file, coordinator).last?.protocolError
        XCTAssertEqual(refused?.code, .idNamespaceMismatch)
        XCTAssertEqual(refused?.details["installed_namespace"], "ncbi-taxid")
        XCTAssertEqual(coordinator.status().releases, [])
    }
}

extension ImportCoordinatorTests {
    /// An administrator's script gone wrong (or a hostile member of the admin group)
    /// sending refused requests in a loop writes one notice per window, not one per request.
    func testAFloodOfRefusedRequests_isOneNoticePerWindow_notOnePerRequest() throws {
        let coordinator = try coordinator()
        let captured = CapturedLog()
        let caller = RequestContext(peer: PeerCredentials(pid: 1, uid: 0, gid: 0), logger: captured.logger)
        for index in 0..<500 {
            let body: Stol_V1_ImportRequest.OneOf_Body = index % 2 == 0
                ? .activate(.with { $0.release = "1999.\(index)" }) : .deleteReference(.with { $0.release = "x\(index)" })
            let answers = collect(coordinator, request(body), caller)
            XCTAssertEqual(answers.last?.protocolError?.code, .releaseNotInstalled, "every request is still answered")
        }
        let lines = captured.lines.withLock { $0 }
        XCTAssertEqual(lines.count, 1, "\(lines.prefix(3))")
        XCTAssertTrue(lines.first?.contains("import request refused") == true && lines.first?.contains("RELEASE_NOT_INSTALLED") == true,
                      lines.first ?? "")
    }
}
