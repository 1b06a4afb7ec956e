import CSTOLSocket
import Foundation
import GRDB
import Glibc
import STOLDaemon
import STOLFileSystem
import STOLContainer
import STOLFormat
import STOLImport
import STOLImportCore
import STOLModel
import STOLProtocol
import STOLServer
import STOLTestFixtures
import STOLTransport
import STOLVerifier
import XCTest

/// The coordinator in-process: its checks of the caller and the file, the state
/// files it owns, and what it does with an honest verifier (the real service on
/// a socket) and with verifiers that lie, stop or say nothing.
final class ImportCoordinatorTests: XCTestCase {
    var directory: String!
    var paths: RuntimePaths!
    private var servers: [BlockingFramedServer<VerifierService>] = []

    override func setUpWithError() throws {
        directory = try TemporaryDirectory.make(prefix: "stolimp")  // removed in tearDown, after the servers stopped
        paths = RuntimePaths(runtimeDirectory: directory + "/run", stateDirectory: directory + "/state",
                             bundledDatabase: directory + "/bundled.sqlite")
        try FileManager.default.createDirectory(atPath: paths.runtimeDirectory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: paths.stateDirectory, withIntermediateDirectories: true)
        try Data("the bundled database".utf8).write(to: URL(fileURLWithPath: paths.bundledDatabase))
    }

