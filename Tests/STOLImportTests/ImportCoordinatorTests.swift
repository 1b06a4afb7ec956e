import Glibc
import STOLImport
import STOLProtocol
import STOLRuntime
import XCTest

final class ImportCoordinatorTests: XCTestCase {
    private var directory: String!
    private var paths: RuntimePaths!

    override func setUpWithError() throws {
        directory = try makeDirectory()
        paths = RuntimePaths(runtimeDirectory: directory + "/run", stateDirectory: directory + "/state",
                             bundledDatabase: directory + "/bundled.sqlite")
        try FileManager.default.createDirectory(atPath: paths.stagingDirectory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: paths.runtimeDirectory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    private func statusRequest() -> Stol_V1_ImportRequest {
        var request = Stol_V1_ImportRequest()
        request.id = 11
        request.status = Stol_V1_ImportStatusRequest()
        return request
    }

    func testStatus_whenCallerIsNeitherRootNorAdmin_isPermissionDenied() {
        let coordinator = ImportCoordinator(paths: paths, adminGroupID: 4242)
        let answers = collect(coordinator, statusRequest(), context(uid: 1000, gid: 1000, groups: [27, 100]))
        XCTAssertEqual(answers.map { $0.protocolError?.code }, [.permissionDenied])
    }

    func testStatus_whenCallerIsInAdminGroup_orRoot_isAnswered() {
        let coordinator = ImportCoordinator(paths: paths, adminGroupID: 4242)
        for caller in [context(uid: 1000, groups: [4242]), context(uid: 1000, gid: 4242), context(uid: 0)] {
            let answers = collect(coordinator, statusRequest(), caller)
            guard case .status = answers.first?.result else { return XCTFail("expected status, got \(answers)") }
        }
    }

    func testStatus_whenNoAdminGroupExists_onlyRootIsAdmin() {
        let coordinator = ImportCoordinator(paths: paths, adminGroupID: nil)
        XCTAssertEqual(collect(coordinator, statusRequest(), context(uid: 1000, gid: 0)).first?.protocolError?.code,
                       .permissionDenied)
    }

    func testStatus_reflectsTheReferenceFileAndTheActivationState() throws {
        let coordinator = ImportCoordinator(paths: paths, adminGroupID: nil)
        XCTAssertFalse(coordinator.status().referencePresent)
        try Data(repeating: 1, count: 1234).write(to: URL(fileURLWithPath: paths.referenceDatabase))
        XCTAssertTrue(coordinator.status().referencePresent)
        XCTAssertEqual(coordinator.status().referenceSizeBytes, 1234)
        XCTAssertFalse(coordinator.status().referenceActive)
        try ActivationState(useReferenceDB: true).write(path: paths.activationState)
        XCTAssertTrue(coordinator.status().referenceActive)
        try FileManager.default.removeItem(atPath: paths.referenceDatabase)
        XCTAssertFalse(coordinator.status().referenceActive, "active needs the file to be present")
    }

    func testImport_whenVerifierIsNotRunning_answersUnavailableAndChangesNothing() throws {
        let coordinator = ImportCoordinator(paths: paths, adminGroupID: nil)
        var request = Stol_V1_ImportRequest()
        request.importFile = Stol_V1_ImportFileRequest()
        let fd = try descriptor(for: stolMagic + [UInt8](repeating: 0, count: 200), in: directory)
        let answers = collect(coordinator, request, context(uid: 0, fd: fd))
        XCTAssertEqual(answers.last?.protocolError?.code, .unavailable)
        XCTAssertFalse(coordinator.status().importRunning, "the import slot is released after a failure")
        XCTAssertFalse(FileManager.default.fileExists(atPath: paths.referenceDatabase))
    }

    func testImport_withoutDescriptor_isInvalidRequest() {
        let coordinator = ImportCoordinator(paths: paths, adminGroupID: nil)
        var request = Stol_V1_ImportRequest()
        request.importFile = Stol_V1_ImportFileRequest()
        XCTAssertEqual(collect(coordinator, request, context(uid: 0)).last?.protocolError?.code, .invalidRequest)
    }

    func testImport_whileAnotherImportRuns_isRefusedBusy() throws {
        // A verifier that accepts the connection and then says nothing keeps the first import running.
        let listener = try SocketActivation.socket(named: "verify", fallbackPath: paths.verifySocket, mode: 0o600,
                                                   logger: .init(label: "test"))
        guard case .listening(let listenFD, _) = listener else { return XCTFail("expected a listening socket") }
        defer { close(listenFD) }
        let coordinator = ImportCoordinator(paths: paths, adminGroupID: nil)
        var request = Stol_V1_ImportRequest()
        request.importFile = Stol_V1_ImportFileRequest()
        let first = try descriptor(for: stolMagic, in: directory, name: "a.stol")
        let second = try descriptor(for: stolMagic, in: directory, name: "b.stol")
        let started = expectation(description: "first import reached the verifier")
        let firstDone = expectation(description: "first import finished")
        let firstRequest = request
        let thread = Thread {
            var sawReceived = false
            coordinator.respond(to: firstRequest, context: context(uid: 0, fd: first)) { response in
                if case .progress = response.result, !sawReceived { sawReceived = true; started.fulfill() }
            }
            firstDone.fulfill()
        }
        thread.start()
        wait(for: [started], timeout: 10)
        let connection = accept(listenFD, nil, nil)  // the verifier connection of the first import
        XCTAssertGreaterThanOrEqual(connection, 0)
        XCTAssertTrue(coordinator.status().importRunning)
        let answers = collect(coordinator, request, context(uid: 0, fd: second))
        XCTAssertEqual(answers.map { $0.protocolError?.code }, [.busy])
        close(connection)  // the verifier dies: the first import fails and frees the slot
        wait(for: [firstDone], timeout: 10)
        XCTAssertFalse(coordinator.status().importRunning)
    }

    func testStartup_removesStaleStagingFilesOnly() throws {
        let stale = paths.stagingDirectory + "/stol_import_1234.sqlite"
        let other = paths.stagingDirectory + "/keep.txt"
        XCTAssertTrue(FileManager.default.createFile(atPath: stale, contents: Data([1])))
        XCTAssertTrue(FileManager.default.createFile(atPath: other, contents: Data([2])))
        ImportCoordinator(paths: paths, adminGroupID: nil).removeStaleStagingFiles(logger: .init(label: "test"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale))
        XCTAssertTrue(FileManager.default.fileExists(atPath: other))
    }

    func testActivateDeactivateDelete_areDeclaredButUnimplemented_andChangeNothing() throws {
        let coordinator = ImportCoordinator(paths: paths, adminGroupID: nil)
        for body in [Stol_V1_ImportRequest.OneOf_Body.activate(.init()), .deactivate(.init()), .deleteReference(.init())] {
            var request = Stol_V1_ImportRequest()
            request.body = body
            XCTAssertEqual(collect(coordinator, request, context(uid: 0)).last?.protocolError?.code, .unimplemented)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: paths.activationState))
    }
}
