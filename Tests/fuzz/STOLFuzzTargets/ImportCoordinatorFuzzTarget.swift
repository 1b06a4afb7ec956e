import Foundation
import Glibc
import STOLFormat
import STOLImport
import STOLModel
import STOLProtocol
import STOLServer
import STOLTransport
import STOLTestFixtures

/// `stol-importd`'s request handling (``ImportCoordinator``) on a real state
/// directory holding an installed reference database, for an administrator, fed
/// what one could send on one connection (``RequestStream``). An `import_file`
/// request carries its own frame body as the file; no verifier listens, so an
/// import must end in a typed error (UNAVAILABLE, or FILE_TOO_SMALL for an empty
/// file) after at most its `received` progress — never a hang or a crash.
///
/// Each input starts from the reference installed and not active, and every
/// answer is checked against that state as the requests change it: progress
/// frames, then exactly one final frame of the kind the operation ends with;
/// status and `done` report what is installed and active; activating without a
/// reference is NOT_FOUND; after each request no import is running and the
/// staging directory is empty. Nothing is answered INTERNAL.
public final class ImportCoordinatorFuzzTarget: FuzzTarget {
    public static let name = "fuzz-import"
    public static let inputIsRequestStream = true

    let coordinator: ImportCoordinator
    let paths: RuntimePaths
    let pristine: String
    static let adminGroup: UInt32 = 4321
    static let context = RequestContext(peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000, groups: [adminGroup]),
                                        logger: quietLogger)
    static let allowedErrors = Set<Stol_V1_ErrorCode>([.invalidRequest, .unimplemented, .notFound, .unavailable, .fileTooSmall,
                                                       .releaseNotInstalled]).union(headerErrors)
    /// What the coordinator's own checks of a file (its header, at most 288 bytes, and the
    /// payload's checksum) may answer: it trusts no key here, so no file gets past them to
    /// the (absent) verifier.
    static let headerErrors: Set<Stol_V1_ErrorCode> = [.fileTooSmall, .notAStolFile, .checksumMismatch, .signatureInvalid,
                                                       .unknownKey, .keyRevoked, .keyExpired, .databaseCorrupt]

    init(coordinator: ImportCoordinator, paths: RuntimePaths, pristine: String) {
        self.coordinator = coordinator
        self.paths = paths
        self.pristine = pristine
    }

    public static func make() throws -> ImportCoordinatorFuzzTarget {
        let directory = try FuzzScratch.makeDirectory("stolfuzz-import")
        let paths = RuntimePaths(runtimeDirectory: directory + "/run", stateDirectory: directory + "/state",
                                 bundledDatabase: directory + "/bundled.sqlite")
        try FileManager.default.createDirectory(atPath: paths.runtimeDirectory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: paths.stateDirectory, withIntermediateDirectories: true)
        let pristine = paths.stateDirectory + "/pristine-reference.sqlite"
        try FixtureDatabase.build(at: pristine)
        let coordinator = ImportCoordinator(paths: paths, configuration: .init(adminGroupID: adminGroup, trustedKeys: { .success(TrustedKeys()) }))
        try coordinator.store.prepare(logger: quietLogger)
        return ImportCoordinatorFuzzTarget(coordinator: coordinator, paths: paths, pristine: pristine)
    }

    /// Installed and not active, as every input starts.
    struct State {
        var present = true
        var active = false
    }

    public func run(_ input: [UInt8]) throws(FuzzFailure) {
        unlink(paths.activationState)
        // The fixture has no provenance: it installs as the release "unknown".
        let installed = paths.releaseDatabase(ReleaseName.unknown)
        if access(installed, F_OK) != 0 {
            try expect(link(pristine, installed) == 0, "cannot reinstall the reference: \(String(cString: strerror(errno)))")
        }
        var state = State()
        for item in RequestStream<Stol_V1_ImportRequest>.cut(input) {
            switch item {
            case .framingError(let error):
                try ResponseCheck.framingError(error, as: Stol_V1_ImportResponse.self)
            case .request(let request, let body):
                try answer(request, file: body, state: &state)
            }
        }
    }

    private func answer(_ request: Stol_V1_ImportRequest, file: [UInt8], state: inout State) throws(FuzzFailure) {
        let what = RequestStream<Stol_V1_ImportRequest>.describe(request, body: request.body)
        var context = Self.context
        if case .importFile = request.body {
            context = RequestContext(peer: context.peer, logger: context.logger, receivedFileDescriptor: try FuzzFile.descriptor(for: file, in: paths.runtimeDirectory))
        }
        // As BlockingFramedServer sends them: every frame stamped with the request's id.
        var frames: [Stol_V1_ImportResponse] = []
        coordinator.respond(to: request, context: context) { response in
            var response = response
            response.id = request.id
            frames.append(response)
        }
        guard let final = frames.last else { throw FuzzFailure("\(what): no answer") }
        for frame in frames {
            try ResponseCheck.wellFormed(frame, requestID: request.id, allowed: Self.allowedErrors, what)
        }
        for frame in frames.dropLast() {
            guard case .progress(let progress) = frame.result else { throw FuzzFailure("\(what): \(frame) before the final frame") }
            try expect(progress.stage == .received && progress.fraction == 1 && progress.bytesDone == UInt64(file.count),
                       "\(what): progress \(progress) without a verifier")
        }
        switch (request.body, final.result) {
        case (nil, .error(let error)):
            try expect(error.code == (request.unknownFields.data.isEmpty ? .invalidRequest : .unimplemented),
                       "\(what): answered \(error.code)")
        case (.status, .status(let status)):
            try Self.check(status, state, what)
        case (.activate(let body), .error(let error)) where !Self.namesInstalled(body.release):
            try expect(error.code == .releaseNotInstalled, "\(what): activating another release answered \(error.code)")
        case (.activate, .done(let done)) where state.present:
            state.active = true
            try Self.check(done.status, state, what)
        case (.activate(let body), .error(let error)) where !state.present:
            try expect(error.code == (body.release.isEmpty ? .notFound : .releaseNotInstalled),
                       "\(what): activating without a reference answered \(error.code)")
        case (.deactivate, .done(let done)):
            state.active = false
            try Self.check(done.status, state, what)
        case (.deleteReference(let body), .error(let error)) where !Self.namesInstalled(body.release) || !state.present:
            try expect(error.code == .releaseNotInstalled, "\(what): deleting another release answered \(error.code)")
            try Self.check(coordinator.status(), state, what)
        case (.deleteReference, .done(let done)):
            state = State(present: false, active: false)
            try Self.check(done.status, state, what)
        case (.importFile, .error(let error)):
            try expect(file.isEmpty ? error.code == .fileTooSmall : Self.headerErrors.contains(error.code), "\(what): answered \(error.code)")
            try expect(frames.count == (file.isEmpty ? 1 : 2), "\(what): \(frames.count) frames")
        default:
            throw FuzzFailure("\(what): ended with \(final)")
        }
        try expect(!coordinator.status().importRunning, "\(what): an import still runs after the answer")
        let staged = (try? FileManager.default.contentsOfDirectory(atPath: paths.stagingDirectory)) ?? ["?"]
        try expect(staged.isEmpty, "\(what): left \(staged) in the staging directory")
    }

    /// Whether a request's release names the installed fixture (empty names the only one).
    static func namesInstalled(_ release: String) -> Bool { release.isEmpty || release == ReleaseName.unknown }

    static func check(_ status: Stol_V1_ImportStatus, _ state: State, _ what: String) throws(FuzzFailure) {
        try expect(status.referencePresent == state.present && status.referenceActive == (state.present && state.active),
                   "\(what): status present \(status.referencePresent) active \(status.referenceActive), expected \(state)")
        try expect(!status.importRunning, "\(what): status says an import runs")
        if state.present {
            try expect(status.referenceSchemaVersion == UInt32(TaxonomySchema.currentVersion) && !status.referenceBuildTime.isEmpty, "\(what): status without the reference's facts")
        }
    }

    public static func generatedSeeds() throws -> [(name: String, bytes: [UInt8])] {
        typealias Request = Stol_V1_ImportRequest
        var seeds = try FuzzSeeds.requestVectors(socket: "import.sock")
        seeds.append(("seed-every-operation", FuzzSeeds.connection(Request.self, [
            .with { $0.status = .init() },
            .with { $0.activate = .init() },
            .with { $0.status = .init() },
            .with { $0.deactivate = .init() },
            .with { $0.importFile = .with { $0.allowDowngrade = true } },
            .with { $0.deleteReference = .init() },
            .with { $0.activate = .init() },
            .with { $0.status = .init() }
        ])))
        seeds.append(("seed-unknown-operation", FuzzSeeds.unknownOperation(Request.self)))
        return seeds
    }
}