    override func tearDown() {
        servers.forEach { $0.shutdown() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// What the coordinator and the in-process verifier trust: the fixture's key, plus
    /// an expired and two revoked keys (``CorpusKeys``).
    static let trust = CorpusKeys.trust(ImportFixture.key.publicKey)

    /// A coordinator as `stol-importd` makes one: format version 1 refused unless
    /// `allowsFormatVersion1` (the operator's `STOL_ALLOW_FORMAT_1`), as the tests of
    /// version 1's path allow it.
    func coordinator(adminGroupID: UInt32? = nil, allowsFormatVersion1: Bool = false) throws -> ImportCoordinator {
        let coordinator = ImportCoordinator(paths: paths, configuration: .init(adminGroupID: adminGroupID,
                                                                              trustedKeys: { .success(Self.trust) },
                                                                              allowsFormatVersion1: allowsFormatVersion1))
        try coordinator.store.prepare(logger: quietLogger)
        return coordinator
    }

    func request(_ body: Stol_V1_ImportRequest.OneOf_Body) -> Stol_V1_ImportRequest {
        var request = Stol_V1_ImportRequest()
        request.id = 11
        request.body = body
        return request
    }

    func importRequest(allowDowngrade: Bool = false) -> Stol_V1_ImportRequest {
        var body = Stol_V1_ImportFileRequest()
        body.allowDowngrade = allowDowngrade
        return request(.importFile(body))
    }

    /// The real verifier service, in this process, on `verify.sock`.
    func startVerifier() throws {
        let source = try SocketActivation.socket(named: "verify", fallbackPath: paths.verifySocket, mode: 0o600, logger: quietLogger)
        let service = VerifierService(configuration: .init(allowedUID: getuid(), trustedKeys: .success(Self.trust)),
                                      scratch: try ScratchFile(directory: directory),
                                      deltaScratch: try ScratchFile(directory: directory))
        let server = BlockingFramedServer(service: service, source: source, configuration: ServerConfiguration(name: "verify"),
                                          logger: quietLogger)
        servers.append(server)
        Thread { server.serve() }.start()
    }

    func importFile(_ bytes: [UInt8], _ coordinator: ImportCoordinator, allowDowngrade: Bool = false,
                    allowIDNamespaceChange: Bool = false, connection: Int32? = nil) throws -> [Stol_V1_ImportResponse] {
        let fd = try descriptor(for: bytes, in: directory, name: "import-\(UUID().uuidString).stol")
        var request = importRequest(allowDowngrade: allowDowngrade)
        if case .importFile(var body) = request.body {
            body.allowIDNamespaceChange = allowIDNamespaceChange
            request.importFile = body
        }
        return collect(coordinator, request, context(uid: 0, fd: fd, connection: connection))
    }

    var stagingFiles: [String] { (try? FileManager.default.contentsOfDirectory(atPath: paths.stagingDirectory)) ?? [] }

    // MARK: Callers and requests

    func testEveryRequest_whenCallerIsNeitherRootNorAdmin_isPermissionDenied() throws {
        let coordinator = try coordinator(adminGroupID: 4242)
        for body in [Stol_V1_ImportRequest.OneOf_Body.status(.init()), .importFile(.init()), .activate(.init()),
                     .deactivate(.init()), .deleteReference(.init())] {
            let answers = collect(coordinator, request(body), context(uid: 1000, gid: 1000, groups: [27, 100]))
            XCTAssertEqual(answers.map { $0.protocolError?.code }, [.permissionDenied])
        }
        XCTAssertNil(fileDigest(paths.activationState))
    }

    /// `status` lists what is wrong with the trusted keys as read now, and whether
    /// version 1 is allowed: an operator sees a duplicated key without importing.
    func testStatus_namesTrustProblems_andWhetherVersion1IsAllowed() throws {
        let keys = directory + "/keys"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        let key = ImportFixture.key.publicKey
        try SigningKeyFile.writePublicKeyFile(PublicKeyFile.text(key, notAfter: "2020-01-01"), to: keys + "/a.pub", overwrite: false)
        try SigningKeyFile.writePublicKey(key, to: keys + "/z.pub", overwrite: false)
        try Data("# a comment first\n".utf8 + Data(PublicKeyFile.text(key, notAfter: nil).utf8))
            .write(to: URL(fileURLWithPath: keys + "/commented.pub"))
        let coordinator = ImportCoordinator(paths: paths, configuration: .init(
            adminGroupID: nil, trustedKeys: { TrustedKey.load(environment: ["STOL_TRUSTED_KEY": keys]) },
            allowsFormatVersion1: true))
        try coordinator.store.prepare(logger: quietLogger)
        let status = coordinator.status()
        XCTAssertTrue(status.formatVersion1Allowed)
        XCTAssertEqual(status.trustProblems.count, 2, status.trustProblems.description)
        XCTAssertTrue(status.trustProblems.contains { $0.contains("commented.pub") }, status.trustProblems.description)
        XCTAssertTrue(status.trustProblems.contains { $0.contains("a.pub") && $0.contains("z.pub") }, status.trustProblems.description)
        try Data("not an id\n".utf8).write(to: URL(fileURLWithPath: keys + "/revoked"))
        let broken = coordinator.status().trustProblems
        XCTAssertEqual(broken.count, 1)
        XCTAssertTrue(broken.first?.contains("revocation list") == true, broken.description)
    }

    func testStatus_whenCallerIsInAdminGroup_orRoot_isAnswered() throws {
        let coordinator = try coordinator(adminGroupID: 4242)
        for caller in [context(uid: 1000, groups: [4242]), context(uid: 1000, gid: 4242), context(uid: 0)] {
            let answers = collect(coordinator, request(.status(.init())), caller)
            guard case .status = answers.first?.result else { return XCTFail("expected status, got \(answers)") }
        }
    }

    func testImport_withoutDescriptor_isInvalidRequest() throws {
        XCTAssertEqual(collect(try coordinator(), importRequest(), context(uid: 0)).last?.protocolError?.code, .invalidRequest)
    }

    func testImport_ofAnEmptyFile_isRefusedByFstatBeforeAnyVerifier() throws {
        let answers = try importFile([], try coordinator())
        XCTAssertEqual(answers.map { $0.protocolError?.code }, [.fileTooSmall])
    }

    func testImport_whenVerifierIsNotRunning_answersUnavailableAndChangesNothing() throws {
        let coordinator = try coordinator(allowsFormatVersion1: true)
        let answers = try importFile(signedVersion1File, coordinator)
        XCTAssertEqual(answers.last?.protocolError?.code, .unavailable)
        XCTAssertFalse(coordinator.status().importRunning, "the import slot is released after a failure")
        XCTAssertNil(fileDigest(paths.releaseDatabase(ReleaseName.unknown)))
        XCTAssertEqual(stagingFiles, [])
    }

    // MARK: With the real verifier

    func testImport_throughTheVerifier_installsTheExactDatabase_withoutActivatingIt() throws {
        try startVerifier()
        let coordinator = try coordinator()
        let sqlite = try ImportFixture.databaseBytes()
        let answers = try importFile(StolCorpus.sign(sqlite, key: ImportFixture.key), coordinator)
        guard case .done(let done) = answers.last?.result else { return XCTFail("no done: \(answers.last.map { "\($0)" } ?? "")") }
        let stages = answers.compactMap { answer -> Stol_V1_ImportStage? in
            if case .progress(let progress) = answer.result { return progress.stage }
            return nil
        }
        XCTAssertEqual(stages.first, .received)
        XCTAssertEqual(stages.last, .installing)
        XCTAssertEqual(stages, stages.sorted { $0.rawValue < $1.rawValue }, "stages only move forward")
        XCTAssertEqual(fileDigest(paths.releaseDatabase(ReleaseName.unknown)), SHA256.hash(sqlite).hexString)
        XCTAssertTrue(done.status.referencePresent)
        XCTAssertFalse(done.status.referenceActive)
        XCTAssertFalse(done.status.importRunning, "the final answer describes the state after the import")
        XCTAssertEqual(done.status.importStage, .unspecified)
        XCTAssertEqual(done.status.trustProblems, [])
        XCTAssertFalse(done.status.formatVersion1Allowed)
        XCTAssertEqual(done.status.referenceSizeBytes, UInt64(sqlite.count))
        XCTAssertEqual(done.status.referenceSchemaVersion, UInt32(TaxonomySchema.currentVersion))
        XCTAssertEqual(done.status.referenceFingerprint, FileStat(path: paths.releaseDatabase(ReleaseName.unknown))?.fingerprint)
        XCTAssertNil(fileDigest(paths.activationState), "importing does not activate")
        XCTAssertEqual(stagingFiles, [])
        XCTAssertFalse(coordinator.status().importRunning)
    }

    func testImport_ofAnOlderBuild_isRefusedAsDowngrade_unlessAllowed() throws {
        try startVerifier()
        let coordinator = try coordinator()
        let newer = try ImportFixture.database(builtAt: "2026-06-01T00:00:00Z", in: directory)
        let older = try ImportFixture.database(builtAt: "2025-06-01T00:00:00Z", in: directory)
        guard case .done = try importFile(StolCorpus.sign(newer, key: ImportFixture.key), coordinator).last?.result else {
            return XCTFail("the newer build was not installed")
        }
        let refused = try importFile(StolCorpus.sign(older, key: ImportFixture.key), coordinator).last?.protocolError
        XCTAssertEqual(refused?.code, .downgradeRefused)
        XCTAssertEqual(refused?.details["installed_build_time"], "2026-06-01T00:00:00Z")
        XCTAssertEqual(refused?.details["offered_build_time"], "2025-06-01T00:00:00Z")
        XCTAssertEqual(fileDigest(paths.releaseDatabase(ReleaseName.unknown)), SHA256.hash(newer).hexString)
        XCTAssertEqual(stagingFiles, [])
        // The same build again is not a downgrade; an older one is with --allow-downgrade.
        guard case .done = try importFile(StolCorpus.sign(newer, key: ImportFixture.key), coordinator).last?.result else {
            return XCTFail("re-importing the same build failed")
        }
        let allowed = try importFile(StolCorpus.sign(older, key: ImportFixture.key), coordinator, allowDowngrade: true)
        guard case .done(let done) = allowed.last?.result else { return XCTFail("\(allowed.last.map { "\($0)" } ?? "")") }
        XCTAssertEqual(done.status.referenceBuildTime, "2025-06-01T00:00:00Z")
    }

    func testImport_whenTheClientHasGone_stopsAndInstallsNothing() throws {
        try startVerifier()
        let coordinator = try coordinator()
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        close(pair[1])  // the client's end: closed, as by Ctrl-C
        defer { close(pair[0]) }
        let answers = try importFile(StolCorpus.sign(try ImportFixture.databaseBytes(), key: ImportFixture.key), coordinator,
                                     connection: pair[0])
        XCTAssertFalse(answers.contains { if case .done = $0.result { true } else { false } })
        XCTAssertNil(fileDigest(paths.releaseDatabase(ReleaseName.unknown)))
        XCTAssertEqual(stagingFiles, [])
        XCTAssertFalse(coordinator.status().importRunning)
    }

    // MARK: With verifiers that misbehave

    /// Accepts one connection on `verify.sock`, reads the request, sends `frames`, closes.
    /// A verifier that answers `frames` to the first request, or (`readsRequest` false)
    /// closes the connection as soon as it has it, without reading a byte.
    private func scriptedVerifier(_ frames: [Stol_V1_VerifyResponse], readsRequest: Bool = true) throws {
        let source = try SocketActivation.socket(named: "verify", fallbackPath: paths.verifySocket, mode: 0o600, logger: quietLogger)
        guard case .listening(let listener, _) = source else { return XCTFail("no listening socket") }
        Thread {
            let connection = FrameSocket(descriptor: stol_accept(listener), maximumIncomingFrameBytes: 1 << 16,
                                         maximumOutgoingFrameBytes: 1 << 22)
            if readsRequest { _ = try? connection.receive(Stol_V1_VerifyRequest.self) }
            for var frame in frames {
                frame.id = 1
                try? connection.send(frame)
            }
            connection.close()
            close(listener)
        }.start()
    }

    private func chunk(_ bytes: [UInt8]) -> Stol_V1_VerifyResponse {
        var chunk = Stol_V1_VerifiedChunk()
        chunk.data = Data(bytes)
        var response = Stol_V1_VerifyResponse()
        response.chunk = chunk
        return response
    }

    private func done(bytes: UInt64, sha256: [UInt8], buildTime: String = "2026-01-01T00:00:00Z") -> Stol_V1_VerifyResponse {
        var done = Stol_V1_VerifyDone()
        done.schemaVersion = UInt32(TaxonomySchema.currentVersion)
        done.sqliteBytes = bytes
        done.sqliteSha256 = Data(sha256)
        done.buildTime = buildTime
        var response = Stol_V1_VerifyResponse()
        response.done = done
        return response
    }

    private func assertRefusedAndUnchanged(_ frames: [Stol_V1_VerifyResponse], code: Stol_V1_ErrorCode,
                                           importing stol: [UInt8] = signedVersion1File,
                                           file: StaticString = #filePath, line: UInt = #line) throws {
        let coordinator = try coordinator(allowsFormatVersion1: true)
        try Data("installed before".utf8).write(to: URL(fileURLWithPath: paths.releaseDatabase(ReleaseName.unknown)))
        try ActivationState(useReferenceDB: true).write(path: paths.activationState)
        let before = (fileDigest(paths.releaseDatabase(ReleaseName.unknown)), fileDigest(paths.activationState))
        try scriptedVerifier(frames)
        let answers = try importFile(stol, coordinator)
        XCTAssertEqual(answers.last?.protocolError?.code, code, "\(answers.last.map { "\($0)" } ?? "")", file: file, line: line)
        XCTAssertEqual(fileDigest(paths.releaseDatabase(ReleaseName.unknown)), before.0, file: file, line: line)
        XCTAssertEqual(fileDigest(paths.activationState), before.1, file: file, line: line)
        XCTAssertEqual(stagingFiles, [], file: file, line: line)
    }

    func testVerifierThatAnnouncesAnotherDigest_isNotBelieved() throws {
        let data = [UInt8](repeating: 5, count: 1000)
        try assertRefusedAndUnchanged([chunk(data), done(bytes: 1000, sha256: SHA256.hash([UInt8](repeating: 6, count: 1000)))],
                                      code: .internal)
    }

    func testVerifierThatAnnouncesAnotherSize_isNotBelieved() throws {
        let data = [UInt8](repeating: 5, count: 1000)
        try assertRefusedAndUnchanged([chunk(data), done(bytes: 999, sha256: SHA256.hash(data))], code: .internal)
    }

    func testVerifierThatDiesMidTransfer_changesNothing() throws {
        try assertRefusedAndUnchanged([chunk([UInt8](repeating: 5, count: 1000))], code: .internal)
    }

    /// A verifier killed as it takes the connection is a failed import (INTERNAL, the
    /// client's exit 1), not an unreachable verifier (UNAVAILABLE, exit 5: "try again"):
    /// the coordinator's request then meets a broken pipe, or the close when it reads.
    /// (Found by the random kills of `ImportFaultInjectionTests`, once in a fresh clone's
    /// run.) Twenty rounds, so that both orders of the race come up.
    func testAVerifierThatClosesAsItTakesTheConnection_isAFailedImport_notAnUnreachableVerifier() throws {
        let coordinator = try coordinator(allowsFormatVersion1: true)
        var codes: [Stol_V1_ErrorCode?] = []
        for _ in 0..<20 {
            let path = paths.verifySocket
            unlink(path)
            try scriptedVerifier([], readsRequest: false)
            codes.append(try importFile(signedVersion1File, coordinator).last?.protocolError?.code)
        }
        XCTAssertEqual(codes, Array(repeating: .internal, count: 20))
        XCTAssertNil(fileDigest(paths.releaseDatabase(ReleaseName.unknown)))
        XCTAssertEqual(stagingFiles, [])
    }

    // MARK: A verifier that lies (format version 2: the coordinator checks the signed content itself)

    /// The fake verifier sends a whole, valid taxonomy database — just not the one the
    /// file signs — with a `done` that truthfully describes what it sent.
    func testAVerifierThatSendsAnotherValidDatabase_isRefused_andNothingChanges() throws {
        let signed = try ImportFixture.databaseBytes()
        let other = try ImportFixture.database(builtAt: "2026-06-01T00:00:00Z", in: directory)
        XCTAssertNotEqual(SHA256.hash(other), SHA256.hash(signed))
        try assertRefusedAndUnchanged([chunk(other), done(bytes: UInt64(other.count), sha256: SHA256.hash(other))],
                                      code: .contentHashMismatch, importing: StolCorpus.sign(signed, key: ImportFixture.key))
    }

    /// The right bytes, with a `done` that lies about them: each lie is refused.
    func testAVerifierThatSendsTheRightBytesWithALyingDone_isRefused_andNothingChanges() throws {
        let signed = try ImportFixture.database(builtAt: "2026-01-01T00:00:00Z", in: directory)
        let file = StolCorpus.sign(signed, key: ImportFixture.key)
        let labels = StolCorpus.labels(of: signed)
        var right = done(bytes: UInt64(signed.count), sha256: SHA256.hash(signed))
        if labels != .unknown {
            right.done.provenance.release = labels.release
            right.done.provenance.idNamespace = labels.idNamespace
        }
        var wrongDigest = right, wrongSize = right, wrongRelease = right, wrongSchema = right, wrongBuildTime = right
        wrongDigest.done.sqliteSha256 = Data(SHA256.hash(Array("something else".utf8)))
        wrongSize.done.sqliteBytes += 1
        wrongRelease.done.provenance.release = "2099.1.1"
        wrongRelease.done.provenance.idNamespace = "ncbi-taxid"
        wrongSchema.done.schemaVersion = 2
        wrongBuildTime.done.buildTime = "2099-01-01T00:00:00Z"
        for lie in [wrongDigest, wrongSize, wrongRelease, wrongSchema, wrongBuildTime] {
            try assertRefusedAndUnchanged([chunk(signed), lie], code: .internal, importing: file)
            tearDown()
            try setUpWithError()
        }
        // The same bytes with an honest done install: the refusals above were the lies'.
        let coordinator = try coordinator()
        try scriptedVerifier([chunk(signed), right])
        let honest = try importFile(file, coordinator).last
        guard case .done = honest?.result else { return XCTFail("the honest answer was refused: \(honest.map { "\($0)" } ?? "")") }
        XCTAssertEqual(fileDigest(paths.releaseDatabase(labels.release)), SHA256.hash(signed).hexString)
    }

    /// A rollback through a lying verifier: the older build of an installed release, correctly
    /// signed, sent byte for byte with a `done` that claims a build time after the installed
    /// one. The coordinator reads the build time from the signed bytes themselves: the lie
    /// is refused, and the truth is a downgrade.
    func testAVerifierThatClaimsALaterBuildTime_installsNoOlderBuild() throws {
        let newer = try ImportFixture.database(builtAt: "2026-06-01T00:00:00Z", in: directory)
        let older = try ImportFixture.database(builtAt: "2025-06-01T00:00:00Z", in: directory)
        let olderFile = StolCorpus.sign(older, key: ImportFixture.key)
        let labels = StolCorpus.labels(of: older)
        let release = labels == .unknown ? ReleaseName.unknown : labels.release
        func verifierDone(buildTime: String) -> Stol_V1_VerifyResponse {
            var answer = done(bytes: UInt64(older.count), sha256: SHA256.hash(older), buildTime: buildTime)
            if labels != .unknown {
                answer.done.provenance.release = labels.release
                answer.done.provenance.idNamespace = labels.idNamespace
            }
            return answer
        }
        let coordinator = try coordinator()
        try scriptedVerifierInstalling(newer, builtAt: "2026-06-01T00:00:00Z", coordinator)
        let before = (fileDigest(paths.releaseDatabase(release)), fileDigest(paths.activationState))
        XCTAssertEqual(before.0, SHA256.hash(newer).hexString)
        for claimed in ["2099-01-01T00:00:00Z", "2026-06-01T00:00:00Z"] {
            try scriptedVerifier([chunk(older), verifierDone(buildTime: claimed)])
            let lie = try importFile(olderFile, coordinator).last?.protocolError
            XCTAssertEqual(lie?.code, .internal, "\(claimed): \(lie.map { "\($0)" } ?? "installed")")
            XCTAssertTrue(lie?.message.contains("2025-06-01T00:00:00Z") == true, lie?.message ?? "")
            XCTAssertEqual(fileDigest(paths.releaseDatabase(release)), before.0, claimed)
            XCTAssertEqual(stagingFiles, [], claimed)
        }
        try scriptedVerifier([chunk(older), verifierDone(buildTime: "2025-06-01T00:00:00Z")])
        let truth = try importFile(olderFile, coordinator).last?.protocolError
        XCTAssertEqual(truth?.code, .downgradeRefused)
        XCTAssertEqual(truth?.details["offered_build_time"], "2025-06-01T00:00:00Z")
        XCTAssertEqual(fileDigest(paths.releaseDatabase(release)), before.0)
        XCTAssertEqual(fileDigest(paths.activationState), before.1)
    }

    /// Installs `sqlite` (signed, version 2) through a scripted verifier that tells the truth.
    private func scriptedVerifierInstalling(_ sqlite: [UInt8], builtAt: String, _ coordinator: ImportCoordinator) throws {
        var answer = done(bytes: UInt64(sqlite.count), sha256: SHA256.hash(sqlite), buildTime: builtAt)
        let labels = StolCorpus.labels(of: sqlite)
        if labels != .unknown {
            answer.done.provenance.release = labels.release
            answer.done.provenance.idNamespace = labels.idNamespace
        }
        try scriptedVerifier([chunk(sqlite), answer])
        let answers = try importFile(StolCorpus.sign(sqlite, key: ImportFixture.key), coordinator)
        guard case .done = answers.last?.result else { return XCTFail("not installed: \(answers.last.map { "\($0)" } ?? "")") }
    }

    /// A correctly signed version 1 file signs no content the coordinator could check what
    /// a verifier produces against: refused before any verifier is asked, unless allowed.
    func testAVersion1File_isRefusedBeforeAnyVerifier_unlessTheOperatorAllowsIt() throws {
        let sqlite = try ImportFixture.databaseBytes()
        let file = StolCorpus.signVersion1(sqlite, key: ImportFixture.key)
        let strict = try coordinator()
        // A verifier stands ready with a database of its choosing: it is never asked.
        try scriptedVerifier([chunk(sqlite), done(bytes: UInt64(sqlite.count), sha256: SHA256.hash(sqlite))])
        let refused = try importFile(file, strict)
        XCTAssertEqual(refused.last?.protocolError?.code, .formatVersionNotAllowed)
        XCTAssertEqual(refused.last?.protocolError?.details["format_version"], "1")
        XCTAssertTrue(refused.last?.protocolError?.message.contains("STOL_ALLOW_FORMAT_1") == true)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: paths.releasesDirectory), [])
        XCTAssertEqual(stagingFiles, [])
        // The verifier's socket still holds the connection nobody made: connect to use it up.
        _ = try? FrameSocket.connect(path: paths.verifySocket, maximumIncomingFrameBytes: 1 << 16, maximumOutgoingFrameBytes: 1 << 16)
        tearDown()
        try setUpWithError()
        try startVerifier()
        let allowing = try coordinator(allowsFormatVersion1: true)
        guard case .done(let done) = try importFile(file, allowing).last?.result else { return XCTFail("version 1 allowed, not installed") }
        XCTAssertEqual(done.formatVersion, 1)
    }

    /// A chunk over the protocol's 1 MiB is refused, though a frame could carry it.
    func testAVerifierThatSendsAChunkOverOneMebibyte_isRefused() throws {
        let data = [UInt8](repeating: 5, count: ImportLimits.chunkBytes + 1)
        try assertRefusedAndUnchanged([chunk(data), done(bytes: UInt64(data.count), sha256: SHA256.hash(data))], code: .internal)
    }

    /// A fake verifier that sends more than the header signs is cut off at the signed size.
    func testAVerifierThatSendsMoreThanTheSignedSize_isCutOff() throws {
        let signed = try ImportFixture.databaseBytes()
        try assertRefusedAndUnchanged([chunk(signed), chunk([1, 2, 3])], code: .contentHashMismatch,
                                      importing: StolCorpus.sign(signed, key: ImportFixture.key))
    }

    func testVerifierError_isRelayedUnchanged() throws {
        try assertRefusedAndUnchanged([Stol_V1_VerifyResponse(requestID: 1, error: ProtocolError(.signatureInvalid, "bad"))],
                                      code: .signatureInvalid)
    }

    func testImport_whileAnotherImportRuns_isRefusedBusy() throws {
        // A verifier that accepts the connection and then says nothing keeps the first import running.
        let listener = try SocketActivation.socket(named: "verify", fallbackPath: paths.verifySocket, mode: 0o600,
                                                   logger: quietLogger)
        guard case .listening(let listenFD, _) = listener else { return XCTFail("expected a listening socket") }
        defer { close(listenFD) }
        let coordinator = try coordinator(allowsFormatVersion1: true)
        let first = try descriptor(for: signedVersion1File, in: directory, name: "a.stol")
        let second = try descriptor(for: signedVersion1File, in: directory, name: "b.stol")
        let started = expectation(description: "first import reached the verifier")
        let firstDone = expectation(description: "first import finished")
        let firstRequest = importRequest()
        Thread {
            var sawReceived = false
            coordinator.respond(to: firstRequest, context: context(uid: 0, fd: first)) { response in
                if case .progress = response.result, !sawReceived { sawReceived = true; started.fulfill() }
            }
            firstDone.fulfill()
        }.start()
        wait(for: [started], timeout: 10)
        let connection = accept(listenFD, nil, nil)  // the verifier connection of the first import
        XCTAssertGreaterThanOrEqual(connection, 0)
        XCTAssertTrue(coordinator.status().importRunning)
        XCTAssertEqual(coordinator.status().importStage, .received)
        let answers = collect(coordinator, importRequest(), context(uid: 0, fd: second))
        XCTAssertEqual(answers.map { $0.protocolError?.code }, [.busy])
        close(connection)  // the verifier dies: the first import fails and frees the slot
        wait(for: [firstDone], timeout: 10)
        XCTAssertFalse(coordinator.status().importRunning)
    }

    // MARK: The state files

    func testStartup_removesWhatAnInterruptedImportLeft_andNothingElse() throws {
        try FileManager.default.createDirectory(atPath: paths.stagingDirectory, withIntermediateDirectories: true)
        let stale = paths.stagingDirectory + "/stol_import_1234.sqlite"
        let staleState = paths.databasesDirectory + "/.activation.json.tmp-AbCdEf"
        let other = paths.stagingDirectory + "/keep.txt"
        for path in [stale, staleState, other] { XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data([1]))) }
        _ = try coordinator()
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        XCTAssertFalse(FileManager.default.fileExists(atPath: staleState))
        XCTAssertTrue(FileManager.default.fileExists(atPath: other))
    }

    func testActivate_withoutAReference_isNotFound_andWritesNothing() throws {
        let answers = collect(try coordinator(), request(.activate(.init())), context(uid: 0))
        XCTAssertEqual(answers.last?.protocolError?.code, .notFound)
        XCTAssertNil(fileDigest(paths.activationState))
    }

    func testActivate_rechecksTheSchemaVersion_andRefusesOneTooNew() throws {
        let coordinator = try coordinator()
        try FileManager.default.copyItem(atPath: try ImportFixture.databasePath(), toPath: paths.releaseDatabase(ReleaseName.unknown))
        guard case .done(let done) = collect(coordinator, request(.activate(.init())), context(uid: 0)).last?.result else {
            return XCTFail("activation failed")
        }
        XCTAssertTrue(done.status.referenceActive)
        XCTAssertTrue(ActivationState.read(path: paths.activationState).useReferenceDB)

        _ = collect(coordinator, request(.deactivate(.init())), context(uid: 0))
        let queue = try DatabaseQueueForTests(path: paths.releaseDatabase(ReleaseName.unknown))
        try queue.execute("UPDATE schema_version SET version = 99")
        let before = fileDigest(paths.activationState)
        let answers = collect(coordinator, request(.activate(.init())), context(uid: 0))
        XCTAssertEqual(answers.last?.protocolError?.code, .incompatibleSchema)
        XCTAssertEqual(fileDigest(paths.activationState), before, "a refused activation changes nothing")
    }

    /// The safety invariants of a reference database's deletion: the bundled database is
    /// never touched, the reference is inactive as soon as the call returns, and a new
    /// import works afterwards.
    func testDelete_deactivatesAndRemoves_neverTouchesTheBundledDatabase_andReimportWorks() throws {
        try startVerifier()
        let coordinator = try coordinator()
        let bundledBefore = (fileDigest(paths.bundledDatabase), FileStat(path: paths.bundledDatabase))
        guard case .done = try importFile(StolCorpus.sign(try ImportFixture.databaseBytes(), key: ImportFixture.key),
                                          coordinator).last?.result else { return XCTFail("import failed") }
        _ = collect(coordinator, request(.activate(.init())), context(uid: 0))
        XCTAssertTrue(coordinator.status().referenceActive)

        guard case .done(let deleted) = collect(coordinator, request(.deleteReference(.init())), context(uid: 0)).last?.result else {
            return XCTFail("delete failed")
        }
        XCTAssertFalse(deleted.status.referencePresent)
        XCTAssertFalse(deleted.status.referenceActive)
        XCTAssertFalse(ActivationState.read(path: paths.activationState).useReferenceDB, "inactive when the call returns")
        XCTAssertNil(fileDigest(paths.releaseDatabase(ReleaseName.unknown)))
        XCTAssertEqual(fileDigest(paths.bundledDatabase), bundledBefore.0)
        XCTAssertEqual(FileStat(path: paths.bundledDatabase), bundledBefore.1, "not even rewritten with the same bytes")

        // Deleting again is harmless; deactivating never touches the bundled database either.
        guard case .done = collect(coordinator, request(.deleteReference(.init())), context(uid: 0)).last?.result else {
            return XCTFail("a second delete failed")
        }
        _ = collect(coordinator, request(.deactivate(.init())), context(uid: 0))
        XCTAssertEqual(FileStat(path: paths.bundledDatabase), bundledBefore.1)

        guard case .done = try importFile(StolCorpus.sign(try ImportFixture.databaseBytes(), key: ImportFixture.key),
                                          coordinator).last?.result else { return XCTFail("re-import after delete failed") }
        XCTAssertTrue(coordinator.status().referencePresent)
    }
}

/// A writable GRDB connection for tests that edit a database in place.
struct DatabaseQueueForTests {
    let queue: GRDB.DatabaseQueue
    init(path: String) throws { queue = try GRDB.DatabaseQueue(path: path) }
    func execute(_ sql: String) throws { try queue.write { try $0.execute(sql: sql) } }
}
